"""The Gymnasium environments: the checker passes, reset(seed) is the CLI's run, the example runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import oncallsim.gym
from oncallsim.gym import ENV_IDS, OBSERVATION

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("env_id", sorted(ENV_IDS))
def test_env_checker_passes(env_id: str) -> None:
    env = gymnasium.make(env_id, disable_env_checker=True)
    check_env(env.unwrapped, skip_render_check=True)
    assert env.observation_space.shape == (len(OBSERVATION),)


@pytest.mark.parametrize("engine", ["minute", "request"])
def test_reset_seed_reproduces_the_cli_run(engine: str) -> None:
    env = gymnasium.make("oncallsim/Surge-v0", engine=engine)
    obs, info = env.reset(seed=11)
    assert info["seed"] == 11
    records = []
    done = False
    while not done:
        obs, _reward, terminated, truncated, info = env.step(env.unwrapped.hold())
        records.append(info["record"])
        done = terminated or truncated
        assert env.observation_space.contains(obs)
    cli = subprocess.run(
        [sys.executable, "-m", "oncallsim", "run", "surge", "--seed", "11", "--format", "jsonl", "--engine", engine],
        capture_output=True,
        text=True,
        check=True,
    )
    assert [json.loads(line) for line in cli.stdout.splitlines()] == records


def test_actions_reach_the_simulation_and_reward_prices_the_budget() -> None:
    env = gymnasium.make("oncallsim/BadDeploy-v0")
    env.reset(seed=1)
    core = env.unwrapped
    action = core.action_from([("floor", 14), ("rollback", None)])
    _, reward, _, _, info = env.step(action)
    assert info["record"]["floor"] == 14 and info["record"]["rollback_active"]
    assert reward == pytest.approx(-info["record"]["cost_per_hour"] / 60.0)  # no errors yet: only the bill
    assert core.sim.actions[0].control == "floor"


def test_random_actions_are_valid_controls() -> None:
    env = gymnasium.make("oncallsim/CacheFlush-v0")
    env.reset(seed=2)
    env.action_space.seed(2)
    for _ in range(30):
        obs, *_ = env.step(env.action_space.sample())
        assert np.all(np.isfinite(obs))


def test_example_prints_both_returns() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "gym_returns.py")], capture_output=True, text=True, check=True
    )
    lines = done.stdout.splitlines()
    assert len(lines) == 2 and "random" in lines[0] and "textbook" in lines[1]
    random_return = float(lines[0].rsplit(" ", 1)[1])
    textbook_return = float(lines[1].rsplit(" ", 1)[1])
    assert textbook_return > random_return


def test_module_exports() -> None:
    """One env per built-in scenario, derived from the registry (a new scenario gets one without an edit here)."""
    from oncallsim.scenarios import builtin_scenarios

    assert set(oncallsim.gym.ENV_IDS.values()) == set(builtin_scenarios())
    assert set(oncallsim.gym.ENV_IDS.values()) >= {
        "tutorial",
        "free-play",
        "bad-deploy",
        "surge",
        "cache-flush",
        "slow-instance",
        "zone-outage",
        "flash-crowd",
    }
    assert oncallsim.gym.env_id("free-play") == "oncallsim/FreePlay-v0"


def test_vector_env_runs_each_seed_as_the_single_env() -> None:
    from oncallsim.gym.vector import OncallVectorEnv

    n, seed = 3, 40
    venv = OncallVectorEnv(n, "cache-flush")
    singles = [gymnasium.make("oncallsim/CacheFlush-v0", disable_env_checker=True) for _ in range(n)]
    obs, info = venv.reset(seed=seed)
    assert list(info["seed"]) == [seed, seed + 1, seed + 2]
    for i, env in enumerate(singles):
        single_obs, _ = env.reset(seed=seed + i)
        assert np.array_equal(obs[i], single_obs)
    venv.action_space.seed(5)
    for _ in range(40):
        action = venv.action_space.sample()
        obs, reward, terminated, _, _ = venv.step(action)
        for i, env in enumerate(singles):
            one = {name: value[i] for name, value in action.items()}
            single_obs, single_reward, single_done, _, _ = env.step(one)
            assert np.array_equal(obs[i], single_obs) and reward[i] == single_reward
            assert terminated[i] == single_done
    assert venv.observation_space.shape == (n, len(OBSERVATION))
    assert venv.batch is not None
    for i, env in enumerate(singles):  # the same actions logged, in the same order (settings, then buttons)
        assert venv.batch.actions[i] == env.unwrapped.sim.actions  # type: ignore[attr-defined]
        assert np.array_equal(venv.batch.state[i], env.unwrapped.sim.state.vec)  # type: ignore[attr-defined]


def test_vector_env_starts_new_runs_after_the_end() -> None:
    from oncallsim.gym.vector import OncallVectorEnv

    venv = OncallVectorEnv(2, "bad-deploy", overrides=None)
    venv.reset(seed=7)
    assert venv.batch is not None
    hold = {name: np.stack([space.sample()] * 2) for name, space in venv.single_action_space.items()}
    for name in hold:
        hold[name] = (
            np.asarray([venv.batch.setting(name)[0]] * 2) if name in venv.batch.opening.__slots__ else 0 * hold[name]
        )
    done = np.zeros(2, dtype=bool)
    steps = 0
    while not done.all():
        _, _, done, _, _ = venv.step(hold)
        steps += 1
    assert steps == venv.batch.length
    _, reward, done, _, info = venv.step(hold)
    assert not done.any() and (reward == 0).all() and list(info["seed"]) == [9, 10]
    with pytest.raises(ValueError, match="num_envs"):
        OncallVectorEnv(0)


def test_make_vec_uses_the_batch_engine() -> None:
    venv = gymnasium.make_vec("oncallsim/Surge-v0", num_envs=4, vectorization_mode="vector_entry_point")
    obs, _ = venv.reset(seed=1)
    assert obs.shape == (4, len(OBSERVATION)) and type(venv.unwrapped).__name__ == "OncallVectorEnv"


def test_an_action_the_run_cannot_take_is_a_no_op_with_its_reason() -> None:
    env = gymnasium.make("oncallsim/FlashCrowd-v0", disable_env_checker=True).unwrapped
    env.reset(seed=3)
    action = env.hold()
    action["queue_discipline"] = 2  # adaptive-lifo, while the queues have no limit
    action["eject"] = 40  # instance 39: not serving
    _, _, _, _, info = env.step(action)
    assert len(info["refused"]) == 2 and "queue_limit first" in info["refused"][0]
    assert env.sim.state.controls.queue_discipline == "fifo"


def test_a_chain_of_services_is_an_environment_with_its_services_controls() -> None:
    """On a chain (the cascade lesson) the actions are what reach a chain — the fleet, the edge's shedding,
    deadline propagation — and each service's settings (not the entry's own fleet or deadline); the env checker
    passes; the lesson's fix taken as an action plays as the same run made through Simulation; a setting inside
    its Box but outside what the service takes (a timeout of 0.5 ms) is refused, not rounded to "none"."""
    from oncallsim import Simulation
    from oncallsim.gym.env import OncallEnv

    env = OncallEnv("cascade")
    names = set(env.action_space.spaces)
    assert {"floor", "shed_share", "deadline_propagation", "recs.timeout_ms", "catalog.retries"} <= names
    assert not {"ttl_s", "warmup", "rollback", "limiter", "api.instances", "api.timeout_ms"} & names
    check_env(env, skip_render_check=True)
    env.reset(seed=204)
    for minute in range(14):
        action = env.action_from([("recs.timeout_ms", 150.0)] if minute == 10 else [])
        _, _, _, _, info = env.step(action)
        assert info["refused"] == []
    assert env.sim is not None
    made = Simulation("cascade", seed=204)
    for minute in range(14):
        made.step([("recs.timeout_ms", 150.0)] if minute == 10 else [])
    assert [r.to_dict() for r in env.sim.timeline] == [r.to_dict() for r in made.timeline]
    _, _, _, _, info = env.step(env.action_from([("recs.timeout_ms", 0.5)]))
    assert len(info["refused"]) == 1 and "recs.timeout_ms" in info["refused"][0]

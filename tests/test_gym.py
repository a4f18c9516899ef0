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


def test_reset_seed_reproduces_the_cli_run() -> None:
    env = gymnasium.make("oncallsim/Surge-v0")
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
        [sys.executable, "-m", "oncallsim", "run", "surge", "--seed", "11", "--format", "jsonl"],
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
    assert set(oncallsim.gym.ENV_IDS.values()) == {"free-play", "bad-deploy", "surge", "cache-flush"}

"""The batch engine gives the scalar engine's records, field by field, minute by minute."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import pytest

from oncallsim import Action, Simulation
from oncallsim.batch.engine import BatchRun
from oncallsim.batch.policies import VectorTextbook, vectorized
from oncallsim.batch.runs import run_seeds
from oncallsim.debrief import incident_start, recovery_minute, run_outcome
from oncallsim.policies import load_policy

SCENARIOS = ["free-play", "bad-deploy", "surge", "cache-flush"]
SEEDS = [0, 1, 2, 7, 42, 1234]


def assert_same(expected: Iterable[Any], got: Iterable[Any], where: str) -> None:
    for a, b in zip(expected, got, strict=True):
        for name in a._fields:
            x, y = getattr(a, name), getattr(b, name)
            if isinstance(x, float):
                assert x == y or math.isclose(x, y, rel_tol=1e-9), f"{where} minute {a.minute} {name}: {x} != {y}"
            else:
                assert x == y, f"{where} minute {a.minute} {name}: {x!r} != {y!r}"


def test_batch_generators_advance_as_the_scalar_ones() -> None:
    """Each run of a batch draws from its own mulberry32, exactly as a scalar run does (same states after)."""
    seeds = [0, 1, 42, 2**32 - 1, 99991]
    batch = BatchRun("surge", seeds, minutes=100)
    batch.run()
    for i, seed in enumerate(seeds):
        sim = Simulation("surge", seed=seed, minutes=100)
        sim.run()
        assert int(batch.rng_states[i]) == sim.rng.get_state()
        assert sim.timeline == batch.records(i)  # bit for bit, every field


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("policy", ["hands-off", "textbook"])
def test_batch_equals_scalar_for_every_field(scenario: str, policy: str) -> None:
    minutes = 360 if scenario == "free-play" else None
    batch = BatchRun(scenario, SEEDS, minutes=minutes)
    vector = vectorized(policy)
    batch.run(policy=vector)
    for i, seed in enumerate(SEEDS):
        sim = Simulation(scenario, seed=seed, minutes=minutes)
        sim.run(policy=load_policy(policy))
        assert batch.actions[i] == sim.actions, f"{scenario} seed {seed}"
        assert_same(sim.timeline, batch.records(i), f"{scenario}/{policy}/seed {seed}")


def test_batch_with_action_logs_and_no_noise() -> None:
    logs = [
        [Action(20, "rollback"), Action(21, "floor", 14), Action(22, "autoscaler", False)],
        [Action(5, "ttl_s", 0.0), Action(6, "shed_share", 0.5), Action(40, "warmup"), Action(41, "warmup")],
        [Action(0, "floor", 1), Action(3, "target_utilization", 0.9), Action(60, "recommendations", False)],
        [
            Action(9, "autoscaler", False),
            Action(9, "floor", 12),
            Action(9, "ttl_s", 30.0),
            Action(30, "floor", 7),
            Action(31, "autoscaler", True),
            Action(31, "floor", 20),
            Action(32, "rollback"),
            Action(33, "rollback"),
        ],
    ]
    seeds = [3, 4, 5, 6]
    batch = BatchRun("bad-deploy", seeds, noise=False, overrides={"boot_delay_min": 0})
    batch.run(actions=logs)
    for i, seed in enumerate(seeds):
        sim = Simulation("bad-deploy", seed=seed, noise=False, overrides={"boot_delay_min": 0})
        sim.run(logs[i])
        assert_same(sim.timeline, batch.records(i), f"log {i}")
        assert batch.actions[i] == sim.actions


def test_actions_with_a_boot_delay_in_the_vector_path() -> None:
    logs = [
        [Action(2, "floor", 15), Action(2, "floor", 18), Action(4, "warmup"), Action(5, "warmup")],
        [Action(2, "floor", 9), Action(3, "shed_share", 1.0), Action(3, "recommendations", False)],
    ]
    batch = BatchRun("surge", [8, 9])
    batch.run(actions=logs)
    for i, seed in enumerate([8, 9]):
        sim = Simulation("surge", seed=seed)
        sim.run(logs[i])
        assert_same(sim.timeline, batch.records(i), f"log {i}")


def test_rows_match_the_scalar_debrief_and_fallback_path() -> None:
    seeds = [10, 11, 12]
    fast = run_seeds("cache-flush", seeds, "textbook")

    assert vectorized(WrappedForImport()) is None  # not a built-in: takes the scalar path transparently
    slow = run_seeds("cache-flush", seeds, "tests.test_batch:WrappedForImport")
    for a, b, seed in zip(fast, slow, seeds, strict=True):
        sim = Simulation("cache-flush", seed=seed)
        sim.run(policy=load_policy("textbook"))
        outcome = run_outcome(sim)
        assert a["budget_spent"] == pytest.approx(outcome.budget_spent, rel=1e-9)
        assert a["time_to_recovery_min"] == outcome.time_to_recovery_min
        for key, value in a.items():
            other = b[key]
            if isinstance(value, float) and math.isnan(value):
                assert math.isnan(other)
            elif isinstance(value, float):
                assert value == pytest.approx(other, rel=1e-9), key
            else:
                assert value == other, key


class WrappedForImport:
    """The textbook policy behind a user's module path: the batch cannot vectorize it."""

    name = "wrapped"

    def __init__(self) -> None:
        self.inner = load_policy("textbook")

    def reset(self, seed: int) -> None:
        self.inner.reset(seed)

    def decide(self, observation: Any) -> Any:
        return self.inner.decide(observation)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_streaming_outcome_agrees_with_the_per_minute_definitions(scenario: str) -> None:
    for seed in range(4):
        for policy in ("hands-off", "textbook"):
            sim = Simulation(scenario, seed=seed, minutes=400 if scenario == "free-play" else None)
            sim.run(policy=load_policy(policy))
            outcome = run_outcome(sim)
            start = incident_start(sim.plan, sim.timeline)
            recovered = recovery_minute(sim.timeline, start, sim.params)
            assert outcome.incident_minute == start
            assert outcome.time_to_recovery_min == (None if recovered is None or start is None else recovered - start)


def test_vector_textbook_decides_as_the_textbook_minute_by_minute() -> None:
    """Not just the same name: the same decisions, run by run, on runs it did not play itself."""
    seeds = [21, 22, 23]
    sims = [Simulation("surge", seed=s) for s in seeds]
    batch = BatchRun("surge", seeds)
    vector, scalars = VectorTextbook(), [load_policy("textbook") for _ in seeds]
    vector.reset(batch)
    for policy, seed in zip(scalars, seeds, strict=True):
        policy.reset(seed)
    decided = 0
    while not batch.done:
        expected = {i: list(p.decide(sim.observe())) for i, (p, sim) in enumerate(zip(scalars, sims, strict=True))}
        got = vector.decide(batch)
        assert got == {i: acts for i, acts in expected.items() if acts}, f"minute {batch.t}"
        decided += sum(len(a) for a in got.values())
        batch.step(got)
        for i, sim in enumerate(sims):
            sim.step(expected[i])
    assert decided > 5  # the surge makes the playbook act

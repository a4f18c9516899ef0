"""Decisions as arrays (``Coded``) apply exactly as the same decisions as (control, value) pairs, and as the
scalar engine applies them: same state, same records, same action log, same refusals."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from oncallsim import Action, InvalidInput, Simulation
from oncallsim.batch.engine import BatchRun, Coded
from oncallsim.batch.policies import VectorTextbook
from oncallsim.model import CONTROL_SPECS
from oncallsim.policies import load_policy

CODE = {name: k for k, name in enumerate(CONTROL_SPECS)}


def test_coded_decisions_give_what_their_pairs_give() -> None:
    """Two batches of the same seeds played by the vectorized textbook: one applies its decisions as arrays,
    the other as (control, value) pairs; every state bit, record, event and logged action agrees."""
    seeds = [21, 22, 23, 24]
    coded, paired = BatchRun("surge", seeds), BatchRun("surge", seeds)
    by_arrays, by_pairs = VectorTextbook(), VectorTextbook()
    by_arrays.reset(coded)
    by_pairs.reset(paired)
    acted = 0
    while not coded.done:
        decided = by_arrays.decide_coded(coded)
        acted += len(decided.runs)
        coded.step(decided)
        paired.step(by_pairs.decide(paired))
        for a, b in ((coded.state, paired.state), (coded.boot, paired.boot), (coded.window, paired.window)):
            assert np.array_equal(a, b, equal_nan=True), f"minute {coded.t - 1}"
    assert acted > 5  # the surge makes the playbook act
    assert coded.action_minutes() == [[a.minute for a in log] for log in paired.actions]
    assert coded.actions == paired.actions
    for i in range(len(seeds)):
        assert coded.records(i) == paired.records(i)  # events included


def test_coded_decisions_and_logged_actions_in_one_minute_match_the_scalar_engine() -> None:
    """A logged action and the playbook's decisions in the same minute: the log first, then the playbook."""
    logs = [[Action(30, "floor", 30), Action(31, "ttl_s", 120.0)], [Action(30, "shed_share", 1.0)]]
    seeds = [5, 6]
    batch = BatchRun("surge", seeds)
    batch.run(actions=logs, policy=VectorTextbook())
    for i, seed in enumerate(seeds):
        sim = Simulation("surge", seed=seed)
        sim.run(logs[i], policy=load_policy("textbook"))
        assert batch.actions[i] == sim.actions
        assert batch.records(i) == sim.timeline


def _refusal(step: Callable[[], None]) -> str:
    with pytest.raises((InvalidInput, ValueError)) as caught:
        step()
    return f"{type(caught.value).__name__}: {caught.value}"


@pytest.mark.parametrize(
    ("control", "value"),
    [("floor", 99.0), ("floor", 0.0), ("ttl_s", -1.0), ("shed_share", math.inf), ("floor", math.nan)],
)
def test_a_bad_coded_value_is_refused_as_its_pair_is(control: str, value: float) -> None:
    coded = Coded(np.array([1]), np.array([CODE[control]]), np.array([value]))
    by_arrays, by_pairs = BatchRun("surge", [1, 2]), BatchRun("surge", [1, 2])
    assert _refusal(lambda: by_arrays.step(coded)) == _refusal(lambda: by_pairs.step(coded.as_mapping()))


def test_coded_whole_numbers_and_switches_are_typed_as_the_playbook_types_them() -> None:
    """A whole number is truncated as ``int()`` does (never stored as -0.0), a switch is any non-zero number."""
    batch, pairs = BatchRun("free-play", [3, 4], keep=()), BatchRun("free-play", [3, 4], keep=())
    coded = Coded(
        np.array([0, 0, 1, 1]),
        np.array([CODE["floor"], CODE["autoscaler"], CODE["recommendations"], CODE["warmup"]]),
        np.array([12.7, 0.0, -2.5, 5.0]),
    )
    batch.step(coded)
    pairs.step(coded.as_mapping())
    assert np.array_equal(batch.state, pairs.state)
    assert (
        batch.actions
        == pairs.actions
        == [
            [Action(0, "floor", 12), Action(0, "autoscaler", False)],
            [Action(0, "recommendations", True), Action(0, "warmup", None)],
        ]
    )

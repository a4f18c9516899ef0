"""The debrief's narrative comparison with the playbook names what each side did, for every kind of action
(not only rollbacks): one verb for both when the player made the playbook's move, each side's moves otherwise."""

from __future__ import annotations

from typing import Any

import pytest

from oncallsim import Simulation
from oncallsim.debrief import make_report
from oncallsim.debrief.postmortem import move, moves
from oncallsim.policies import counterfactuals
from oncallsim.simulation import Action


def narrative(scenario: str, seed: int, at: int | None = None, acts: list[tuple[str, Any]] | None = None) -> str:
    sim = Simulation(scenario, seed=seed)
    if at is not None:
        sim.run(until=at)
        sim.step(acts or [])
    sim.run()
    return make_report(sim, counterfactuals(sim)).headline[-1]


@pytest.mark.parametrize(
    ("action", "said"),
    [
        (Action(0, "rollback"), "rolled back"),
        (Action(0, "warmup"), "started warming up the cache"),
        (Action(0, "shed_share", 0.3), "shed 30 % of the low-priority traffic"),
        (Action(0, "shed_share", 1.0), "shed all the low-priority traffic"),
        (Action(0, "shed_share", 0.0), "stopped shedding load"),
        (Action(0, "floor", 12), "set the fleet floor to 12 instances"),
        (Action(0, "ttl_s", 300.0), "set the cache TTL to 300 s"),
        (Action(0, "target_utilization", 0.5), "set the target utilization to 50 %"),
        (Action(0, "autoscaler", False), "switched the autoscaler off"),
        (Action(0, "recommendations", False), "switched the recommendations feature off"),
        (Action(0, "recommendations", True), "switched the recommendations feature back on"),
    ],
)
def test_each_kind_of_action_has_its_own_verb(action: Action, said: str) -> None:
    assert move(action) == said


def test_several_moves_of_a_minute_read_as_one_phrase() -> None:
    acts = [Action(3, "recommendations", False), Action(3, "shed_share", 1.0), Action(3, "warmup")]
    assert moves(acts) == (
        "switched the recommendations feature off, shed all the low-priority traffic and started warming up the cache"
    )


def test_a_late_rollback_reads_as_the_playbook_s_rollback_and_yours() -> None:
    text = narrative("bad-deploy", 7, 45, [("rollback", None)])
    assert text.startswith("The playbook rolled back at 09:29, you at 09:45; each minute of delay cost about ")


def test_an_early_or_same_minute_move_reads_so() -> None:
    assert narrative("bad-deploy", 7, 20, [("rollback", None)]) == (
        "You rolled back at 09:20, 9 min before the playbook (09:29)."
    )
    assert narrative("bad-deploy", 7, 29, [("rollback", None)]) == "You and the playbook both rolled back at 09:29."


def test_shedding_and_switching_the_feature_off_are_named_not_called_a_rollback() -> None:
    late = narrative("cache-flush", 1, 34, [("recommendations", False), ("shed_share", 1.0)])
    assert late.startswith(
        "The playbook switched the recommendations feature off and shed all the low-priority traffic at 12:01, "
        "you at 12:04; each minute of delay cost about "
    )
    other = narrative("cache-flush", 1, 33, [("shed_share", 0.3)])
    assert other.startswith("The playbook first acted at 12:01, you at 12:03; each minute of delay cost about ")
    assert other.endswith(
        " The playbook switched the recommendations feature off and shed all the low-priority traffic; "
        "you shed 30 % of the low-priority traffic."
    )
    assert "rolled back" not in late + other


def test_capacity_moves_and_never_acting() -> None:
    text = narrative("surge", 1, 140, [("floor", 30)])
    assert text.endswith(
        "The playbook set the target utilization to 50 % and set the fleet floor to 19 instances; "
        "you set the fleet floor to 30 instances."
    )
    assert narrative("bad-deploy", 7) == "The playbook rolled back at 09:29; you never acted after the incident began."


def test_a_first_move_of_another_kind_then_the_playbook_s_move_says_both() -> None:
    sim = Simulation("bad-deploy", seed=7)
    sim.run(until=35)
    sim.step([("shed_share", 0.3)])
    sim.run(until=56)
    sim.step([("rollback", None)])
    sim.run()
    report = make_report(sim, counterfactuals(sim))
    assert report.headline[-2].startswith("The playbook first acted at 09:29, you at 09:35; each minute of delay ")
    assert report.headline[-2].endswith("The playbook rolled back; you shed 30 % of the low-priority traffic.")
    assert report.headline[-1] == "You rolled back at 09:56, 27 min after the playbook."

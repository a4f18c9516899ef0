"""The article's lessons as scenarios (issue 23, item 9): in each, the mechanism Bilibili had (the "before") fails
and the one that replaced it (the "after") passes, on seeds the thresholds were not measured on (those came from
seeds 0–15, ``scripts/lessons.py``); the playbook learns the fix, and the debrief's what-if names the after."""

from __future__ import annotations

from typing import Any

import pytest

from oncallsim import Simulation
from oncallsim.batch.runs import run_seeds
from oncallsim.debrief.report import make_report
from oncallsim.policies import load_policy
from oncallsim.policies.counterfactual import counterfactuals
from oncallsim.policies.person import Person

HELD_OUT = [101, 202]
LESSONS = {  # scenario: (the before it opens with, the after)
    "cpu-herd": ({"balancer": "dynamic-wrr"}, {"balancer": "p2c"}),
    "breaker-flap": ({"breaker": "classic"}, {"breaker": "sre"}),
    "capacity-drift": ({"limiter": "token-bucket"}, {"limiter": "bbr"}),
}


def report_of(scenario: str, seed: int, policy: Any) -> Any:
    sim = Simulation(scenario, seed=seed)
    sim.run(policy=load_policy(policy) if isinstance(policy, str) else policy)
    return make_report(sim, effects=False)  # the objectives and the score; no decision replays


@pytest.mark.parametrize("scenario", sorted(LESSONS))
def test_the_before_fails_and_the_after_and_the_playbook_pass(scenario: str) -> None:
    """On held-out seeds: the before fails and scores near the bottom; the after passes; the playbook passes and
    scores near 90 (each lesson's [score] scale, calibrated on other seeds)."""
    before, after = LESSONS[scenario]
    sim = Simulation(scenario, seed=HELD_OUT[0], minutes=1)
    assert all(getattr(sim.state.controls, name) == value for name, value in before.items())
    for seed in HELD_OUT:
        nothing, playbook = report_of(scenario, seed, "hands-off"), report_of(scenario, seed, "textbook")
        assert not nothing.passed and nothing.score <= 35, (seed, nothing.score)
        assert playbook.passed and 85 <= playbook.score <= 97, (seed, playbook.score)
    for row in run_seeds(scenario, HELD_OUT, overrides=after):
        assert row["objectives_passed"] == row["objectives_total"], row


@pytest.mark.parametrize("scenario", ["breaker-flap", "capacity-drift"])
def test_a_person_who_acts_at_the_page_passes_a_lesson(scenario: str) -> None:
    """Normal difficulty: the clock stops at the page; a person who then does what the playbook does passes. Not
    cpu-herd: its herding slows answers without burning the budget, so no page fires and a person must watch the
    p99 (as in the surge; guided stops at the incident, docs/scenarios.md)."""
    report = report_of(scenario, HELD_OUT[0], Person(0, "page"))
    assert report.passed, [(o.name, o.value) for o in report.objectives if not o.passed]


@pytest.mark.parametrize(
    ("scenario", "column", "phrase"),
    [
        ("cpu-herd", "p2c", "p2c"),
        ("breaker-flap", "sre", "adaptive throttling at the clients"),
        ("capacity-drift", "limiter", "the concurrency limiter"),
    ],
)
def test_the_debrief_names_the_after(scenario: str, column: str, phrase: str) -> None:
    sim = Simulation(scenario, seed=HELD_OUT[1])
    sim.run()
    others = counterfactuals(sim)
    report = make_report(sim, others)
    after = report.counterfactuals[column]
    assert after.objectives_passed == after.objectives_total and not report.passed
    assert after.budget_spent <= report.budget_spent
    assert any(phrase in line for line in report.headline), report.headline

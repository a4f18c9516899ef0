"""A fair score: over many seeds (oncallsim.batch), hands-off fails most, the playbook passes nearly all, and
shedding everyone to save the error budget fails; the score ranks them the same way."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from oncallsim import Simulation
from oncallsim.batch.runs import run_seeds
from oncallsim.debrief import make_report
from oncallsim.debrief.score import SCORE_PARTS, run_score
from oncallsim.debrief.summary import Outcome
from oncallsim.policies import Textbook, load_policy
from oncallsim.policies.person import Person

SEEDS = list(range(2000, 2100))  # not the seeds the thresholds were measured on (0–199)
SCENARIOS = ["bad-deploy", "surge", "cache-flush"]


class ShedEverything(Textbook):
    """The playbook, except that the low-priority traffic is shed from the first minute to the last: the
    budget is spared by turning users away (it once met every objective)."""

    name = "shed-everything"

    def decide(self, observation: Any) -> Iterable[tuple[str, Any]]:
        moves = [(c, v) for c, v in super().decide(observation) if c != "shed_share"]
        return [("shed_share", 1.0), *moves]


def pass_rate(scenario: str, policy: str) -> float:
    rows = run_seeds(scenario, SEEDS, policy=policy)
    return sum(r["passed"] for r in rows) / len(rows)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_hands_off_fails_most_seeds_and_the_playbook_passes_nearly_all(scenario: str) -> None:
    assert pass_rate(scenario, "hands-off") <= 0.2
    assert pass_rate(scenario, "textbook") >= 0.95


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_shedding_everyone_fails(scenario: str) -> None:
    rows = run_seeds(scenario, SEEDS[:20], policy="tests.test_balance:ShedEverything")
    assert not any(r["passed"] for r in rows)
    # and it is the users-turned-away objective (the last one) that says so
    last = max(int(k.split("_")[1]) for k in rows[0] if k.startswith("objective_") and k.endswith("_passed"))
    assert not any(r[f"objective_{last}_passed"] for r in rows)


@pytest.mark.parametrize("scenario", ["surge", "cache-flush"])
def test_the_score_ranks_the_playbook_over_hands_off_and_over_shedding_everyone(scenario: str) -> None:
    scores = {}
    for policy in ("hands-off", "textbook", "tests.test_balance:ShedEverything"):
        sim = Simulation(scenario, seed=SEEDS[0])
        sim.run(policy=load_policy(policy))
        scores[policy] = make_report(sim).score
    assert scores["textbook"] > scores["hands-off"]
    assert scores["textbook"] > scores["tests.test_balance:ShedEverything"]


def test_each_part_loses_points_up_to_its_cap_and_the_caps_make_100() -> None:
    assert sum(part.cap for part in SCORE_PARTS.values()) == 100
    sim = Simulation("surge", seed=1, minutes=30)
    sim.run()
    report = make_report(sim)
    clean = Outcome(**report.model_dump(include=set(Outcome.model_fields)))
    assert run_score(clean, 4.0).score == report.score
    worst = clean.model_copy(
        update={
            "budget_spent": 1.0,
            "turned_away_share": 0.5,
            "mean_staleness_s": 900.0,
            "minutes_over_latency_target": 1000,
            "cost": 1000.0,
        }
    )
    assert run_score(worst, 4.0).score == 0
    assert [p.lost for p in run_score(worst, 4.0).parts] == [part.cap for part in SCORE_PARTS.values()]
    shed = clean.model_copy(update={"turned_away_share": 0.02})
    assert run_score(shed, 4.0).score == run_score(clean, 4.0).score - 6  # 3 points per % shed


# A person who reacts (issue 25): the guided difficulty's stops, or the page (normal stops there too). Held-out
# seeds: not those the objectives were measured on (0–199, 1000–1099); few in CI, more in scripts/person_balance.py.
MINUTE_SCENARIOS = ["tutorial", "bad-deploy", "surge", "cache-flush"]
REQUEST_SCENARIOS = ["slow-instance", "zone-outage", "flash-crowd", "retry-storm"]
PERSON_SEEDS = {**dict.fromkeys(MINUTE_SCENARIOS, range(3000, 3008)), **dict.fromkeys(REQUEST_SCENARIOS, (3000,))}


def played(scenario: str, seed: int, policy: Any) -> Any:
    sim = Simulation(scenario, seed=seed)
    sim.run(policy=policy)
    return make_report(sim, effects=False)


@pytest.mark.parametrize("scenario", MINUTE_SCENARIOS + REQUEST_SCENARIOS)
def test_a_person_who_acts_at_the_guided_stops_passes(scenario: str) -> None:
    """Guided: the clock stops at the incident and at the page with the scenario's hint; a person who then does
    what the playbook does, while the clock waits, passes every objective."""
    for seed in PERSON_SEEDS[scenario]:
        report = played(scenario, seed, Person(0, "stop"))
        assert report.passed, (scenario, seed, [(o.name, o.value) for o in report.objectives if not o.passed])


@pytest.mark.parametrize("scenario", [s for s in MINUTE_SCENARIOS + REQUEST_SCENARIOS if s != "surge"])
def test_a_person_who_acts_at_the_page_passes(scenario: str) -> None:
    """Normal: the clock stops at the page (no hint); a person who then acts at once passes. Not the surge: its page
    comes after the wave has done its harm, so a person must watch the traffic (docs/scenarios.md, "Balance")."""
    for seed in PERSON_SEEDS[scenario]:
        report = played(scenario, seed, Person(0, "page"))
        assert report.passed, (scenario, seed, [(o.name, o.value) for o in report.objectives if not o.passed])


# Model version 2: gRPC drops the unreachable zone within ~20 s, hands-off loses what the playbook loses; the
# zone-outage scenario awaits a redesign (tests/test_fleet.py says the same of its objectives).
_UNTAUGHT = {"zone-outage": pytest.mark.xfail(strict=True, reason="version 2: hands-off passes zone-outage")}


@pytest.mark.parametrize(
    "scenario", [pytest.param(s, marks=_UNTAUGHT.get(s, ())) for s in MINUTE_SCENARIOS + REQUEST_SCENARIOS]
)
def test_the_score_puts_the_playbook_near_90_and_hands_off_near_the_bottom(scenario: str) -> None:
    """Each scenario's score scale ([score] in its file) is calibrated: the playbook's play near 90, doing nothing
    near the bottom (medians over the seeds; the surge's smallest waves leave hands-off little to lose)."""
    seeds = PERSON_SEEDS[scenario][:3]
    playbook = sorted(played(scenario, s, Textbook()).score for s in seeds)[len(seeds) // 2]
    nothing = sorted(played(scenario, s, load_policy("hands-off")).score for s in seeds)[len(seeds) // 2]
    assert 85 <= playbook <= 97 and nothing <= 35, (scenario, playbook, nothing)

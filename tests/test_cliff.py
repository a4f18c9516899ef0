"""The distance to the cliff (cliff/zone.py), the map's single change (cliff/change.py) and the debrief's sentence
(debrief/cliff.py): zones worked by hand, the gauge's closed form held against the chain's own prediction, and a
retry-storm run whose debrief names when it stood past the cliff and the change a replay confirms."""

from __future__ import annotations

import math

import pytest

from oncallsim import Simulation
from oncallsim.cliff.change import changes
from oncallsim.cliff.point import OperatingPoint, backoff_mean_s, point_settings, record_point
from oncallsim.cliff.predict import predict
from oncallsim.cliff.zone import gauge, position
from oncallsim.debrief.cliff import CLIFF_TEXTS, at_risk_span
from oncallsim.policies.counterfactual import full_report
from oncallsim.scenarios import load_scenario


def point(load: float, retries: int = 3, budget: float = 0.0, trigger: float = 0.18, **more: object) -> OperatingPoint:
    """A fleet like retry-storm's (160 workers, S = 73.6 ms: cμ ≈ 2,174/s) at ``load`` × its capacity, a 2 s
    timeout, a 5-minute trigger keeping ``trigger`` of the capacity."""
    service = 0.0736
    values: dict[str, object] = {
        "arrivals_per_s": load * 160 / service,
        "workers": 160,
        "service_s": service,
        "timeout_s": 2.0,
        "retries": retries,
        "backoff_s": 0.0,
        "retry_budget": budget,
        "queue_limit": 0,
        "deadlines": False,
        "breakers": (),
        "trigger_service_s": service / trigger,
        "trigger_minutes": 5,
    }
    values.update(more)
    return OperatingPoint(**values)  # type: ignore[arg-type]


def test_zones_by_hand() -> None:
    assert position(point(0.2)).zone == "safe"  # 0.2 × 4 = 0.8 < 1
    assert position(point(0.3)).zone == "vulnerable"  # 1.2
    assert position(point(0.56)).amplified == pytest.approx(2.24)
    assert position(point(1.05)).zone == "overloaded"
    assert position(point(0.56, budget=0.1)).zone == "safe"  # 0.56 × 1.1
    assert position(point(0.56, budget=0.1)).amplification == pytest.approx(1.1)
    assert position(point(0.56, deadlines=True)).zone == "protected"
    assert position(point(0.56, breakers=("queue_discipline",))).zone == "protected"
    # a safe point heals whatever the trigger; a vulnerable one only from a trigger too small to fill the queue
    assert position(point(0.2, trigger=0.05)).survives
    assert not position(point(0.56)).survives
    assert position(point(0.3, trigger=0.9)).survives  # 90 % of the capacity left: no queue builds
    assert position(point(0.3, trigger=0.25, trigger_minutes=1)).survives is False


def test_the_loop_breakers_are_read_from_the_settings_by_their_current_names() -> None:
    """A client breaker (either kind) breaks the loop; version 1's client_throttle is read as the sre breaker."""
    storm = load_scenario("retry-storm")
    assert point_settings(storm, None)["breakers"] == ()
    assert point_settings(storm, {"breaker": "none"})["breakers"] == ()
    for opening in ({"breaker": "sre"}, {"breaker": "classic"}, {"client_throttle": True}):
        assert point_settings(storm, opening)["breakers"] == ("breaker",)
    both = point_settings(storm, {"queue_discipline": "codel", "limiter": "bbr"})["breakers"]
    assert both == ("queue_discipline", "limiter")


@pytest.mark.parametrize(
    ("load", "retries"), [(0.1, 3), (0.15, 3), (0.3, 0), (0.4, 1), (0.6, 1), (0.56, 3), (0.7, 2), (0.56, 0)]
)
def test_the_gauges_closed_form_agrees_with_the_chain(load: float, retries: int) -> None:
    """Whether a trigger heals (the gauge's closed form) against the chain's prediction given all the time it
    needs (a horizon of 10⁵ minutes): the same verdict on each side of the cliff."""
    here = point(load, retries)
    chain = predict(here, within_min=1e5, horizon_min=1e5, run_min=60)
    assert position(here).survives == (chain.cls == "stable"), (position(here), chain)


def test_the_mean_backoff() -> None:
    assert backoff_mean_s("none", 0.1, 20.0, 3) == 0.0
    assert backoff_mean_s("exponential", 0.1, 20.0, 3) == pytest.approx((0.2 + 0.4 + 0.8) / 3)
    assert backoff_mean_s("full-jitter", 0.1, 20.0, 3) == pytest.approx((0.2 + 0.4 + 0.8) / 6)
    assert backoff_mean_s("equal-jitter", 0.1, 0.3, 3) == pytest.approx((0.2 + 0.3 + 0.3) / 4)
    # decorrelated: min(cap, U(base, 3·previous)), its mean (base + 3·previous)/2 followed from base
    assert backoff_mean_s("decorrelated-jitter", 0.1, 20.0, 2) == pytest.approx((0.2 + 0.35) / 2)
    assert backoff_mean_s("exponential", 0.1, 20.0, 0) == 0.0


def test_the_single_change_soonest_first() -> None:
    found = changes(point(0.56), serving=10, boot_min=3, max_fleet=40)
    assert [(c.control, c.value, c.delay_min) for c in found] == [
        ("retries", 0, 0),  # 0.56 × 1 < 0.9 (one retry: 1.12, past the cliff)
        ("retry_budget", 0.5, 0),  # the least tight budget that fits: 0.56 × 1.5 = 0.84
        ("floor", 25, 3),  # 10 × 2.24 / 0.9 → 25 instances, once booted
    ]
    assert all(c.amplified < 0.9 for c in found)
    assert changes(point(0.95), serving=10, boot_min=3, max_fleet=12) == []  # nothing fits: no suggestion
    # between two as soon, the wider margin: at 0.2 a 50 % budget (0.3) before two retries (0.6)
    assert [c.control for c in changes(point(0.2), serving=10, boot_min=3, max_fleet=40)] == ["retry_budget", "retries"]


def test_spans_past_the_cliff() -> None:
    assert at_risk_span(["safe", "vulnerable", "overloaded", "vulnerable", "safe", "safe"]) == (1, 4)
    assert at_risk_span(["vulnerable", "overloaded", "overloaded"]) == (0, None)  # overloaded to the end
    assert at_risk_span(["safe", "overloaded", "safe"]) is None  # a trigger's overload alone is not the zone
    assert at_risk_span(["vulnerable", "safe", "vulnerable", "safe"], start=2) == (2, 3)


@pytest.fixture(scope="module")
def storm() -> Simulation:
    """retry-storm seed 7: the brownout at 10:10 for 3 minutes; 30 minutes see the storm it leaves."""
    sim = Simulation("retry-storm", seed=7, minutes=30)
    sim.run()
    return sim


def test_the_gauge_reads_each_minute_of_a_run(storm: Simulation) -> None:
    readings = [gauge(r, storm.params, None, 3) for r in storm.timeline]
    assert all(g is not None for g in readings)
    assert readings[0] is not None and readings[0]["zone"] == "vulnerable" and readings[0]["survives"] is None
    assert {g["zone"] for g in readings if g} >= {"vulnerable", "overloaded"}  # the brownout's minutes
    first = record_point(storm.timeline[0], storm.params)
    assert first is not None and readings[0]["amplified"] == pytest.approx(4 * first.load, rel=1e-3)


def test_the_debrief_says_when_the_run_stood_past_the_cliff_and_the_change_a_replay_confirms(storm: Simulation) -> None:
    report = full_report(storm)
    cliff = report.cliff
    assert cliff is not None and (cliff.entered, cliff.left) == (0, None)  # from 10:00 to the end
    assert (cliff.control, cliff.value, cliff.at) == ("retries", 0, 0)
    assert cliff.replay_left == 0 and cliff.replay_budget_spent is not None
    assert cliff.replay_budget_spent < report.budget_spent / 2  # the brownout's own minutes still burn
    replayed = report.counterfactuals["cliff"]
    assert replayed.time_to_recovery_min is not None and report.time_to_recovery_min is None
    span = CLIFF_TEXTS["span_open"] % {"start": "10:00"}
    change = CLIFF_TEXTS["change"] % {
        "move": "allowed the clients 0 retries per request",
        "clock": "10:00",
        "left": "10:00",
        "other": f"{cliff.replay_budget_spent:.1%}",
        "mine": f"{report.budget_spent:.1%}",
    }
    assert span in report.headline and change in report.headline
    assert math.isfinite(replayed.budget_spent)

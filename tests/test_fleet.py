"""The fleet as instances (issue 10): health, discovery with self-protection, the operator's instance actions,
the request-only controls refused on the minute engine, and the two fleet scenarios."""

from __future__ import annotations

import pytest

from oncallsim import Simulation
from oncallsim.batch.runs import run_seeds
from oncallsim.model import InvalidInput, Params
from oncallsim.model.request.discovery import registry_minute
from oncallsim.model.request.fleet_ops import in_zone, zone_slots
from oncallsim.model.request.instances import OFFLINE
from oncallsim.model.request.world import new_world
from oncallsim.policies import load_policy
from oncallsim.verify.fleet import discovery_checks, eviction_delays

# A small, quick service: 4 instances of 4 workers, few hot objects.
SMALL = {"workers_per_instance": 4, "max_fleet": 8, "hot_objects": 2000.0, "base_requests_per_s": 100.0}


def small_sim(scenario: str = "free-play", model_version: str | None = None, **overrides: object) -> Simulation:
    version = {} if model_version is None else {"model_version": model_version}
    return Simulation(
        scenario,
        seed=3,
        overrides={**SMALL, "floor": 4, "autoscaler": False, **overrides},
        minutes=30,
        engine="request",
        **version,
    )


# --- discovery -----------------------------------------------------------------------------------------


def _registry(serving: int) -> tuple[object, Params]:
    params = Params(max_fleet=serving)
    world = new_world(params, 0)
    from oncallsim.model.request.discovery import register_initial

    register_initial(world, serving, params)
    return world, params


def test_eviction_comes_90_to_150_s_after_the_last_renewal() -> None:
    """Renewals every 30 s, checks every 60 s, evict past 90 s: the eviction lands in (90, 150] s, for every
    renewal phase (verify/fleet.py, also in `oncallsim validate`)."""
    delays = eviction_delays(12)
    assert len(delays) == 12 and all(90.0 < d <= 150.0 for d in delays), delays


def test_validates_discovery_checks_all_hold() -> None:
    assert all(check.ok for check in discovery_checks())


@pytest.mark.parametrize(("dead", "protects"), [(3, False), (4, True)])
def test_self_protection_engages_exactly_below_85_percent_of_expected_renewals(dead: int, protects: bool) -> None:
    """20 instances, 2 renewals a minute each: 3 dead leave 85 % (not below: evictions go on), 4 leave 80 %."""
    world, params = _registry(20)
    registry_minute(world, 0, 20, params, True)
    for i in range(dead):
        world.fleet.health[i] = OFFLINE
    codes: list[str] = []
    for t in range(1, 5):
        codes += [e.code for e in registry_minute(world, t, 20, params, True)]
    assert ("self_protection_engaged" in codes) is protects
    assert ("instance_evicted" in codes) is not protects


def test_without_self_protection_the_registry_evicts_the_dead() -> None:
    world, params = _registry(20)
    registry_minute(world, 0, 20, params, False)
    for i in range(8):
        world.fleet.health[i] = OFFLINE
    codes: list[str] = []
    for t in range(1, 7):  # at most 15 % of the registry a round: 3, 3, 2 (tests/test_discovery.py)
        codes += [e.code for e in registry_minute(world, t, 20, params, False)]
    assert codes.count("instance_evicted") == 8 and "self_protection_engaged" not in codes


def test_a_zone_is_an_even_spread_of_the_slots() -> None:
    for share in (0.3, 0.35, 0.4):
        members = zone_slots(1000, share)
        assert abs(len(members) / 1000 - share) < 0.01
        assert all(in_zone(i, share) for i in members)


# --- health and the operator's actions ---------------------------------------------------------------------


def test_a_crashed_instance_refuses_at_once_and_p2c_routes_around_it() -> None:
    """Version 1's rules (a version-1 run file): the balancer kept a crashed instance until the registry and its
    long poll dropped it. Since version 2 gRPC drops it at once (tests/test_discovery.py)."""
    rates = {}
    for balancer in ("round-robin", "p2c"):
        sim = small_sim(balancer=balancer, model_version="1")
        sim.run(until=5)
        sim.inject({"kind": "instance", "what": "crash", "at_between": ["08:06", "08:06"], "instance": 1})
        records = sim.run(until=12)
        last = records[-1]
        assert last.extras is not None and last.extras["instances"]["health"][1] == "refuse"
        rates[balancer] = sum(r.error_dead_instance for r in records[-5:]) / 5
        assert last.p99_ms < 1000.0  # refused connections fail fast: no timeouts
    assert rates["round-robin"] > 0.15  # a quarter of the traffic refused
    assert rates["p2c"] < rates["round-robin"] / 5


def test_eject_readmit_and_replace_change_the_rotation() -> None:
    sim = small_sim(balancer="round-robin")
    sim.step()
    record = sim.step([("eject", 2)])
    assert any(e.code == "instance_ejected" for e in record.events)
    record = sim.step()  # it finished what it held last minute; now it gets nothing
    lines = record.extras["instances"]  # type: ignore[index]
    assert lines["ejected"][2] == 1 and lines["served"][2] == 0 and lines["served"][1] > 0
    record = sim.step([("readmit", 2), ("replace", 3)])
    assert record.extras["instances"]["ejected"][2] == 0  # type: ignore[index]
    assert record.extras["instances"]["replacing"][3] == 1  # type: ignore[index]
    codes = [e.code for r in sim.run(until=8) for e in r.events]
    assert "instance_replaced" in codes


@pytest.mark.parametrize(
    ("action", "value", "words"),
    [
        ("eject", 9, "no instance 9"),
        ("readmit", 1, "not ejected"),
        ("eject", "fourteen", "instance id"),
        ("balancer", "fastest", "one of pooled"),
    ],
)
def test_bad_instance_actions_name_the_field_and_change_nothing(action: str, value: object, words: str) -> None:
    sim = small_sim()
    sim.step()
    before = sim.state.vec.copy(), sim.state.world.fleet.ejected.copy()
    with pytest.raises(InvalidInput) as err:
        sim.step([(action, value)])
    assert err.value.field == action and words in str(err.value)
    assert sim.minute == 1 and (sim.state.vec == before[0]).all() and (sim.state.world.fleet.ejected == before[1]).all()


def test_ejecting_the_last_instance_in_rotation_is_refused() -> None:
    sim = small_sim(floor=2)
    sim.step([("eject", 0)])
    with pytest.raises(InvalidInput, match="last one in rotation"):
        sim.step([("eject", 1)])


def test_the_minute_engine_refuses_the_request_engines_settings_naming_it() -> None:
    with pytest.raises(InvalidInput, match="request engine") as err:
        Simulation("free-play", overrides={"balancer": "p2c"}, engine="minute")
    assert err.value.field == "balancer"
    sim = Simulation("free-play", engine="minute", minutes=3)
    with pytest.raises(InvalidInput, match="--engine request"):
        sim.step([("eject", 0)])
    with pytest.raises(InvalidInput, match="request engine"):
        Simulation("slow-instance", engine="minute")


def test_fleet_runs_are_deterministic() -> None:
    def play() -> list[object]:
        sim = Simulation("zone-outage", seed=11, minutes=40)
        return [r.to_dict() for r in sim.run(policy=load_policy("textbook"))]

    assert play() == play()


# --- the scenarios on held-out seeds -------------------------------------------------------------------------


# Since model version 2 gRPC drops an unreachable zone's connections within ~20 s (connections.py), so hands-off
# spends what the playbook spends (0.19–0.26 % of the budget on seeds 0–2, against 17–26 % before): the zone-outage
# scenario teaches nothing until it is redesigned (issue 23 item 8). Strict: it fails the day it teaches again.
_ZONE_OUTAGE_UNTAUGHT = pytest.mark.xfail(strict=True, reason="version 2: hands-off passes zone-outage; redesign due")


@pytest.mark.parametrize(
    "scenario",
    ["slow-instance", pytest.param("zone-outage", marks=_ZONE_OUTAGE_UNTAUGHT), "flash-crowd", "retry-storm"],
)
def test_hands_off_fails_and_textbook_passes_on_held_out_seeds(scenario: str) -> None:
    seeds = [101, 202]
    hands_off = run_seeds(scenario, seeds)
    textbook = run_seeds(scenario, seeds, "textbook")
    assert all(r["objectives_passed"] < r["objectives_total"] for r in hands_off)
    assert all(r["objectives_passed"] == r["objectives_total"] for r in textbook), textbook


# --- the server side's overload controls, live (issue 11's groundwork) ----------------------------------------


def test_queue_discipline_limit_and_deadlines_are_live_controls() -> None:
    sim = small_sim(balancer="round-robin")
    sim.step()
    record = sim.step([("queue_limit", 50), ("queue_discipline", "codel"), ("deadline_propagation", True)])
    assert [e.code for e in record.events][:3] == ["setting", "setting", "setting"]
    controls = sim.state.controls
    assert (controls.queue_limit, controls.queue_discipline, controls.deadline_propagation) == (50, "codel", True)
    sim.step([("queue_limit", 0)])
    with pytest.raises(InvalidInput, match="queue_limit first"):
        sim.step([("queue_discipline", "adaptive-lifo")])
    sim.step([("queue_limit", 50)])
    record = sim.step([("queue_discipline", "adaptive-lifo"), ("queue_limit", 0)])  # each fine alone, not together
    assert [e.code for e in record.events][:2] == ["setting", "not_applied"]
    assert (sim.state.controls.queue_discipline, sim.state.controls.queue_limit) == ("adaptive-lifo", 50)
    with pytest.raises(InvalidInput, match="engine"):
        Simulation("free-play", overrides={"queue_discipline": "codel"}, engine="minute")

"""A chain's cost bills every service's instances, not the entry's alone (issue 24)."""

from __future__ import annotations

import pytest

from oncallsim import Simulation
from oncallsim.debrief.report import opening_fleet_cost, run_outcome
from oncallsim.debrief.score import part_amounts


def declared_others(sim: Simulation) -> int:
    """The scenario file's own declaration, read apart from the engine's layout."""
    graph = sim.scenario.graph
    assert graph is not None
    return sum(spec.instances for name, spec in graph.services.items() if name != graph.entry)


@pytest.mark.parametrize("name", ["cascade", "fan-out"])
def test_each_minute_bills_every_service(name: str) -> None:
    sim = Simulation(name, seed=201, minutes=6)
    price = sim.params.instance_price_per_hour
    others = declared_others(sim)
    sim.run()
    so_far = 0.0
    for record in sim.timeline:
        entry = record.serving + record.booting
        assert record.cost_per_hour == pytest.approx(price * (entry + others), rel=1e-12)
        so_far += record.cost_per_hour / 60.0
        assert record.cost_so_far == pytest.approx(so_far, rel=1e-12)
    # the opening fleet kept as declared costs nothing over the yardstick
    assert opening_fleet_cost(sim) == pytest.approx(sim.timeline[-1].cost_so_far, rel=1e-12)
    assert part_amounts(run_outcome(sim), opening_fleet_cost(sim))["money"] == pytest.approx(0.0, abs=1e-9)


def test_a_service_scaled_out_costs_from_that_minute() -> None:
    sim = Simulation("cascade", seed=201, minutes=4)
    price = sim.params.instance_price_per_hour
    others = declared_others(sim)
    sim.step()
    sim.step()
    graph = sim.scenario.graph
    assert graph is not None
    sim.step([("recs.instances", graph.services["recs"].instances + 10)])  # ten more than declared
    sim.step()
    before, after = sim.timeline[1], sim.timeline[2]
    assert after.cost_per_hour - before.cost_per_hour == pytest.approx(
        price * (after.serving + after.booting - before.serving - before.booting + 10), rel=1e-12
    )
    assert after.cost_per_hour == pytest.approx(price * (after.serving + after.booting + others + 10), rel=1e-12)


def test_the_debriefs_cost_rows_add_up_with_the_other_services() -> None:
    """The debrief's "What it cost" for a chain: the entry's fleet (base, extra, rollback) and the other services'
    instances, which add up to the total (a newcomer's play-through read $8 + $0 + $0 = $20 before); the other
    services' row is their declared instances at the price, minute by minute, and 10 more from the minute recs
    scaled out."""
    from oncallsim.debrief import make_report
    from oncallsim.simulation import Action

    sim = Simulation("cascade", seed=201, minutes=6)
    price = sim.params.instance_price_per_hour
    graph = sim.scenario.graph
    assert graph is not None
    sim.run([Action(3, "recs.instances", graph.services["recs"].instances + 10)])
    split = make_report(sim, effects=False).cost_split
    assert split.other_services == pytest.approx((declared_others(sim) * 6 + 10 * 3) * price / 60.0, rel=1e-12)
    rows = split.base_fleet + split.extra_instances + split.rollback_double_billing + split.other_services
    assert rows == pytest.approx(sim.timeline[-1].cost_so_far, rel=1e-12)
    one = Simulation("free-play", seed=201, minutes=3)
    one.run()
    assert make_report(one, effects=False).cost_split.other_services == 0.0
    # the offline report shows the row for a chain, in the page's language; the one service's has none
    from oncallsim.debrief.html import render_html

    page = render_html(make_report(sim, effects=False), sim.timeline, sim.plan, sim.params, sim.actions, language="da")
    assert "de andre tjenesters instanser" in page
    plain = render_html(make_report(one, effects=False), one.timeline, one.plan, one.params, one.actions)
    assert "the other services' instances" not in plain
    # a chain has no one database or cache: no "DB with → without" column, no cached answers' age
    assert "DB med → uden" not in page and "DB with → without" in plain
    assert "mean age of cached answers" in plain and "middelalder af cachede svar" not in page
    # attempts per request: on a chain every service's, and said so (51× on the fan-out read as retries)
    assert "attempts per request, at every service" in render_html(
        make_report(sim, effects=False), sim.timeline, sim.plan, sim.params, sim.actions
    )

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

"""Weighted round robin, static and dynamic (issue 23, item 3; kratos v1.0.1 ``warden/balancer/wrr``): nginx's smooth
sequence, picks in proportion to the weights, warden's dynamic score, and a fleet of mixed machines and weights
declared by a scenario."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from oncallsim import InvalidInput, Simulation
from oncallsim.model.kernel import from_python
from oncallsim.model.request import wrr
from oncallsim.model.request.balancers import new_views
from oncallsim.scenarios import scenario_from_dict

smooth_pick, dynamic_answer = (from_python(f) for f in (wrr.smooth_pick, wrr.dynamic_answer))


def _views(weights: list[float], clients: int = 1) -> object:
    views = new_views(len(weights), clients)
    views.weight[:] = weights
    views.w_ewt[:, :] = weights
    views.rot[0, : len(weights)] = range(len(weights))
    views.nrot[0] = len(weights)
    return views


def test_the_smooth_sequence_is_nginx_s() -> None:
    """nginx's own example (ngx_http_upstream_round_robin.c, "smooth weighted balancing"): weights 5, 1, 1 give
    a a b a c a a — the heavy one spread out, not five in a row."""
    views = _views([5.0, 1.0, 1.0])
    picks = "".join("abc"[smooth_pick(views, 0, 3, False, views.weight)] for _ in range(7))
    assert picks == "aabacaa"


def test_picks_are_in_proportion_to_the_weights() -> None:
    views = _views([30.0, 20.0, 10.0])
    counts = Counter(smooth_pick(views, 0, 3, False, views.weight) for _ in range(600))
    assert counts == {0: 300, 1: 200, 2: 100}


def test_dynamic_weights_are_warden_s_score() -> None:
    """score = √(cs × 10⁹ / (mean latency in 100 µs units × CPU ‰)), weight = ⌊score × W⌋, redone once a second."""
    views = _views([10.0, 10.0])
    for k in range(20):  # instance 0: 10 ms at 500 ‰; instance 1: 40 ms at 800 ‰, one in four timed out
        x = 0.11 + 0.04 * k  # all within the second before the update
        dynamic_answer(views, views.weight, 0, 0, x, 0.010, False, 500.0)
        dynamic_answer(views, views.weight, 0, 1, x + 0.001, 0.040, k % 4 == 0, 800.0)
    dynamic_answer(views, views.weight, 0, 0, 1.05, 0.010, False, 500.0)  # a second on: the weights are redone
    assert views.w_update[0] == 1.05
    fast = math.floor(math.sqrt(1.0 * 1e9 / (100 * 500)) * 10)
    cs = 1 - 5 / 20
    slow = math.floor(math.sqrt(cs * 1e9 / (400 * 800)) * 10)
    assert views.w_ewt[0, 0] == fast and views.w_ewt[0, 1] == slow


def test_a_scenario_declares_mixed_machines_and_their_weights() -> None:
    spec = {
        "id": "mixed", "version": 1, "title": "Mixed", "summary": "s", "briefing": "b", "start": "10:00",
        "minutes": 3, "engine": "request", "controls": {"balancer": "weighted-round-robin", "floor": 3},
        "params": {"clients": 4.0, "diurnal_amplitude": 0.0, "base_requests_per_s": 600.0},
        "fleet": {"speeds": [1.5, 1.0, 0.5], "weights": [30, 20, 10]},
    }  # fmt: skip
    sim = Simulation(scenario_from_dict(spec, "test"), seed=1)
    records = sim.run()
    served = np.array(records[-1].extras["instances"]["served"][:3])  # type: ignore[index]
    assert served / served.sum() == pytest.approx([0.5, 1 / 3, 1 / 6], abs=0.01)
    assert records[-1].extras["instances"]["base_speed"][:3] == [1.5, 1.0, 0.5]  # type: ignore[index]
    with pytest.raises(InvalidInput, match="fleet"):
        scenario_from_dict({**spec, "engine": None}, "test")
    plain = {k: v for k, v in spec.items() if k != "controls"}
    with pytest.raises(InvalidInput, match=r"^fleet: instances' speeds and weights belong to the request engine"):
        Simulation(scenario_from_dict(plain, "test"), engine="minute")

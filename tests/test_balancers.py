"""Balancers in the request engine, checked against queueing theory (issue "The fleet as instances", point 7).

With one worker per instance and exponential service: ``random`` splits a Poisson stream into independent
M/M/1 queues (mean wait ρ/(μ(1 − ρ))); ``p2c`` approaches the supermarket model's limit as instances grow
(Mitzenmacher 2001: mean time in system Σᵢ ρ^(2^i − 2) service times); ``pooled`` is M/M/N. Tolerances are
batch means over the run's minutes (a minute is a batch): 4 standard errors, plus the finite-size gap for p2c.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from oncallsim.model.errors import InvalidInput
from oncallsim.model.params import Params
from oncallsim.model.request.balancers import MAX_CLIENTS
from oncallsim.model.request.queue_only import QueueRun, simulate_mmn
from oncallsim.model.request.settings import set_world
from oncallsim.model.request.world import new_world
from oncallsim.verify.fleet import supermarket_time

S = 0.05  # mean service time, s
RHO = 0.8


def _mean_wait_and_se(run: QueueRun) -> tuple[float, float]:
    waits = run.per_minute[:, 2] / run.per_minute[:, 3]
    return float(waits.mean()), float(waits.std(ddof=1) / math.sqrt(len(waits)))


def _run(
    balancer: str, instances: int, minutes: int = 30, seed: int = 1, clients: int = 1, revision: int = 2
) -> QueueRun:
    lam = RHO * instances / S
    return simulate_mmn(
        instances, lam, S, minutes, seed, workers_per_instance=1, balancer=balancer, clients=clients, revision=revision
    )


def test_random_is_mm1_per_instance() -> None:
    run = _run("random", 40)
    mean, se = _mean_wait_and_se(run)
    exact = RHO * S / (1 - RHO)  # M/M/1: W = ρ/(μ − λ)
    assert abs(mean - exact) <= 4 * se, (mean, exact, se)


def test_revision1_p2c_approaches_the_supermarket_limit_as_instances_grow() -> None:
    """Version 1's p2c read each instance's busy workers at the response (with one worker each: always 1000 ‰, the
    same for all), so only its latency EWMA and the outstanding count told instances apart."""
    limit = supermarket_time(RHO)  # ≈ 1.947 service times
    gaps = []
    for n in (10, 80):
        mean = _mean_wait_and_se(_run("p2c", n, revision=1))[0]
        gaps.append(abs(mean / S + 1 - limit))
    assert gaps[1] < gaps[0]
    assert gaps[1] <= 0.05 * limit  # within 5 % at 80 instances (EWMA latency, not queue length, is its signal)


def test_balancers_rank_as_theory_says() -> None:
    waits = {b: _mean_wait_and_se(_run(b, 40, minutes=10))[0] for b in ("pooled", "least-outstanding", "p2c", "random")}
    assert waits["pooled"] < waits["least-outstanding"] < waits["p2c"] < waits["random"]


def test_round_robin_serves_each_instance_in_turn() -> None:
    run = _run("round-robin", 8, minutes=5)
    # arrivals to an instance are every 8th of a Poisson stream (Erlang-8 gaps): far less waiting than random
    assert _mean_wait_and_se(run)[0] < 0.6 * _mean_wait_and_se(_run("random", 8, minutes=5))[0]


def test_many_clients_each_balance_on_their_own_view() -> None:
    one = _mean_wait_and_se(_run("least-outstanding", 40, minutes=10))[0]
    many = _mean_wait_and_se(_run("least-outstanding", 40, minutes=10, clients=32))[0]
    assert many > one  # 32 partial views herd onto the same instances more than one full view


def test_balanced_runs_are_deterministic() -> None:
    a, b = _run("p2c", 16, minutes=3, seed=9, clients=4), _run("p2c", 16, minutes=3, seed=9, clients=4)
    assert np.array_equal(a.per_minute, b.per_minute) and np.array_equal(a.latency_hist, b.latency_hist)


def test_bad_balancer_settings_name_the_field() -> None:
    world = new_world(Params(max_fleet=2), 0)
    with pytest.raises(InvalidInput) as err:
        set_world(world, balancer="fastest")
    assert err.value.field == "balancer" and "p2c" in str(err.value)
    with pytest.raises(InvalidInput) as err:
        Params(clients=0)
    assert err.value.field == "clients" and "1–64" in str(err.value)
    assert Params.__dataclass_fields__["clients"].metadata["max"] == MAX_CLIENTS  # the world holds that many


def test_a_full_run_with_client_side_balancers_scales_out_and_in() -> None:
    from oncallsim import Simulation
    from oncallsim.policies import load_policy

    sim = Simulation("surge", seed=3, engine="request", minutes=200, overrides={"balancer": "p2c", "clients": 4})
    records = sim.run(policy=load_policy("textbook"))
    events = [str(e) for r in records for e in r.events]
    assert any("scaled out" in e for e in events) and any("scaled in" in e for e in events)
    for r in records:
        assert 0.0 <= r.error_rate <= 1.0 and r.extras is not None and r.extras["queue_at_end"] >= 0
        assert sum(r.extras["instances"]["served"]) > 0

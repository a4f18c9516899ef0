"""A chain service's balancer in the request engine (docs/graphs.md, "Balancers"): a queue per instance, chosen at
random, in turn or by the fewest outstanding, against closed forms computed here with mpmath (Erlang C for the
random split of a Poisson stream, the GI/M/1 queue that round-robin makes of each instance, Erlang's finite queue
for a bound per instance) and against each other; pooled (one queue) stays what it was, bit for bit (the other
chain tests hold its numbers)."""

from __future__ import annotations

import math
import statistics

import mpmath
import pytest

from oncallsim.model.chain import world as W
from oncallsim.model.chain.drive import chain_minute_of, new_chain
from oncallsim.model.chain.engine import set_instances
from oncallsim.scenarios.graph import GraphSpec, layout_of
from oncallsim.scenarios.registry import scenario_from_text
from tests.test_chain_engine import graph

S = 0.010  # 10 ms of work, exponential
MINUTES = 16  # the first left out (the queues start empty)


def one_service(balancer: str, instances: int, workers: int, **more: object) -> GraphSpec:
    service = {"instances": instances, "workers_per_instance": workers, "service_ms": S * 1000.0, "balancer": balancer}
    return graph("a", 600_000.0, a={**service, **more})


def waits(spec: GraphSpec, rate: float, seed: int = 7, measure: int = W.M_WAIT_S) -> tuple[float, list[float]]:
    """The mean wait for a worker over MINUTES − 1 minutes of Poisson arrivals at ``rate``/s, and each minute's
    (``measure`` M_QUEUE_FULL: the share of arrivals refused for a full queue instead)."""
    world = new_chain(layout_of(spec), seed)
    per_minute = []
    total = count = 0.0
    for minute in range(MINUTES):
        world = chain_minute_of(world, minute, round(rate * 60.0))
        if minute:
            m = world.m_svc[0]
            of = m[W.M_STARTED] if measure == W.M_WAIT_S else m[W.M_ATTEMPTS]
            per_minute.append(m[measure] / of)
            total += m[measure]
            count += of
    return total / count, per_minute


def band(per_minute: list[float]) -> float:
    """Five standard errors of the mean wait, from the minutes as batches (10 ms jobs: a minute is thousands of
    busy periods, so the minutes are close to independent)."""
    return 5.0 * statistics.stdev(per_minute) / math.sqrt(len(per_minute))


def erlang_c_wait(servers: int, rate: float, mean_s: float) -> float:
    """M/M/c's mean wait, Erlang C(c, a)·S/(c − a), a = λS."""
    a = mpmath.mpf(rate) * mean_s
    top = a**servers / mpmath.factorial(servers) * servers / (servers - a)
    c = top / (mpmath.fsum(a**i / mpmath.factorial(i) for i in range(servers)) + top)
    return float(c * mean_s / (servers - a))


def test_random_makes_each_instance_an_m_m_k_queue_of_its_share() -> None:
    """A random split of a Poisson stream is n Poisson streams of λ/n: each instance an M/M/k queue. Ten instances
    of two workers at ρ = 0.8 wait 17.8 ms where one queue for the twenty waits 0.64 ms (Erlang C both)."""
    rate = 0.8 * 20 / S
    mean, minutes = waits(one_service("random", 10, 2), rate)
    assert mean == pytest.approx(erlang_c_wait(2, rate / 10, S), abs=band(minutes))
    pooled, minutes = waits(one_service("pooled", 10, 2), rate)
    assert pooled == pytest.approx(erlang_c_wait(20, rate, S), abs=band(minutes))
    assert pooled < mean / 10


def test_round_robin_makes_each_instance_a_gi_m_1_queue_with_erlang_arrivals() -> None:
    """In turn, each of n single-worker instances gets every n-th arrival: gaps Erlang(n, λ), a GI/M/1 queue whose
    mean wait is σ/(μ(1 − σ)), σ the root in (0, 1) of σ = (λ/(λ + μ(1 − σ)))ⁿ (Kleinrock, vol. 1, §6.4)."""
    n = 10
    rate = 0.8 * n / S
    mu = 1.0 / S
    sigma = mpmath.findroot(lambda x: x - (rate / (rate + mu * (1 - x))) ** n, 0.5)
    expected = float(sigma / (mu * (1 - sigma)))
    mean, minutes = waits(one_service("round-robin", n, 1), rate)
    assert mean == pytest.approx(expected, abs=band(minutes))
    at_random, _ = waits(one_service("random", n, 1), rate)
    assert at_random == pytest.approx(0.8 / 0.2 * S, rel=0.1)  # M/M/1 at ρ = 0.8: 40 ms
    assert mean < at_random / 1.8  # in turn spreads the load better than chance: 19 ms against 40


def test_least_outstanding_sits_between_one_queue_and_round_robin() -> None:
    """No closed form for joining the shortest queue; it is bounded: never better than one queue for every worker,
    clearly better than round-robin, which does not look at the queues."""
    rate = 0.8 * 20 / S
    pooled, _ = waits(one_service("pooled", 10, 2), rate)
    least, minutes = waits(one_service("least-outstanding", 10, 2), rate)
    in_turn, _ = waits(one_service("round-robin", 10, 2), rate)
    assert pooled < least - band(minutes)
    assert least < in_turn / 3


def test_with_one_instance_every_balancer_is_the_pooled_queue() -> None:
    """One instance in rotation: nothing to choose, nothing drawn: the same run to the bit."""
    rate = 0.8 * 4 / S
    runs = {
        name: waits(one_service(name, 1, 4), rate) for name in ("pooled", "random", "round-robin", "least-outstanding")
    }
    assert len({run[0] for run in runs.values()}) == 1


def test_max_queue_bounds_each_instance_as_erlangs_finite_queue() -> None:
    """With a balancer, ``max_queue`` bounds each instance's queue: under random, each instance is M/M/k/(k + K) of
    λ/n, and an arrival is refused with the chance that its instance is full, p_(k+K) of the birth–death chain."""
    n, k, bound = 10, 2, 3
    rate = 0.9 * n * k / S
    a = mpmath.mpf(rate / n) * S
    weights = [
        a**j / mpmath.factorial(j) if j <= k else a**j / (mpmath.factorial(k) * k ** (j - k))
        for j in range(k + bound + 1)
    ]
    blocked = float(weights[-1] / mpmath.fsum(weights))
    refused, minutes = waits(one_service("random", n, k, max_queue=bound), rate, measure=W.M_QUEUE_FULL)
    assert refused == pytest.approx(blocked, abs=band(minutes))
    assert 0.1 < blocked < 0.2  # a bound that bites (0.141)


def test_instances_taken_out_of_rotation_finish_what_they_hold_and_get_nothing_new() -> None:
    """Down from 10 instances to 5 between minutes: the five taken out finish their queues and stay idle; the five
    left take every arrival (at ρ = 0.4 of the ten, 0.8 of the five: M/M/2 of λ/5)."""
    spec = one_service("random", 10, 2)
    layout = layout_of(spec)
    world = new_chain(layout, 3)
    rate = 0.4 * 20 / S
    world = chain_minute_of(world, 0, round(rate * 60.0))
    set_instances(world, layout, 0, 5)
    per_minute = []
    for minute in range(1, 10):
        world = chain_minute_of(world, minute, round(rate * 60.0))
        m = world.m_svc[0]
        per_minute.append(m[W.M_WAIT_S] / m[W.M_STARTED])
    first = int(world.queue_first[0])
    out = world.queues[first + 5 : first + 10]
    assert (out[:, W.Q_OUT] == 0).all() and (out[:, W.Q_LEN] == 0).all() and (out[:, W.Q_FREE] == 2).all()
    mean = statistics.fmean(per_minute[1:])
    assert mean == pytest.approx(erlang_c_wait(2, rate / 5, S), abs=band(per_minute[1:]) * 1.5)


def test_an_unknown_balancer_is_refused_naming_the_field() -> None:
    text = """
id = "b"
version = 1
title = "b"
summary = "b"
briefing = "-"
start = "09:00"
minutes = 5
[graph]
entry = "a"
deadline_ms = 1000
[graph.services.a]
service_ms = 1
balancer = "p2c"
"""
    with pytest.raises(Exception) as refused:
        scenario_from_text(text, "b")
    assert "graph.services.a.balancer" in str(refused.value)
    assert "least-outstanding" in str(refused.value)

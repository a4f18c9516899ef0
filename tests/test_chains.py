"""The chain oracle (oncallsim/verify/chains.py) against closed forms written here: retries multiplying layer
by layer, the tail at scale of a fan-out (and what hedging does to it), Erlang C and Pollaczek–Khinchine for a
service's queue (held threads included), and deadlines running out hop by hop. Each expected number is computed
in this file, from the formula, never from oncallsim."""

from __future__ import annotations

import math
from typing import Any

import mpmath
import numpy as np
import pytest

from oncallsim.scenarios.graph import GraphSpec
from oncallsim.verify.chains import simulate

Z = 3.29  # a two-sided 99.9 % normal band: the seeds are fixed, so a pass stays a pass


def chain(retries: list[int], service: dict[str, Any] | None = None, network_ms: float = 0.5, **top: Any) -> GraphSpec:
    """api → s1 → … → leaf, service i retrying its call retries[i] times; plenty of workers everywhere."""
    names = ["api", *(f"s{i}" for i in range(1, len(retries))), "leaf"]
    services: dict[str, Any] = {}
    for i, name in enumerate(names):
        spec: dict[str, Any] = {"service_ms": 1.0, "instances": 50, "workers_per_instance": 10, **(service or {})}
        if i < len(retries):
            spec["calls"] = [{"to": names[i + 1], "network_ms": network_ms}]
            spec["retries"] = retries[i]
        services[name] = spec
    return GraphSpec.model_validate({"entry": "api", "deadline_ms": 60_000.0, "services": services, **top})


# --- (a) retries at every layer ---------------------------------------------------------------------------------


@pytest.mark.parametrize("retries", [[1, 2, 3], [3, 3, 3], [0, 5], [2]])
def test_when_every_attempt_fails_the_leaf_sees_the_product_of_one_plus_the_retries(retries: list[int]) -> None:
    report = simulate(chain(retries), rate_per_s=20.0, requests=300, seed=1, failures={"leaf": 1.0})
    expected = math.prod(1 + r for r in retries)  # ∏(1 + rᵢ), exactly, for every request
    assert report.succeeded == 0
    assert set(report.leaf_attempts["leaf"].tolist()) == {expected}
    # each layer's attempts: the product of the retries above it
    names = ["api", *(f"s{i}" for i in range(1, len(retries))), "leaf"]
    for depth, name in enumerate(names):
        assert report.services[name].attempts == 300 * math.prod(1 + r for r in retries[:depth])


def expected_leaf_attempts(retries: list[int], p: float) -> float:
    """Attempts at the leaf per entry request when each leaf attempt fails with chance p (independently) and
    layer i retries its call up to rᵢ times: from the leaf up, an attempt at a layer makes T = 1 + q + … + q^r
    tries of the layer below (a geometric series in q, the chance a try below fails), each bringing the layer
    below's attempts at the leaf (Wald: whether a try happens depends only on the tries before it), and fails
    with chance q^(1 + r)."""
    attempts, q = 1.0, p  # at the leaf: one attempt each, failing with p
    for r in reversed(retries):
        attempts *= sum(q**j for j in range(r + 1))
        q = q ** (1 + r)
    return attempts


@pytest.mark.parametrize(("retries", "p"), [([1, 2, 3], 0.5), ([3, 3, 3], 0.3), ([2, 0, 4], 0.8)])
def test_leaf_attempts_under_a_failure_chance_are_the_geometric_series_of_each_layer(
    retries: list[int], p: float
) -> None:
    n = 4000
    report = simulate(chain(retries), rate_per_s=50.0, requests=n, seed=2, failures={"leaf": p})
    counts = report.leaf_attempts["leaf"]
    expected = expected_leaf_attempts(retries, p)
    half = Z * counts.std(ddof=1) / math.sqrt(n)
    assert abs(counts.mean() - expected) <= half, (counts.mean(), expected, half)
    # and the requests that fail are those whose every try failed at the top: q_top = p^∏(1 + rᵢ)
    q_top = p ** math.prod(1 + r for r in retries)
    fails = n - report.succeeded
    assert abs(fails / n - q_top) <= Z * math.sqrt(q_top * (1 - q_top) / n) + 1 / n


def test_a_retry_budget_caps_the_retries_at_its_share_of_the_calls() -> None:
    """One layer retrying 3 times, every attempt failing, a budget of 10 %: retries ≈ 10 % of the calls sent,
    so the leaf sees 1 / (1 − 0.1) attempts per request instead of 4."""
    graph = chain([3], service={"retry_budget": 0.1})
    report = simulate(graph, rate_per_s=50.0, requests=3000, seed=3, failures={"leaf": 1.0})
    api = report.services["api"]
    assert api.retries / report.services["leaf"].attempts <= 0.1 + 1e-12
    assert report.leaf_attempts_per_request["leaf"] == pytest.approx(1 / 0.9, abs=0.005)


# --- (b) the tail at scale --------------------------------------------------------------------------------------

LEAF_MS = 10.0


def fan_out(n: int, hedge: float | None = None) -> GraphSpec:
    """A page that calls n leaves at once and does nothing else; the leaves exponential, with workers enough
    that none ever waits: a request takes the slowest of its n leaves."""
    page: dict[str, Any] = {
        "service_ms": 0.0,
        "distribution": "constant",
        "instances": 10,
        "workers_per_instance": 100,
        "calls": [{"to": "leaf", "mode": "parallel", "count": n}],
    }
    if hedge is not None:
        page["hedge_after_quantile"] = hedge
    leaf = {"service_ms": LEAF_MS, "instances": 100, "workers_per_instance": 100}
    services = {"page": page, "leaf": leaf}
    return GraphSpec.model_validate({"entry": "page", "deadline_ms": 60_000.0, "services": services})


def within_binomial(hits: int, n: int, p: float) -> bool:
    return abs(hits / n - p) <= Z * math.sqrt(p * (1 - p) / n)


def test_fan_out_makes_the_leaves_rare_slow_reply_common() -> None:
    """50 leaves each slower than their p99 with chance 1 %: P(page slow) = 1 − 0.99⁵⁰ = 0.395; and the page's
    median is the 50th root's quantile of one leaf, −S·ln(1 − 0.5^(1/50)) = 42.8 ms, near the leaves' p99."""
    n, p, requests = 50, 0.01, 3000
    report = simulate(fan_out(n), rate_per_s=5.0, requests=requests, seed=4)
    assert report.services["leaf"].mean_wait_ms == 0.0  # nothing queues: the request is the max of its leaves
    slow_ms = -LEAF_MS * math.log(p)  # a leaf's p99
    expected = 1 - (1 - p) ** n
    assert expected == pytest.approx(0.395, abs=5e-4)
    assert within_binomial(int((report.latency_ms > slow_ms).sum()), requests, expected)
    median_ms = -LEAF_MS * math.log(1 - 0.5 ** (1 / n))
    assert within_binomial(int((report.latency_ms <= median_ms).sum()), requests, 0.5)
    assert report.services["leaf"].attempts == n * requests


def test_hedging_after_the_p95_cuts_the_fan_outs_tail_for_5_percent_more_calls() -> None:
    """A hedge after d = the leaf's q-quantile: a call answers after t > d only if both copies do,
    P = e^(−t/S)·e^(−(t−d)/S); so P(page slow) = 1 − (1 − e^(−t/S − (t−d)/S))ⁿ, and the hedges are the calls
    unanswered at d: 1 − q of them (the declared delay: a leaf's own exponential, nothing queues)."""
    n, q, requests = 50, 0.95, 3000
    report = simulate(fan_out(n, hedge=q), rate_per_s=5.0, requests=requests, seed=5, hedge_delay="declared")
    d = -LEAF_MS * math.log(1 - q)
    t = -LEAF_MS * math.log(0.01)
    per_call = math.exp(-t / LEAF_MS) * math.exp(-(t - d) / LEAF_MS)
    expected = 1 - (1 - per_call) ** n
    assert expected < 0.1  # from 0.395 without
    assert within_binomial(int((report.latency_ms > t).sum()), requests, expected)
    assert within_binomial(report.services["page"].hedges, n * requests, 1 - q)
    # every hedge leaves a loser, cancelled (queued, at work or still on the way) or answering too late
    assert report.services["leaf"].attempts == n * requests + report.services["page"].hedges


def test_hedging_on_the_observed_quantile_settles_near_its_share() -> None:
    """The observed delay has no closed form (a quantile read off the last 1,000 answers, noisy): a sanity band
    around 1 − q, and the tail still far below the unhedged 0.395."""
    n, requests = 50, 2000
    report = simulate(fan_out(n, hedge=0.95), rate_per_s=5.0, requests=requests, seed=6)
    share = report.services["page"].hedges / (n * requests)
    assert 0.045 <= share <= 0.06
    assert (report.latency_ms > -LEAF_MS * math.log(0.01)).mean() < 0.15


# --- (c) a service's queue ----------------------------------------------------------------------------------------


def erlang_c_wait_ms(c: int, lam_per_s: float, service_ms: float) -> tuple[float, float]:
    """M/M/c: the chance to wait, C(c, a) = (aᶜ/c!)·c/(c − a) / (Σₖ₍<c₎ aᵏ/k! + (aᶜ/c!)·c/(c − a)), and the mean
    wait C/(cμ − λ), with mpmath."""
    mu = mpmath.mpf(1000) / service_ms
    a = mpmath.mpf(lam_per_s) / mu
    top = a**c / mpmath.factorial(c) * c / (c - a)
    chance = top / (mpmath.fsum(a**k / mpmath.factorial(k) for k in range(c)) + top)
    return float(chance), float(chance / (c * mu - lam_per_s) * 1000)


def batch_half(x: np.ndarray, batches: int = 20) -> float:
    """The half-width of a 99.9 % batch-means interval around x's mean (t(0.9995, 19) = 3.883)."""
    means = np.array([part.mean() for part in np.array_split(x, batches)])
    return 3.883 * float(means.std(ddof=1)) / math.sqrt(batches)


@pytest.mark.parametrize(("instances", "workers", "rho"), [(2, 2, 0.7), (1, 1, 0.5), (4, 2, 0.8)])
def test_one_service_waits_as_erlang_c(instances: int, workers: int, rho: float) -> None:
    c, service_ms = instances * workers, 10.0
    lam = rho * c * 1000 / service_ms
    graph = GraphSpec.model_validate(
        {
            "entry": "s",
            "deadline_ms": 600_000.0,
            "services": {"s": {"service_ms": service_ms, "instances": instances, "workers_per_instance": workers}},
        }
    )
    report = simulate(graph, rate_per_s=lam, requests=60_000, seed=7, warmup=2000)
    waits = report.services["s"].waits_ms
    chance, mean_ms = erlang_c_wait_ms(c, lam, service_ms)
    assert abs(waits.mean() - mean_ms) <= batch_half(waits), (waits.mean(), mean_ms, batch_half(waits))
    waited = (waits > 0).astype(float)
    assert abs(waited.mean() - chance) <= batch_half(waited), (waited.mean(), chance)


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_caller_holds_its_worker_while_it_waits_unless_asynchronous(asynchronous: bool) -> None:
    """An entry with one worker and no work of its own calling a 10 ms constant leaf: holding the worker, the
    entry is an M/D/1 queue of service 10 ms (Pollaczek–Khinchine: W = λS² / (2(1 − ρ)) = 5 ms at 50/s);
    asynchronous, it never waits."""
    graph = GraphSpec.model_validate(
        {
            "entry": "api",
            "deadline_ms": 600_000.0,
            "services": {
                "api": {
                    "service_ms": 0.0,
                    "distribution": "constant",
                    "asynchronous": asynchronous,
                    "calls": [{"to": "leaf"}],
                },
                "leaf": {"service_ms": 10.0, "distribution": "constant", "instances": 100},
            },
        }
    )
    lam, s = 50.0, 0.010
    report = simulate(graph, rate_per_s=lam, requests=40_000, seed=8, warmup=1000)
    waits = report.services["api"].waits_ms
    if asynchronous:
        assert waits.max() == 0.0
    else:
        expected_ms = lam * s * s / (2 * (1 - lam * s)) * 1000
        assert expected_ms == pytest.approx(5.0)
        assert abs(waits.mean() - expected_ms) <= batch_half(waits), (waits.mean(), expected_ms)


# --- (d) deadlines across hops ----------------------------------------------------------------------------------

HOP_NET_MS, HOP_WORK_MS = 5.0, 10.0


@pytest.mark.parametrize("deadline_ms", [5.0, 12.0, 22.0, 32.0, 38.0, 45.0, 49.0])
def test_a_deadline_shorter_than_the_path_fails_every_request_where_it_runs_out(deadline_ms: float) -> None:
    """api → mid → db, each 10 ms of constant work, 5 ms of network each way: a request reaches hop k at 15k ms
    and the whole path takes 50 ms. With a shorter deadline every request fails at the deadline, no hop is
    called after the budget ran out, a hop reached after it refuses the work, and no hop's answer counts once
    the deadline has passed."""
    requests = 200
    graph = chain([0, 0], service={"distribution": "constant", "service_ms": HOP_WORK_MS}, network_ms=HOP_NET_MS)
    report = simulate(graph, rate_per_s=5.0, requests=requests, seed=9, deadline_ms=deadline_ms)
    assert report.succeeded == 0
    # fails fast: at the deadline, not at some later timeout
    assert np.allclose(report.latency_ms, deadline_ms, rtol=0, atol=1e-9)
    names = ["api", "s1", "leaf"]
    reach = [k * (HOP_WORK_MS + HOP_NET_MS) for k in range(3)]  # 0, 15, 30 ms: arrival at hop k
    answer = [0.0, 0.0, reach[2] + HOP_WORK_MS]  # when hop k answers: the leaf at 40, s1 at 45, api at 50
    for k in (1, 0):
        answer[k] = answer[k + 1] + HOP_NET_MS
    for k, name in enumerate(names):
        s = report.services[name]
        sent = k == 0 or reach[k] - HOP_NET_MS < deadline_ms
        assert s.attempts == (requests if sent else 0), name
        if not sent:
            continue
        arrived_in_time = reach[k] < deadline_ms
        assert s.started == (requests if arrived_in_time else 0), name
        assert s.refused == (0 if arrived_in_time else requests), name
        assert s.succeeded == (requests if answer[k] < deadline_ms else 0), name


def test_the_validator_refuses_that_deadline_and_the_oracle_fails_it_at_the_leaf_too() -> None:
    """The same chain with exponential work: the validator refuses a deadline under the least time (50 ms at
    the means); given one anyway, no request reaches the leaf before its deadline when even the network alone
    is longer (8 ms < 10 ms to reach the leaf)."""
    with pytest.raises(ValueError, match="deadline_ms"):
        chain([0, 0], service={"service_ms": HOP_WORK_MS}, network_ms=HOP_NET_MS, deadline_ms=30.0)
    graph = chain([2, 2], service={"service_ms": HOP_WORK_MS}, network_ms=HOP_NET_MS)
    report = simulate(graph, rate_per_s=5.0, requests=500, seed=10, deadline_ms=8.0)
    assert report.succeeded == 0 and report.latency_ms.max() == pytest.approx(8.0, abs=1e-9)
    assert report.services["leaf"].started == 0
    assert report.services["s1"].retries == 0  # no budget left to retry with


def slow_leaf_chain(propagation: bool) -> GraphSpec:
    """An api calling a leaf that always takes 500 ms, no timeouts; the clients' deadline set by the test."""
    services = {
        "api": {"service_ms": 0.0, "distribution": "constant", "workers_per_instance": 100, "calls": [{"to": "leaf"}]},
        "leaf": {"service_ms": 500.0, "distribution": "constant", "workers_per_instance": 100},
    }
    return GraphSpec.model_validate(
        {"entry": "api", "deadline_ms": 600.0, "deadline_propagation": propagation, "services": services}
    )


def test_without_deadline_propagation_the_work_goes_on_for_clients_that_left() -> None:
    """A leaf that always takes 500 ms, clients that wait 100 ms, no timeouts. Propagated, the deadline reaches
    the leaf: every client times out and the leaf's work is cancelled or refused (nothing served for nobody past
    the deadline). Not propagated: every client still times out, yet the api and the leaf serve every request to
    the end — the wasted work that fills a chain's workers in a cascade."""
    for propagation in (True, False):
        spec = slow_leaf_chain(propagation)
        report = simulate(spec, rate_per_s=20.0, requests=200, seed=1, deadline_ms=100.0)
        assert report.succeeded == 0 and np.allclose(report.latency_ms, 100.0)
        leaf = report.services["leaf"]
        if propagation:
            assert leaf.succeeded == 0 and leaf.cancelled == leaf.attempts == 200
        else:
            assert leaf.succeeded == leaf.attempts == 200 and leaf.cancelled == 0
            assert report.services["api"].succeeded == 200

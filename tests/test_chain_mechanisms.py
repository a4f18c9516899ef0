"""A chain's per-service mechanisms (docs/graphs.md, "Breakers, limits and queues"): each caller's breaker per
callee (Google SRE's adaptive throttling, as Kratos's sre breaker), in the request engine and in the oracle
(oncallsim/verify/chains.py, written apart), checked against closed forms computed here and against each other.
A mechanism left undeclared changes nothing, bit for bit (the existing chain tests hold that too)."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from oncallsim.model.chain import world as W
from oncallsim.scenarios.graph import GraphSpec
from oncallsim.scenarios.registry import scenario_from_text
from oncallsim.verify.chains import simulate
from tests.test_chain_engine import graph, play  # the same graph builder and minute-by-minute player

# --- breakers ---------------------------------------------------------------------------------------------------


def breaker_graph(k: float, window_s: float, retries: int = 0) -> GraphSpec:
    """An api calling a leaf once per request, with a breaker; both fast and with workers to spare, so the only
    thing between them is the breaker."""
    return graph(
        "api",
        60_000.0,
        api={"service_ms": 0.0, "distribution": "constant", "workers_per_instance": 200, "retries": retries,
             "breaker": {"k": k, "window_s": window_s, "min_requests": 20}, "calls": [{"to": "leaf"}]},
        leaf={"service_ms": 1.0, "distribution": "constant", "workers_per_instance": 200},
    )  # fmt: skip


def passes_when_all_fail(rate: float, window_s: float, seconds: float) -> float:
    """The calls a breaker lets through when its callee fails every one (no accept: the drop ratio is
    requests/(requests + 1)): λ·T·E[1/(R + 1)], R the requests in the window. The window is 9 whole buckets and
    the current one's elapsed part u ~ U(0, 1): R = λ·b·(9 + u), b = window/10, and
    E[1/(1 + λb(9 + u))] = ln((1 + 10λb)/(1 + 9λb))/(λb)."""
    lb = rate * window_s / 10.0
    return rate * seconds * math.log((1.0 + 10.0 * lb) / (1.0 + 9.0 * lb)) / lb


def test_a_breaker_in_front_of_a_callee_that_always_fails_lets_about_one_call_a_window_through() -> None:
    """The SRE formula's fixed point with no accepts: each call is rejected with requests/(requests + 1), so
    about one call per window gets through (125.8 in two minutes at 200 calls/s and a 1 s window, against 24,000
    without the breaker). Minute 0 is left out: the window starts empty (below min_requests nothing is
    rejected)."""
    spec = breaker_graph(k=2.0, window_s=1.0)
    minutes = play(spec, [12_000] * 3, fail={"leaf": 1.0})
    svc = sum(m[0] for m in minutes[1:])
    expected = passes_when_all_fail(200.0, 1.0, 120.0)
    passed = svc[1, W.M_ATTEMPTS]
    assert passed == pytest.approx(expected, abs=4.0 * math.sqrt(expected))  # ±45: counts, about Poisson
    assert svc[0, W.M_REJECTED] + passed == 24_000  # every call either rejected or sent
    assert svc[0, W.M_REJECTED] / 24_000 == pytest.approx(1.0 - expected / 24_000, abs=0.002)


def test_the_oracle_finds_the_same_fixed_point() -> None:
    spec = breaker_graph(k=2.0, window_s=1.0)
    report = simulate(spec, rate_per_s=200.0, requests=24_000, warmup=6_000, seed=2, failures={"leaf": 1.0})
    seconds = report.duration_s
    expected = passes_when_all_fail(200.0, 1.0, seconds)
    assert report.services["leaf"].attempts == pytest.approx(expected, abs=4.0 * math.sqrt(expected))
    assert report.services["api"].rejected + report.services["leaf"].attempts == 24_000


def test_a_breaker_whose_callee_succeeds_often_enough_rejects_nothing_and_changes_nothing() -> None:
    """requests ≤ K·accepts holds while the callee succeeds with more than 1/K of its calls: no call is rejected,
    no number drawn, and the minute is the same, bit for bit, as without the breaker (here a fifth of the calls
    fail, K = 2.5: a rejection needs fewer than 40 % accepted, below 10⁻⁵ even at the 20 requests of the minimum)."""
    with_breaker = breaker_graph(k=2.5, window_s=1.0)
    data = with_breaker.model_dump()
    del data["services"]["api"]["breaker"]
    without = GraphSpec.model_validate(data)
    a = play(with_breaker, [6000, 6000], fail={"leaf": 0.2})
    b = play(without, [6000, 6000], fail={"leaf": 0.2})
    assert sum(m[0][0, W.M_REJECTED] for m in a) == 0
    for (svc_a, client_a, hist_a), (svc_b, client_b, hist_b) in zip(a, b, strict=True):
        assert np.array_equal(svc_a, svc_b) and np.array_equal(client_a, client_b) and np.array_equal(hist_a, hist_b)


def test_a_rejected_call_is_retried_as_any_failed_call() -> None:
    """Retries 2 and a leaf that always fails: each request makes 3 tries (retries counted, the budget uncapped),
    each either rejected or sent, and every request fails."""
    spec = breaker_graph(k=2.0, window_s=1.0, retries=2)
    minutes = play(spec, [6000, 6000, 0], fail={"leaf": 1.0})
    svc = sum(m[0] for m in minutes)
    client = sum(m[1] for m in minutes)
    assert svc[0, W.M_RETRIES] == 2 * 12_000
    assert svc[0, W.M_REJECTED] + svc[1, W.M_ATTEMPTS] == 3 * 12_000
    assert client[W.MC_ERROR] == client[W.MC_DECIDED] == 12_000


def test_a_breaker_throttles_a_callee_failing_past_one_in_k_to_the_mean_fields_fixed_point() -> None:
    """A callee failing a share f of its calls with K·(1 − f) < 1: the breaker's fixed point (rejected calls
    counted as not accepted) lets through a share q = 1/(1 + R·(1 − K·(1 − f))) of the calls, R the requests in the
    window: here K 1.5, f ½, 200 calls/s, a 2 s window, about 250 calls in two minutes instead of 24,000. The
    throttled state is bursty (a lucky run of accepts opens it for a while), so four seeds are pooled, for the
    engine and for the oracle: each mean within 40 % of the fixed point's, and the two within 40 % of each other
    (measured: engine 299, oracle 228)."""
    spec = breaker_graph(k=1.5, window_s=2.0)
    lb = 200.0 * 0.2  # λ·b: R = λ·b·(9 + u)
    slope = 1.0 - 1.5 * 0.5
    share = math.log((1.0 + slope * 10.0 * lb) / (1.0 + slope * 9.0 * lb)) / (slope * lb)  # E[1/(1 + slope·R)]
    engine, oracle = [], []
    for seed in range(1, 5):
        minutes = play(spec, [12_000] * 3, fail={"leaf": 0.5}, seed=seed)
        engine.append(float(sum(m[0] for m in minutes[1:])[1, W.M_ATTEMPTS]) / 120.0)
        report = simulate(spec, rate_per_s=200.0, requests=24_000, warmup=12_000, seed=seed, failures={"leaf": 0.5})
        oracle.append(report.services["leaf"].attempts / report.duration_s)
    expected = 200.0 * share  # calls let through a second, 2.09
    assert np.mean(engine) == pytest.approx(expected, rel=0.4)
    assert np.mean(oracle) == pytest.approx(expected, rel=0.4)
    assert 1 / 1.4 < np.mean(engine) / np.mean(oracle) < 1.4


def test_the_engine_agrees_with_the_oracle_near_the_breakers_threshold() -> None:
    """K 2 and a callee failing 45 % of its calls, with a retry: K·(1 − f) just above 1, so the breaker rejects
    now and then, when the window's accepts run low. The engine and the oracle agree on the rejections, the
    attempts at the leaf, the retries and the successes per request."""
    spec = breaker_graph(k=2.0, window_s=2.0, retries=1)
    minutes = play(spec, [12_000] * 3, fail={"leaf": 0.45})
    svc = sum(m[0] for m in minutes[1:])
    client = sum(m[1] for m in minutes[1:])
    n = int(client[W.MC_DECIDED])
    oracle = simulate(spec, rate_per_s=200.0, requests=24_000, warmup=12_000, seed=4, failures={"leaf": 0.45})
    r = oracle.requests
    assert svc[0, W.M_REJECTED] / n == pytest.approx(oracle.services["api"].rejected / r, abs=0.01)
    assert svc[1, W.M_ATTEMPTS] / n == pytest.approx(oracle.services["leaf"].attempts / r, abs=0.03)
    assert svc[0, W.M_RETRIES] / n == pytest.approx(oracle.services["api"].retries / r, abs=0.03)
    assert client[W.MC_OK] / n == pytest.approx(oracle.succeeded / r, abs=0.02)


BREAKER_FILE = """
id = "breaker-chain"
version = 1
title = "t"
summary = "s"
briefing = "b"
start = "09:00"
minutes = 3

[graph]
entry = "api"
deadline_ms = 1000

[graph.services.api]
service_ms = 1
breaker = { k = 1.5, window_s = 10 }
calls = [{ to = "db" }]

[graph.services.db]
service_ms = 1
"""


def test_a_breaker_is_declared_in_the_file_and_refused_out_of_range() -> None:
    scenario = scenario_from_text(BREAKER_FILE, "my.toml")
    assert scenario.graph is not None
    breaker = scenario.graph.services["api"].breaker
    assert breaker is not None and (breaker.k, breaker.window_s, breaker.min_requests) == (1.5, 10.0, 20)
    for edit, line in [
        ("k = 1.5", "my.toml: graph.services.api.breaker.k: must be a number from 1 to 10, got 0.5"),
        ("window_s = 10", "my.toml: graph.services.api.breaker.window_s: must be a number from 0.1 to 60, got 61"),
        ("k = 1.5", "my.toml: graph.services.api.breaker.kk: Extra inputs are not permitted"),
    ]:
        bad = {
            "k = 1.5": "k = 0.5" if "breaker.k:" in line else "kk = 1.5",
            "window_s = 10": "window_s = 61",
        }[edit]
        with pytest.raises(ValueError) as refused:
            scenario_from_text(BREAKER_FILE.replace(edit, bad), "my.toml")
        assert str(refused.value).splitlines()[0] == line


def test_breaker_k_is_a_control_during_a_run_checked_in_one_place() -> None:
    """``api.breaker_k`` switches the api's breakers on (or off, 0) from its minute: the database failing every
    read, nothing is rejected before, most calls are after; a value out of range is refused naming the control."""
    from oncallsim import InvalidInput, Simulation
    from oncallsim.model.controls import coerce_control_value
    from oncallsim.simulation import Action

    text = BREAKER_FILE.replace("breaker = { k = 1.5, window_s = 10 }\n", "")
    text += '\n[[events]]\nkind = "service"\nservice = "db"\nat = "09:00"\nminutes = 10\nerrors = 1.0\n'
    records = Simulation(scenario_from_text(text, "my.toml"), seed=3, minutes=3).run([Action(1, "api.breaker_k", 2)])
    rejected = [r.extras["graph"]["services"]["api"]["breaker_rejected_per_s"] for r in records]
    attempts = [r.extras["graph"]["services"]["db"]["attempts_per_s"] for r in records]
    assert rejected[0] == 0.0 and rejected[2] > 0.9 * attempts[0]
    assert attempts[2] < 0.05 * attempts[0]
    assert coerce_control_value("api.breaker_k", "0") == 0.0
    assert coerce_control_value("api.breaker_k", 1.5) == 1.5
    with pytest.raises(InvalidInput, match=r"api\.breaker_k.*0 \(no breaker\) or a number from 1 to 10"):
        coerce_control_value("api.breaker_k", 0.5)


# --- a bound on a service's queue --------------------------------------------------------------------------------


def mmck_blocking(c: int, k: int, offered: float) -> float:
    """M/M/c/K: the chance an arrival finds all K places taken (c serving, K − c waiting), Erlang's formula for
    the stationary distribution, p_n ∝ aⁿ/n! up to c and aⁿ/(c!·c^(n−c)) beyond, computed with mpmath."""
    a = mpmath.mpf(offered)
    weights = [
        a**n / mpmath.factorial(n) if n <= c else a**n / (mpmath.factorial(c) * c ** (n - c)) for n in range(k + 1)
    ]
    return float(weights[k] / mpmath.fsum(weights))


def bounded_queue(max_queue: int) -> GraphSpec:
    return graph(
        "api",
        60_000.0,
        api={"service_ms": 10.0, "workers_per_instance": 4, "max_queue": max_queue},
    )


@pytest.mark.parametrize("max_queue", [1, 4])
def test_a_bounded_queue_refuses_as_erlangs_formula_says(max_queue: int) -> None:
    """One service, 4 workers, exponential work of 10 ms, 400 requests/s (4 erlangs, a load of 1) and room for
    ``max_queue`` waiting: the share refused on arrival is M/M/4/(4 + max_queue)'s blocking probability (0.2370 and
    0.1385). The engine: nine minutes after a first one left out, the minutes' shares as batch means (within 5
    standard errors); the oracle: 60,000 requests, within 0.012 (its own binomial band, widened for the
    correlation of a queue's successive arrivals)."""
    expected = mmck_blocking(4, 4 + max_queue, 4.0)
    spec = bounded_queue(max_queue)
    minutes = play(spec, [24_000] * 10, seed=6)
    shares = np.array([m[0][0, W.M_QUEUE_FULL] / m[0][0, W.M_ATTEMPTS] for m in minutes[1:]])
    se = shares.std(ddof=1) / math.sqrt(len(shares))
    assert shares.mean() == pytest.approx(expected, abs=5.0 * se + 0.002)
    client = sum(m[1] for m in minutes[1:])
    assert client[W.MC_ERROR] == sum(m[0][0, W.M_QUEUE_FULL] for m in minutes[1:])  # each refusal an error answer
    report = simulate(spec, rate_per_s=400.0, requests=60_000, warmup=2_000, seed=6)
    api = report.services["api"]
    assert api.queue_full / api.attempts == pytest.approx(expected, abs=0.012)
    assert 1.0 - report.ok.mean() == pytest.approx(api.queue_full / api.attempts, abs=1e-9)


def test_a_full_queue_answers_its_caller_with_an_error_its_breaker_counts_as_accepted() -> None:
    """A caller in front of a bounded leaf with a retry: the refused call fails at once and is retried; the
    caller's breaker (K 1) counts a refusal as accepted (a 429, as Kratos), so it never rejects: refusals are the
    callee's way of saying it is full, not that it is broken. Engine and oracle agree on the refusals and retries
    per request."""
    spec = graph(
        "api",
        60_000.0,
        api={"service_ms": 0.0, "distribution": "constant", "workers_per_instance": 500, "retries": 1,
             "breaker": {"k": 1.0, "window_s": 1.0}, "calls": [{"to": "leaf", "network_ms": 1.0}]},
        leaf={"service_ms": 10.0, "workers_per_instance": 4, "max_queue": 2},
    )  # fmt: skip
    minutes = play(spec, [24_000] * 3, seed=7)
    svc = sum(m[0] for m in minutes[1:])
    client = sum(m[1] for m in minutes[1:])
    n = int(client[W.MC_DECIDED])
    assert svc[0, W.M_REJECTED] == 0 and svc[1, W.M_QUEUE_FULL] > 0.1 * n
    report = simulate(spec, rate_per_s=400.0, requests=40_000, warmup=10_000, seed=7)
    r = report.requests
    assert report.services["api"].rejected == 0
    assert svc[1, W.M_QUEUE_FULL] / n == pytest.approx(report.services["leaf"].queue_full / r, abs=0.02)
    assert svc[0, W.M_RETRIES] / n == pytest.approx(report.services["api"].retries / r, abs=0.02)
    assert client[W.MC_OK] / n == pytest.approx(report.succeeded / r, abs=0.02)


def test_max_queue_in_the_file_and_as_a_control() -> None:
    """Declared 1 to 1,000,000 (refused below, in one line naming it); as a control, 0 takes the bound away."""
    from oncallsim import InvalidInput
    from oncallsim.model.controls import coerce_control_value

    text = BREAKER_FILE.replace("service_ms = 1\nbreaker", "service_ms = 1\nmax_queue = 0\nbreaker")
    with pytest.raises(ValueError) as refused:
        scenario_from_text(text, "my.toml")
    line = "my.toml: graph.services.api.max_queue: must be a whole number from 1 to 1000000, got 0"
    assert str(refused.value).splitlines()[0] == line
    assert coerce_control_value("db.max_queue", 0) == 0 and coerce_control_value("db.max_queue", "25") == 25
    with pytest.raises(InvalidInput, match=r"0 \(no bound\) or a whole number from 1 to 1000000"):
        coerce_control_value("db.max_queue", 2.5)
    bounded = scenario_from_text(text.replace("max_queue = 0", "max_queue = 1"), "my.toml")
    assert bounded.graph is not None and bounded.graph.services["api"].max_queue == 1


# --- Kratos's BBR limiter ---------------------------------------------------------------------------------------


def cpu_bound(limiter: str) -> GraphSpec:
    return graph("api", 1000.0, api={"service_ms": 10.0, "workers_per_instance": 4, "limiter": limiter})


def test_bbr_holds_a_cpu_bound_service_at_its_capacity_and_sheds_the_rest() -> None:
    """4 workers of 10 ms (400 requests/s at most) offered 600/s. Without the limiter the queue grows by 200 a
    second until its waits reach the 1 s deadline: most requests fail, the rest answer after nearly a second. With
    it, once the CPU estimate passes 800 ‰ (about 16 s at full load, within minute 0), the service sheds: at least
    the third a service of capacity c/S = 400/s cannot serve (1 − 400/600), and in fact enough to hold its CPU
    near the 800 ‰ it acts on (its workers busy 78–90 % of the time: the cap, maxPass × minRT, is about its 4
    workers, so a fifth arrival is shed), with a short queue and no timeout. The engine and the oracle agree on
    the shares (measured: 45.6 % shed, 54.4 % served, in both, two seeds)."""
    minutes = play(cpu_bound("off"), [36_000] * 3, seed=8)
    client = sum(m[1] for m in minutes[1:])
    assert client[W.MC_OK] / client[W.MC_DECIDED] < 0.3
    minutes = play(cpu_bound("bbr"), [36_000] * 4, seed=8)
    svc = sum(m[0] for m in minutes[1:])
    client = sum(m[1] for m in minutes[1:])
    n = int(client[W.MC_DECIDED])
    shed = svc[0, W.M_LIMITED] / svc[0, W.M_ATTEMPTS]
    ok = client[W.MC_OK] / n
    assert shed >= 1.0 / 3.0 - 0.01 and 0.5 < ok <= 400.0 / 600.0 + 0.01 and client[W.MC_DEADLINE] == 0
    assert 0.78 < svc[0, W.M_BUSY_S] / (4 * 180.0) < 0.9
    assert svc[0, W.M_WAIT_S] / svc[0, W.M_STARTED] < 0.02  # the queue stays short (under 20 ms on average)
    report = simulate(cpu_bound("bbr"), rate_per_s=600.0, requests=108_000, warmup=36_000, seed=8)
    api = report.services["api"]
    assert shed == pytest.approx(api.limited / api.attempts, abs=0.01)
    assert ok == pytest.approx(report.succeeded / report.requests, abs=0.01)


def test_bbr_never_sheds_at_a_service_whose_workers_wait_on_a_slow_callee() -> None:
    """In a chain the CPU is a service's workers doing their own work: a worker waiting on its callee burns none.
    An api of 4 workers doing 0.1 ms of work and waiting 50 ms on a leaf, offered 200 requests/s (10 held
    workers' worth): its workers are all held, its queue grows and the clients time out, yet its CPU reads
    about 0.5 % and the limiter sheds nothing (the engine and the oracle alike)."""
    spec = graph(
        "api",
        1000.0,
        api={"service_ms": 0.1, "distribution": "constant", "workers_per_instance": 4, "limiter": "bbr",
             "calls": [{"to": "leaf"}]},
        leaf={"service_ms": 50.0, "distribution": "constant", "workers_per_instance": 100},
    )  # fmt: skip
    minutes = play(spec, [12_000] * 2, seed=9)
    svc = sum(m[0] for m in minutes)
    client = sum(m[1] for m in minutes)
    assert svc[0, W.M_LIMITED] == 0 and client[W.MC_DEADLINE] > 0.5 * client[W.MC_DECIDED]
    report = simulate(spec, rate_per_s=200.0, requests=6_000, seed=9)
    assert report.services["api"].limited == 0 and report.ok.mean() < 0.5


def test_a_limiter_other_than_bbr_is_refused_naming_the_choices() -> None:
    text = BREAKER_FILE.replace("service_ms = 1\nbreaker", 'service_ms = 1\nlimiter = "token-bucket"\nbreaker')
    with pytest.raises(ValueError) as refused:
        scenario_from_text(text, "my.toml")
    assert str(refused.value).splitlines()[0] == "my.toml: graph.services.api.limiter: Input should be 'off' or 'bbr'"


# --- queue disciplines -------------------------------------------------------------------------------------------


def disciplined(discipline: str) -> GraphSpec:
    return graph("api", 60_000.0, api={"service_ms": 10.0, "workers_per_instance": 4, "discipline": discipline})


def erlang_c(c: int, offered: float) -> float:
    a = mpmath.mpf(offered)
    top = a**c / mpmath.factorial(c) * c / (c - a)
    return float(top / (mpmath.fsum(a**n / mpmath.factorial(n) for n in range(c)) + top))


def test_lifo_waits_as_long_on_average_as_fifo_with_five_times_the_second_moment() -> None:
    """M/M/4 at a load of 0.8 (4 workers of 10 ms, 320 requests/s). Both disciplines are work-conserving and blind
    to the work, so the chance to wait (Erlang C, 0.596) and the mean wait C/(cμ − λ) = 7.45 ms are the same. A
    request that waits under FIFO waits Exp(cμ − λ); under LIFO it waits while the workers, all busy, clear the
    requests that come after it: a busy period of an M/M/1 with arrivals λ and service cμ, whose second moment
    is 2/((cμ)²(1 − ρ)³), 1/(1 − ρ) = 5 times FIFO's 2/(cμ − λ)² (Kleinrock). The oracle's waits, batch means of
    20 batches within 5 standard errors; the engine's from its latency histogram (L = W + S, S independent: E[W²]
    = E[L²] − 2·E[W]·E[S] − E[S²]), minutes as batches, the same."""
    c, mu, lam = 4, 100.0, 320.0
    p_wait = erlang_c(c, lam / mu)
    mean = p_wait / (c * mu - lam)
    rho = lam / (c * mu)
    second = {"fifo": p_wait * 2.0 / (c * mu - lam) ** 2, "lifo": p_wait * 2.0 / ((c * mu) ** 2 * (1 - rho) ** 3)}
    for discipline in ("fifo", "lifo"):
        report = simulate(disciplined(discipline), rate_per_s=lam, requests=200_000, warmup=5_000, seed=10)
        waits = report.services["api"].waits_ms[:200_000] / 1000.0
        batches = waits.reshape(20, -1)
        for values, expected in ((batches.mean(axis=1), mean), ((batches**2).mean(axis=1), second[discipline])):
            se = values.std(ddof=1) / math.sqrt(len(values))
            assert values.mean() == pytest.approx(expected, abs=5.0 * se), (discipline, expected)
        minutes = play(disciplined(discipline), [19_200] * 11, seed=10)[1:]
        middles = W.HIST_FLOOR_S * W.HIST_RATIO ** (np.arange(W.HIST_BINS) - 0.5)  # each bin's (geometric)
        firsts, seconds = [], []
        for svc, _, hist in minutes:  # every client answered, after its wait and its work: L = W + S
            wait = svc[0, W.M_WAIT_S] / svc[0, W.M_STARTED]
            firsts.append(wait)
            seconds.append(float((hist * middles**2).sum() / hist.sum()) - 2.0 * wait * 0.010 - 2.0 * 0.010**2)
        for values, expected in ((np.array(firsts), mean), (np.array(seconds), second[discipline])):
            se = values.std(ddof=1) / math.sqrt(len(values))
            assert values.mean() == pytest.approx(expected, abs=5.0 * se + 0.01 * expected), (discipline, expected)


def test_a_discipline_other_than_fifo_or_lifo_is_refused() -> None:
    text = BREAKER_FILE.replace("service_ms = 1\nbreaker", 'service_ms = 1\ndiscipline = "codel"\nbreaker')
    with pytest.raises(ValueError) as refused:
        scenario_from_text(text, "my.toml")
    line = "my.toml: graph.services.api.discipline: Input should be 'fifo' or 'lifo'"
    assert str(refused.value).splitlines()[0] == line


@pytest.mark.parametrize(("rate", "fail"), [(300.0, 0.3), (1500.0, 0.1)])
def test_the_engine_agrees_with_the_oracle_with_the_mechanisms_together(rate: float, fail: float) -> None:
    """The docs' checkout with orders' breaker on the database (K 1.2) and a small database (16 workers, 10
    waiting at most, LIFO, BBR), the database failing 30 % (or 10 %) of its reads, light and overloaded: the same
    shares of successes and, per request at each service, attempts, breaker rejections, refusals for a full queue,
    and failures begun there (measured: rejections 1.289 against 1.278 and 0.681 against 0.687 per request,
    refusals 0.054 against 0.048, failures begun at the database 0.849 against 0.844)."""
    from tests.test_graph_spec import doc_example

    declared = scenario_from_text(doc_example(), "graphs.md").graph
    assert declared is not None
    data = declared.model_dump(exclude_none=True)
    data["services"]["orders"]["breaker"] = {"k": 1.2, "window_s": 2.0}
    data["services"]["db"].update(instances=1, workers_per_instance=16, max_queue=10, discipline="lifo", limiter="bbr")
    spec = GraphSpec.model_validate(data)
    minutes = play(spec, [int(rate * 60)] * 3, fail={"db": fail})
    svc = sum(m[0] for m in minutes[1:])
    client = sum(m[1] for m in minutes[1:])
    n = int(client[W.MC_DECIDED])
    oracle = simulate(spec, rate_per_s=rate, requests=int(rate * 40), warmup=int(rate * 20), seed=5,
                      failures={"db": fail})  # fmt: skip
    r = oracle.requests
    assert client[W.MC_OK] / n == pytest.approx(oracle.succeeded / r, abs=0.02)
    assert svc[1, W.M_REJECTED] > 0.5 * n
    for s, name in enumerate(["api", "orders", "db"]):
        mine, theirs = svc[s], oracle.services[name]
        for column, value in [
            (W.M_ATTEMPTS, theirs.attempts),
            (W.M_REJECTED, theirs.rejected),
            (W.M_QUEUE_FULL, theirs.queue_full),
            (W.M_LIMITED, theirs.limited),
            (W.M_BEGUN, theirs.failures_begun),
        ]:
            assert mine[column] / n == pytest.approx(value / r, abs=0.02 + 0.05 * value / r), (name, column)


# --- wasted work ------------------------------------------------------------------------------------------------


def _abandoning_chain(timeout_ms: float) -> object:
    """An api (no work of its own) calling a leaf of constant 50 ms, its callers' timeout ``timeout_ms``, no
    network delay, workers to spare: every call either answers in 50 ms or is given up on at the timeout while
    the leaf works on (a cancellation stops a worker only when its work ends)."""
    from oncallsim import Simulation
    from oncallsim.scenarios.registry import scenario_from_dict

    data = {
        "id": "waste", "version": 1, "title": "t", "summary": "s", "briefing": "b", "start": "09:00", "minutes": 3,
        "params": {"base_requests_per_s": 200.0, "diurnal_amplitude": 0.0},
        "graph": {"entry": "api", "deadline_ms": 1000.0, "services": {
            "api": {"service_ms": 0.0, "distribution": "constant", "instances": 10, "workers_per_instance": 20,
                    "calls": [{"to": "leaf"}]},
            "leaf": {"service_ms": 50.0, "distribution": "constant", "workers_per_instance": 100,
                     "timeout_ms": timeout_ms}}},
    }  # fmt: skip
    return Simulation(scenario_from_dict(data, "waste"), seed=3)


def test_work_for_a_caller_that_gave_up_is_wasted_work() -> None:
    """With a 20 ms timeout on a 50 ms leaf every leaf attempt outlives its caller's wait: all of the leaf's 50 ms
    are wasted, none of the api's 20 ms (its client still waits for its error), so the share is 50 / (20 + 50) of
    all workers' time, exactly (constant times); with a 200 ms timeout nothing is. The debrief reads the run's
    share the same way (a chain's busy time is every service's, not its entry's alone)."""
    from oncallsim import Simulation
    from oncallsim.debrief import make_report

    for timeout_ms, share in ((20.0, 50.0 / 70.0), (200.0, 0.0)):
        sim = _abandoning_chain(timeout_ms)
        assert isinstance(sim, Simulation)
        records = sim.run()
        minute = records[1]  # a whole minute in the middle: what began in it ended in it, but for its edges
        leaf = minute.extras["graph"]["services"]["leaf"]
        assert minute.extra("wasted_work_share") == pytest.approx(share, abs=0.002), timeout_ms
        assert leaf["wasted_s"] == pytest.approx(leaf["busy_s"] if share else 0.0, abs=0.5)  # the edges: 10 calls
        assert make_report(sim, effects=False).wasted_work_share == pytest.approx(share, abs=0.002)

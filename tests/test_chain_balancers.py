"""A service's ``balancer`` (docs/graphs.md, "Balancers: a queue per instance") in the chain oracle
(oncallsim/verify/chains.py), checked on one service (an entry with no calls, exponential work, no timeout, a
deadline no wait reaches) against closed forms computed here with mpmath, not with the oracle's code:

- random: Poisson thinning makes each of n instances an M/M/k queue of λ/n (Erlang C), and pooled one M/M/(n·k);
- round-robin, one worker an instance: every n-th arrival of a Poisson stream, Erlang-n gaps, a GI/M/1 queue;
- least-outstanding, which has no closed form: between pooled and round-robin;
- max_queue at each instance with random: M/M/k/(k+K) of λ/n, Erlang's loss with a finite queue;
- max_queue with least-outstanding or round-robin: a finite Markov chain on the instances' attempts, solved.

The oracle's mean wait is compared within four standard errors, estimated by batch means (20 batches of the
waits in start order; across ten seeds they agree with the seeds' own spread). The request engine
(oncallsim/model/chain) is checked against the same closed forms and Markov chains below, its error from its
minutes as batches; pooled stays what it was, bit for bit (the other chain tests hold its numbers). The closed
forms Erlang C and GI/M/1 are ``oncallsim validate``'s (verify/chain_checks.py), themselves checked against
Lindley's recursion in tests/test_chain_checks.py."""

from __future__ import annotations

import itertools
import math

import mpmath
import numpy as np
import pytest

from oncallsim.model.chain import world as W
from oncallsim.model.chain.drive import chain_minute_of, new_chain
from oncallsim.model.chain.engine import set_instances
from oncallsim.model.errors import InvalidInput
from oncallsim.scenarios.graph import GraphSpec, layout_of
from oncallsim.scenarios.registry import scenario_from_text
from oncallsim.verify.chain_checks import erlang_c_wait_s, gi_m_1_erlang_sigma, gi_m_1_erlang_wait_s
from oncallsim.verify.chains import ChainReport, simulate

S = 10.0  # the mean work, ms
BATCHES = 20


def one_service(
    instances: int, workers: int, balancer: str, max_queue: int | None = None, discipline: str = "fifo"
) -> GraphSpec:
    service: dict[str, object] = {
        "instances": instances,
        "workers_per_instance": workers,
        "service_ms": S,
        "balancer": balancer,
        "discipline": discipline,
    }
    if max_queue is not None:
        service["max_queue"] = max_queue
    return GraphSpec.model_validate({"entry": "s", "deadline_ms": 600_000.0, "services": {"s": service}})


def run(spec: GraphSpec, rate_per_ms: float, requests: int, seed: int) -> ChainReport:
    return simulate(spec, rate_per_s=1000.0 * rate_per_ms, requests=requests, seed=seed, warmup=2000)


def batch_mean(values: np.ndarray) -> tuple[float, float]:
    """The mean and its standard error from BATCHES consecutive batches (the waits are correlated over a few
    hundred arrivals at these loads; a batch holds thousands)."""
    size = len(values) // BATCHES
    means = values[: size * BATCHES].reshape(BATCHES, size).mean(axis=1)
    return float(values.mean()), float(means.std(ddof=1) / math.sqrt(BATCHES))


def erlang_c_wait(c: int, rate: float, mean: float) -> float:
    """M/M/c's mean wait in the queue, in the unit of ``mean``."""
    return erlang_c_wait_s(c, rate, mean)


def erlang_gaps_wait(n: int, rate: float, mean: float) -> tuple[float, float]:
    """GI/M/1 with Erlang-n gaps (every n-th arrival of a Poisson stream of λ): its mean wait, and σ."""
    return gi_m_1_erlang_wait_s(n, rate, mean), gi_m_1_erlang_sigma(n, rate, mean)


def finite_queue_blocking(k: int, room: int, rate: float, mean: float) -> float:
    """M/M/k/(k + K)'s blocking (PASTA: an arrival finds the system full): p_j ∝ aʲ/j! up to k and
    aᵏ/k!·(a/k)^(j−k) beyond, up to k + K."""
    a = mpmath.mpf(rate) * mean
    weights = [a**j / mpmath.factorial(j) if j <= k else a**k / mpmath.factorial(k) * (a / k) ** (j - k)
               for j in range(k + room + 1)]  # fmt: skip
    return float(weights[-1] / mpmath.fsum(weights))


def test_random_makes_each_instance_an_m_m_k_queue_and_pooling_waits_far_less() -> None:
    """4 instances of 2 workers at 70 %: random gives each instance an M/M/2 of λ/4, mean wait 9.61 ms; the same
    fleet pooled is one M/M/8, 1.13 ms."""
    n, k, rate = 4, 2, 0.7 * 8 / S
    random_wait, random_se = batch_mean(run(one_service(n, k, "random"), rate, 60_000, seed=11).services["s"].waits_ms)
    pooled_wait, pooled_se = batch_mean(run(one_service(n, k, "pooled"), rate, 60_000, seed=11).services["s"].waits_ms)
    expected_random, expected_pooled = erlang_c_wait(k, rate / n, S), erlang_c_wait(n * k, rate, S)
    assert expected_random == pytest.approx(9.608, abs=1e-3) and expected_pooled == pytest.approx(1.128, abs=1e-3)
    assert random_wait == pytest.approx(expected_random, abs=4.0 * random_se)
    assert pooled_wait == pytest.approx(expected_pooled, abs=4.0 * pooled_se)
    assert pooled_wait + 4.0 * pooled_se < (random_wait - 4.0 * random_se) / 5.0


def test_round_robin_with_one_worker_an_instance_is_a_queue_fed_erlang_gaps() -> None:
    """4 instances of 1 worker at 70 %: each sees every 4th arrival, Erlang-4 gaps; σ = 0.5529, mean wait
    12.37 ms (random at that load: M/M/1's 23.3 ms)."""
    n, rate = 4, 0.7 * 4 / S
    expected, sigma = erlang_gaps_wait(n, rate, S)
    assert sigma == pytest.approx(0.5529, abs=1e-4) and expected == pytest.approx(12.37, abs=0.01)
    wait, se = batch_mean(run(one_service(n, 1, "round-robin"), rate, 60_000, seed=12).services["s"].waits_ms)
    assert wait == pytest.approx(expected, abs=4.0 * se)


def test_round_robin_with_two_instances_at_half_load() -> None:
    """2 instances of 1 worker at 50 %: Erlang-2 gaps, σ = (3 − √5)/2 and a mean wait of S·σ/(1 − σ), 6.18 ms."""
    rate = 0.5 * 2 / S
    expected, sigma = erlang_gaps_wait(2, rate, S)
    assert sigma == pytest.approx((3.0 - math.sqrt(5.0)) / 2.0, abs=1e-12)
    wait, se = batch_mean(run(one_service(2, 1, "round-robin"), rate, 40_000, seed=13).services["s"].waits_ms)
    assert wait == pytest.approx(expected, abs=4.0 * se)


def test_the_balancers_in_order_pooled_least_outstanding_round_robin_random() -> None:
    """8 instances of 1 worker at 80 %: pooled (one M/M/8, 2.86 ms) ≤ least-outstanding (no closed form; it only
    misses an idle worker elsewhere while its own queue holds work) ≤ round-robin (Erlang-8 gaps, 19.8 ms) ≤
    random (M/M/1, 40 ms), each gap beyond four standard errors of the difference."""
    n, rate = 8, 0.8 * 8 / S
    waits = {}
    for balancer in ("pooled", "least-outstanding", "round-robin", "random"):
        report = run(one_service(n, 1, balancer), rate, 50_000, seed=14)
        waits[balancer] = batch_mean(report.services["s"].waits_ms)
    order = list(waits.values())
    for (low, low_se), (high, high_se) in itertools.pairwise(order):
        assert high - low > 4.0 * math.hypot(low_se, high_se)
    assert waits["pooled"][0] == pytest.approx(erlang_c_wait(n, rate, S), abs=4.0 * waits["pooled"][1])
    assert waits["round-robin"][0] == pytest.approx(erlang_gaps_wait(n, rate, S)[0], abs=4.0 * waits["round-robin"][1])
    assert waits["random"][0] == pytest.approx(erlang_c_wait(1, rate / n, S), abs=4.0 * waits["random"][1])


@pytest.mark.parametrize("discipline", ["fifo", "lifo"])
def test_with_one_instance_every_balancer_is_the_pooled_queue_to_the_bit(discipline: str) -> None:
    """One instance has nothing to choose between: no number is drawn, and the runs are the same as pooled, to
    the bit (a bounded queue, so refusals too)."""
    reports = [
        run(one_service(1, 3, balancer, max_queue=4, discipline=discipline), 0.95 * 3 / S, 4000, seed=15)
        for balancer in ("pooled", "random", "round-robin", "least-outstanding")
    ]
    first = reports[0]
    assert first.services["s"].queue_full > 0
    for other in reports[1:]:
        assert np.array_equal(other.latency_ms, first.latency_ms) and np.array_equal(other.ok, first.ok)
        assert np.array_equal(other.services["s"].waits_ms, first.services["s"].waits_ms)
        assert _same_service(other, first)


def _same_service(a: ChainReport, b: ChainReport) -> bool:
    """ServiceReport holds arrays (== on the dataclass is ambiguous): its fields compared one by one."""
    x, y = a.services["s"], b.services["s"]
    for name in x.__dataclass_fields__:
        u, v = getattr(x, name), getattr(y, name)
        if isinstance(u, np.ndarray):
            if not np.array_equal(u, v):
                return False
        elif u != v:
            return False
    return True


def test_max_queue_bounds_each_instances_queue() -> None:
    """4 instances of 2 workers at 90 %, random, max_queue 3: each instance an M/M/2/5 of λ/4, refusing
    14.1 % (the fleet pooled with the same room, max_queue 12, one M/M/8/20, would refuse 2.4 %). The refused
    share, by batch means over the entry requests (each refused one fails its client; nothing else fails here),
    against Erlang's loss."""
    n, k, room, rate = 4, 2, 3, 0.9 * 8 / S
    expected = finite_queue_blocking(k, room, rate / n, S)
    assert expected == pytest.approx(0.1411, abs=1e-4)
    assert finite_queue_blocking(n * k, n * room, rate, S) == pytest.approx(0.0241, abs=1e-4)
    report = run(one_service(n, k, "random", max_queue=room), rate, 60_000, seed=16)
    service = report.services["s"]
    assert service.queue_full == int((~report.ok).sum()) and service.attempts == 60_000
    share, se = batch_mean((~report.ok).astype(float))
    assert share == service.queue_full / service.attempts
    assert share == pytest.approx(expected, abs=4.0 * se)


def bounded_fleet(n: int, k: int, room: int, rate: float, mean: float, balancer: str) -> tuple[float, float]:
    """A fleet of n instances of k workers and room for ``room`` waiting at each, exponential work: a finite
    Markov chain on each instance's attempts (at work and waiting; nothing else is outstanding here), with
    round-robin's counter modulo n besides. An arrival goes to the instance the balancer names (least-outstanding:
    each of the fewest-holding instances with the same chance; round-robin: the counter's, the counter moving on
    even when it is refused) and is refused when that instance holds k + room; an instance's attempt finishes at
    μ·min(held, k). Its stationary distribution (mpmath, π Q = 0 with Σπ = 1) gives the refused share (PASTA)
    and the mean wait of the accepted (Little: the attempts waiting over the accepted rate)."""
    cap = k + room
    lam, mu = mpmath.mpf(rate), 1 / mpmath.mpf(mean)
    phases = n if balancer == "round-robin" else 1
    states = [(x, c) for x in itertools.product(range(cap + 1), repeat=n) for c in range(phases)]
    index = {state: i for i, state in enumerate(states)}
    size = len(states)
    q = mpmath.zeros(size, size)
    refused = [mpmath.mpf(0)] * size
    for (x, c), i in index.items():
        if balancer == "round-robin":
            targets, after = [(c, mpmath.mpf(1))], (c + 1) % n
        else:
            tied = [j for j in range(n) if x[j] == min(x)]
            targets, after = [(j, mpmath.mpf(1) / len(tied)) for j in tied], 0
        for j, p in targets:
            if x[j] >= cap:
                refused[i] += p
                q[i, index[(x, after)]] += lam * p
            else:
                q[i, index[((*x[:j], x[j] + 1, *x[j + 1 :]), after)]] += lam * p
        for j in range(n):
            if x[j] > 0:
                q[i, index[((*x[:j], x[j] - 1, *x[j + 1 :]), c)]] += mu * min(x[j], k)
    for i in range(size):
        q[i, i] -= mpmath.fsum(q[i, j] for j in range(size))  # rows sum to 0 (a self-loop cancels out)
    a = q.T
    for j in range(size):
        a[size - 1, j] = 1
    b = mpmath.zeros(size, 1)
    b[size - 1] = 1
    pi = mpmath.lu_solve(a, b)
    share = mpmath.fsum(pi[i] * refused[i] for i in range(size))
    waiting = mpmath.fsum(pi[i] * sum(max(held - k, 0) for held in states[i][0]) for i in range(size))
    return float(share), float(waiting / (lam * (1 - share)))


@pytest.mark.parametrize(
    ("balancer", "n", "k", "room", "share", "wait"),
    [
        ("least-outstanding", 3, 1, 2, 0.0803, 8.704),
        ("least-outstanding", 2, 2, 2, 0.1016, 3.734),
        ("round-robin", 2, 1, 2, 0.1636, 8.894),
    ],
)
def test_a_bounded_fleet_refuses_and_waits_as_its_markov_chain_says(
    balancer: str, n: int, k: int, room: int, share: float, wait: float
) -> None:
    """Least-outstanding has no closed form, but with a bound on each instance's queue its fleet is a finite
    Markov chain, solved exactly here (so is round-robin's, with its counter): at a load of 0.9, the oracle's
    refused share (batch means over the entry requests) and mean wait within four standard errors of it. 3
    instances of 1 worker with room for 2, least-outstanding, refuse 8.03 %, where random refuses M/M/1/3's
    21.2 %."""
    rate = 0.9 * n * k / S
    expected_share, expected_wait = bounded_fleet(n, k, room, rate, S, balancer)
    assert expected_share == pytest.approx(share, abs=1e-4) and expected_wait == pytest.approx(wait, abs=1e-3)
    report = run(one_service(n, k, balancer, max_queue=room), rate, 50_000, seed=17)
    assert report.services["s"].queue_full == int((~report.ok).sum())
    measured_share, share_se = batch_mean((~report.ok).astype(float))
    measured_wait, wait_se = batch_mean(report.services["s"].waits_ms)
    assert measured_share == pytest.approx(expected_share, abs=4.0 * share_se)
    assert measured_wait == pytest.approx(expected_wait, abs=4.0 * wait_se)


def overloaded_chain(balancer: str) -> GraphSpec:
    """A chain where an attempt ends every way it can: timeouts, hedges, retries, a breaker, BBR, LIFO, bounded
    queues and an asynchronous service, each service behind ``balancer``."""
    return GraphSpec.model_validate({"entry": "a", "deadline_ms": 200.0, "services": {
        "a": {"instances": 3, "workers_per_instance": 3, "service_ms": 5.0, "balancer": balancer, "limiter": "bbr",
              "max_queue": 4, "retries": 2, "hedge_after_quantile": 0.9, "breaker": {},
              "calls": [{"to": "b", "network_ms": 2.0}, {"to": "c", "network_ms": 1.0, "probability": 0.5}]},
        "b": {"instances": 4, "workers_per_instance": 2, "service_ms": 12.0, "timeout_ms": 40.0, "balancer": balancer,
              "discipline": "lifo", "max_queue": 3},
        "c": {"instances": 2, "workers_per_instance": 2, "service_ms": 6.0, "asynchronous": True, "timeout_ms": 30.0,
              "balancer": balancer, "calls": [{"to": "b", "network_ms": 1.0}]},
    }})  # fmt: skip


@pytest.mark.parametrize("balancer", ["random", "round-robin", "least-outstanding"])
def test_every_attempt_given_an_instance_is_finished_there(balancer: str) -> None:
    """Least-outstanding reads each instance's outstanding count, so every way an attempt ends at a service must
    take it off exactly once: answered, dropped as cancelled (waiting, at work, waiting on calls), refused past
    its deadline, abandoned, refused for a full queue. An overloaded chain with timeouts, hedges, retries, a
    breaker, BBR, LIFO, bounded queues and an asynchronous service runs every one of them; when it has played
    out, nothing is outstanding, every worker is free and every queue empty (a leak or a double count would
    show)."""
    import random

    from oncallsim.verify import chains

    spec = overloaded_chain(balancer)
    sim = chains._Chain(spec, random.Random(3), {"a": 0.02}, spec.deadline_ms)
    report = sim.run(1500.0, 8000, 500)
    for name, service in sim.services.items():
        assert len(service.instances) == spec.services[name].instances
        for instance in service.instances:
            assert (instance.outstanding, instance.free, len(instance.queue)) == (
                0,
                spec.services[name].workers_per_instance,
                0,
            )
    a, b, c = (report.services[name] for name in "abc")
    assert a.queue_full > 0 and b.queue_full + b.refused > 0 and b.cancelled > 0 and c.cancelled > 0
    assert a.hedges > 0 and a.timeouts > 0 and a.retries > 0


# --- the request engine -------------------------------------------------------------------------------------------

MINUTES = 16  # the engine's minutes of Poisson arrivals; the first left out (the queues start empty)


def engine_waits(spec: GraphSpec, rate_per_ms: float, seed: int = 7, measure: int = W.M_WAIT_S) -> tuple[float, float]:
    """The engine's mean wait for a worker (ms) over MINUTES − 1 minutes, and 4 standard errors of it from the
    minutes as batches (10 ms jobs: a minute is thousands of busy periods apart); ``measure`` M_QUEUE_FULL: the
    share of arrivals refused for a full queue instead."""
    world = new_chain(layout_of(spec), seed)
    per_minute = []
    total = count = 0.0
    for minute in range(MINUTES):
        world = chain_minute_of(world, minute, round(rate_per_ms * 60_000.0))
        if minute:
            m = world.m_svc[0]
            of = m[W.M_STARTED] if measure == W.M_WAIT_S else m[W.M_ATTEMPTS]
            scale = 1000.0 if measure == W.M_WAIT_S else 1.0
            per_minute.append(scale * m[measure] / of)
            total += scale * m[measure]
            count += of
    return total / count, 4.0 * float(np.std(per_minute, ddof=1)) / math.sqrt(len(per_minute))


def test_the_engine_random_makes_each_instance_an_m_m_k_queue() -> None:
    """Ten instances of two workers at ρ = 0.8 behind random wait 17.8 ms (each an M/M/2 of λ/10), behind one
    queue for the twenty 0.64 ms (M/M/20)."""
    rate = 0.8 * 20 / S
    random_wait, band = engine_waits(one_service(10, 2, "random"), rate)
    assert random_wait == pytest.approx(erlang_c_wait(2, rate / 10, S), abs=band)
    pooled_wait, band = engine_waits(one_service(10, 2, "pooled"), rate)
    assert pooled_wait == pytest.approx(erlang_c_wait(20, rate, S), abs=band)
    assert pooled_wait < random_wait / 10


def test_the_engine_round_robin_is_a_queue_fed_erlang_gaps() -> None:
    """Ten single-worker instances in turn at ρ = 0.8: GI/M/1 with Erlang-10 gaps, 19.2 ms, against random's
    M/M/1, 40 ms."""
    rate = 0.8 * 10 / S
    wait, band = engine_waits(one_service(10, 1, "round-robin"), rate)
    assert wait == pytest.approx(erlang_gaps_wait(10, rate, S)[0], abs=band)
    at_random, band = engine_waits(one_service(10, 1, "random"), rate)
    assert at_random == pytest.approx(erlang_c_wait(1, rate / 10, S), abs=band)


def test_the_engine_balancers_in_order_and_least_outstanding_as_the_oracle() -> None:
    """Eight single-worker instances at ρ = 0.8, as the oracle's order above: pooled < least-outstanding <
    round-robin < random; least-outstanding, which has no closed form, as the oracle finds it (their errors
    added)."""
    rate = 0.8 * 8 / S
    waits = {
        name: engine_waits(one_service(8, 1, name), rate)
        for name in ("pooled", "least-outstanding", "round-robin", "random")
    }
    order = list(waits.values())
    for (low, low_band), (high, high_band) in itertools.pairwise(order):
        assert high - low > math.hypot(low_band, high_band)
    oracle, se = batch_mean(run(one_service(8, 1, "least-outstanding"), rate, 50_000, seed=14).services["s"].waits_ms)
    engine, band = waits["least-outstanding"]
    assert engine == pytest.approx(oracle, abs=math.hypot(band, 4.0 * se))


@pytest.mark.parametrize(("balancer", "n", "k", "room"), [("least-outstanding", 3, 1, 2), ("round-robin", 2, 1, 2)])
def test_the_engine_bounded_fleet_as_its_markov_chain_says(balancer: str, n: int, k: int, room: int) -> None:
    """A bound on each instance's queue makes the fleet a finite Markov chain (``bounded_fleet``): at ρ = 0.9 the
    engine refuses and waits as it says (least-outstanding 3 × 1, room 2: 8.03 %, 8.70 ms)."""
    rate = 0.9 * n * k / S
    expected_share, expected_wait = bounded_fleet(n, k, room, rate, S, balancer)
    spec = one_service(n, k, balancer, max_queue=room)
    share, share_band = engine_waits(spec, rate, measure=W.M_QUEUE_FULL)
    wait, wait_band = engine_waits(spec, rate)
    assert share == pytest.approx(expected_share, abs=share_band)
    assert wait == pytest.approx(expected_wait, abs=wait_band)


def test_the_engine_max_queue_bounds_each_instance_as_erlangs_finite_queue() -> None:
    """Random, max_queue 3 at each of 10 instances of 2 workers at ρ = 0.9: each an M/M/2/5 of λ/10, refusing
    14.1 %."""
    rate = 0.9 * 20 / S
    refused, band = engine_waits(one_service(10, 2, "random", max_queue=3), rate, measure=W.M_QUEUE_FULL)
    assert refused == pytest.approx(finite_queue_blocking(2, 3, rate / 10, S), abs=band)


@pytest.mark.parametrize("discipline", ["fifo", "lifo"])
def test_the_engine_with_one_instance_every_balancer_is_the_pooled_queue(discipline: str) -> None:
    """One instance in rotation: nothing to choose, nothing drawn: the engine's run is pooled's, to the bit."""
    rate = 0.95 * 3 / S
    runs = []
    for balancer in ("pooled", "random", "round-robin", "least-outstanding"):
        world = new_chain(layout_of(one_service(1, 3, balancer, max_queue=4, discipline=discipline)), 5)
        world = chain_minute_of(world, 0, round(rate * 60_000.0))
        runs.append((world.m_svc.tobytes(), world.c_hist.tobytes()))
    assert len(set(runs)) == 1


def test_the_engine_instances_out_of_rotation_finish_what_they_hold() -> None:
    """Down from 10 instances to 5 between minutes: the five out of rotation finish their queues and get nothing
    new; the five left take every arrival (ρ = 0.8 of them: M/M/2 of λ/5)."""
    spec = one_service(10, 2, "random")
    layout = layout_of(spec)
    world = new_chain(layout, 3)
    rate = 0.4 * 20 / S
    world = chain_minute_of(world, 0, round(rate * 60_000.0))
    set_instances(world, layout, 0, 5)
    per_minute = []
    for minute in range(1, 10):
        world = chain_minute_of(world, minute, round(rate * 60_000.0))
        m = world.m_svc[0]
        per_minute.append(1000.0 * m[W.M_WAIT_S] / m[W.M_STARTED])
    first = int(world.queue_first[0])
    out = world.queues[first + 5 : first + 10]
    assert (out[:, W.Q_OUT] == 0).all() and (out[:, W.Q_LEN] == 0).all() and (out[:, W.Q_FREE] == 2).all()
    late = per_minute[1:]
    band = 4.0 * float(np.std(late, ddof=1)) / math.sqrt(len(late))
    assert float(np.mean(late)) == pytest.approx(erlang_c_wait(2, rate / 5, S), abs=band)


@pytest.mark.parametrize("balancer", ["random", "round-robin", "least-outstanding"])
def test_the_engine_finishes_every_attempt_where_it_was_given(balancer: str) -> None:
    """The oracle's accounting check above, on the engine: the same overloaded chain (every way an attempt ends),
    then minutes without arrivals: nothing outstanding, every worker free, every queue empty."""
    spec = overloaded_chain(balancer)
    layout = layout_of(spec)
    world = new_chain(layout, 3)
    world.svc_r[0, W.SR_FAIL] = 0.02
    seen = np.zeros_like(world.m_svc)
    for minute, count in enumerate((90_000, 0, 0)):
        world = chain_minute_of(world, minute, count)
        seen += world.m_svc
    for s, service in enumerate(spec.services.values()):
        queues = world.queues[world.queue_first[s] : world.queue_first[s] + service.instances]
        assert (queues[:, W.Q_OUT] == 0).all() and (queues[:, W.Q_LEN] == 0).all()
        assert (queues[:, W.Q_FREE] == service.workers_per_instance).all()
    a, b, c = seen
    assert a[W.M_QUEUE_FULL] > 0 and b[W.M_QUEUE_FULL] + b[W.M_REFUSED] > 0 and b[W.M_CANCELLED] > 0
    assert c[W.M_CANCELLED] > 0 and a[W.M_HEDGES] > 0 and a[W.M_TIMEOUTS] > 0 and a[W.M_RETRIES] > 0


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
    with pytest.raises(InvalidInput) as refused:
        scenario_from_text(text, "b")
    assert "graph.services.a.balancer" in str(refused.value)
    assert "least-outstanding" in str(refused.value)

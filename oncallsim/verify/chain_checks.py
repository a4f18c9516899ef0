"""Chains of services in the request engine against what it did not compute (issue 24; docs/graphs.md): retries
multiplying layer by layer (closed form), fan-out making the rare slow reply common (the tail at scale),
hedging against the separate oracle (``verify/chains.py``, plain Python, one heap), and a service's balancer
against queueing's closed forms (Erlang C, GI/M/1) and the oracle.

Every run drives the engine's chain minute directly (``model.chain.drive``): a minute of entry requests, then a
minute without, so that every request's attempts are counted.
"""

from __future__ import annotations

import math
import statistics
from typing import Any, NamedTuple

import mpmath
import numpy as np

from oncallsim.model.chain import world as W
from oncallsim.model.chain.drive import chain_minute_of, new_chain
from oncallsim.model.chain.measure import hist_quantile_s
from oncallsim.scenarios.graph import GraphSpec, layout_of
from oncallsim.verify.chains import simulate
from oncallsim.verify.kratos import _table, _yes

__all__ = [
    "ChainChecks",
    "chain_checks",
    "chains_finding",
    "chains_section",
    "erlang_c_wait_s",
    "expected_leaf_attempts",
    "gi_m_1_erlang_sigma",
    "gi_m_1_erlang_wait_s",
    "leaf_attempts_second_moment",
]

LEAF_MEAN_MS = 10.0


class AmplificationRow(NamedTuple):
    layers: int
    retries: int
    failure: float
    requests: int
    measured: float  # leaf attempts per entry request
    expected: float
    half: float  # the measured mean's 95 % half-width (0 when every request costs the same)


class TailRow(NamedTuple):
    fan_out: int
    pages: int
    slow_share: float  # pages slower than the leaves' p99
    expected: float  # 1 − (1 − e^(−t/m))ⁿ at the bin edge t just above τ (1 − 0.99ⁿ at τ)
    half: float


class HedgeRow(NamedTuple):
    quantile: float
    engine_p99_ms: float
    oracle_p99_ms: float
    engine_extra: float  # hedges per leaf call
    oracle_extra: float
    unhedged_p99_ms: float  # the slowest of n leaves' p99, closed form


class BalancerRow(NamedTuple):
    balancer: str
    instances: int
    workers: int  # per instance
    utilization: float
    engine_ms: float  # the mean wait for a worker
    half: float  # 3 standard errors (the minutes as batches; the oracle's, by batch means, added)
    expected_ms: float
    source: str  # where the expected value comes from


class ChainChecks(NamedTuple):
    amplification: tuple[AmplificationRow, ...]
    tails: tuple[TailRow, ...]
    hedges: tuple[HedgeRow, ...]
    balancers: tuple[BalancerRow, ...] = ()

    @property
    def ok(self) -> bool:
        return (
            all(abs(r.measured - r.expected) <= r.half + 1e-9 for r in self.amplification)
            and all(abs(r.slow_share - r.expected) <= r.half for r in self.tails)
            and all(_hedge_ok(r) for r in self.hedges)
            and all(_balancer_ok(r) for r in self.balancers)
        )


def _balancer_ok(r: BalancerRow) -> bool:
    return abs(r.engine_ms - r.expected_ms) <= r.half


def _hedge_ok(r: HedgeRow) -> bool:
    return (
        abs(r.engine_p99_ms - r.oracle_p99_ms) <= 0.1 * r.oracle_p99_ms
        and abs(r.engine_extra - r.oracle_extra) <= 0.02
        and r.engine_p99_ms < r.unhedged_p99_ms
    )


def expected_leaf_attempts(layers: int, retries: int, failure: float) -> float:
    """The leaf's attempts per entry request through ``layers`` callers each retrying a failed call up to
    ``retries`` times (no budget, time to spare), each leaf attempt failing with probability p: layer by layer from
    the leaf, a call's tries are Σₖ₌₀ʳ Fᵏ and it fails with F^(r+1), F the failure of one try below (p at the
    leaf); the attempts multiply. With p = 1: ∏(1 + rᵢ)."""
    total, fail = 1.0, failure
    for _ in range(layers):
        total *= sum(fail**k for k in range(retries + 1))
        fail = fail ** (retries + 1)
    return total


def _play(spec: GraphSpec, count: int, seed: int, fail: dict[str, float] | None = None) -> tuple[Any, Any, Any]:
    """A minute of ``count`` entry requests, then one without: the measures of both, summed."""
    layout = layout_of(spec)
    world = new_chain(layout, seed)
    for name, p in (fail or {}).items():
        world.svc_r[layout.names.index(name), W.SR_FAIL] = p
    svc = np.zeros_like(world.m_svc)
    client = np.zeros_like(world.m_client)
    hist = np.zeros_like(world.c_hist)
    for minute, n in enumerate((count, 0)):
        world = chain_minute_of(world, minute, n)
        svc += world.m_svc
        client += world.m_client
        hist += world.c_hist
    return svc, client, hist


def _layers(layers: int, retries: int) -> GraphSpec:
    fast = {"service_ms": 1.0, "distribution": "constant", "instances": 4, "workers_per_instance": 100}
    services: dict[str, Any] = {}
    for k in range(layers):
        services[f"l{k}"] = {**fast, "retries": retries, "calls": [{"to": f"l{k + 1}" if k + 1 < layers else "leaf"}]}
    services["leaf"] = fast
    return GraphSpec.model_validate({"entry": "l0", "deadline_ms": 60_000.0, "services": services})


def _amplification(quick: bool) -> list[AmplificationRow]:
    rows = []
    count = 300 if quick else 1200
    grid = [(1, 2), (3, 2)] if quick else [(1, 1), (1, 3), (2, 2), (3, 2), (3, 3)]
    for layers, retries in grid:
        for failure in (0.3, 1.0):
            svc, client, _ = _play(_layers(layers, retries), count, seed=11, fail={"leaf": failure})
            n = int(client[W.MC_DECIDED])
            measured = float(svc[-1, W.M_ATTEMPTS]) / n
            expected = expected_leaf_attempts(layers, retries, failure)
            # the attempts per request vary (when p < 1): its variance bounds the half-width, from the same law
            second = leaf_attempts_second_moment(layers, retries, failure)
            half = 1.96 * math.sqrt(max(second - expected**2, 0.0) / n)
            rows.append(AmplificationRow(layers, retries, failure, n, measured, expected, half))
    return rows


def leaf_attempts_second_moment(layers: int, retries: int, failure: float) -> float:
    """E[A²] of the leaf's attempts per request (the variance of the amplification's mean), layer by layer: a call's
    tries, each bringing an independent count from below (every try but the last failed; the last failed or not),
    summed over how many tries there were, apart for the call's two outcomes."""
    below = (1.0, 1.0, 1.0, 1.0)  # a leaf attempt: E[A], E[A²] given it failed, then given it succeeded
    fail = failure
    for _ in range(layers):
        p_fail, f1, f2 = _call_moments(retries, fail, below, failed=True)
        p_ok, s1, s2 = _call_moments(retries, fail, below, failed=False)
        below = (
            f1 / p_fail if p_fail > 0 else 0.0,
            f2 / p_fail if p_fail > 0 else 0.0,
            s1 / p_ok if p_ok > 0 else 0.0,
            s2 / p_ok if p_ok > 0 else 0.0,
        )
        fail = p_fail
    return fail * below[1] + (1.0 - fail) * below[3]


def _call_moments(
    retries: int, fail: float, below: tuple[float, float, float, float], failed: bool
) -> tuple[float, float, float]:
    """P(the call ends so), and E[S·1], E[S²·1] of its attempts below S on that outcome: k tries, k − 1 failed and
    the last failed (k = r + 1) or succeeded; given k, S is a sum of independent counts."""
    m1f, m2f, m1s, m2s = below
    prob = e1 = e2 = 0.0
    for k in range(1, retries + 2):
        if failed:
            if k < retries + 1:
                continue
            p, fails, successes = fail**k, k, 0
        else:
            p, fails, successes = fail ** (k - 1) * (1.0 - fail), k - 1, 1
        if p == 0.0:
            continue
        mean = fails * m1f + successes * m1s
        var = fails * (m2f - m1f**2) + successes * (m2s - m1s**2)
        prob += p
        e1 += p * mean
        e2 += p * (var + mean**2)
    return prob, e1, e2


def _fan_out(n: int, hedge: float | None = None) -> GraphSpec:
    page: dict[str, Any] = {
        "service_ms": 0.0,
        "distribution": "constant",
        "instances": 10,
        "workers_per_instance": 100,
        "calls": [{"to": "leaf", "mode": "parallel", "count": n}],
    }
    if hedge is not None:
        page["hedge_after_quantile"] = hedge
    leaf = {"service_ms": LEAF_MEAN_MS, "instances": 100, "workers_per_instance": 100}
    return GraphSpec.model_validate(
        {"entry": "page", "deadline_ms": 60_000.0, "services": {"page": page, "leaf": leaf}}
    )


def _tails(quick: bool) -> list[TailRow]:
    rows = []
    tau = LEAF_MEAN_MS / 1000.0 * math.log(100.0)  # the exponential leaf's p99
    first_above = math.ceil(math.log(tau / W.HIST_FLOOR_S) / math.log(W.HIST_RATIO)) + 1
    edge = W.HIST_FLOOR_S * W.HIST_RATIO ** (first_above - 1)  # the histogram's bin edge just above τ (< 1 % above)
    for n in (1, 10) if quick else (1, 5, 10, 50):
        pages = (6000 if quick else 30_000) if n < 50 else (3000 if quick else 12_000)
        _, _, hist = _play(_fan_out(n), pages, seed=13)
        total = int(hist.sum())
        share = float(hist[first_above:].sum()) / total
        expected = 1.0 - (1.0 - math.exp(-edge / (LEAF_MEAN_MS / 1000.0))) ** n  # 1 − 0.99ⁿ at τ itself
        half = 1.96 * math.sqrt(expected * (1.0 - expected) / total)
        rows.append(TailRow(n, total, share, expected, half))
    return rows


def _hedges(quick: bool) -> list[HedgeRow]:
    rows = []
    n = 10
    leaf_s = LEAF_MEAN_MS / 1000.0
    unhedged = -leaf_s * math.log(1.0 - 0.99 ** (1.0 / n)) * 1000.0
    for q in (0.9,) if quick else (0.9, 0.95):
        spec = _fan_out(n, hedge=q)
        pages = 3000 if quick else 12_000
        svc, _, hist = _play(spec, pages, seed=17)
        p99 = hist_quantile_s(hist, 0.99)
        oracle = simulate(spec, rate_per_s=pages / 60.0, requests=pages // 2, warmup=pages // 4, seed=19)
        rows.append(
            HedgeRow(
                q,
                (p99 or 0.0) * 1000.0,
                float(np.quantile(oracle.latency_ms, 0.99)),
                float(svc[0, W.M_HEDGES]) / (n * pages),
                oracle.services["page"].hedges / (n * oracle.requests),
                unhedged,
            )
        )
    return rows


BALANCED_MEAN_S = 0.010  # exponential work of the balancers' service


def erlang_c_wait_s(servers: int, rate: float, mean_s: float) -> float:
    """M/M/c's mean wait for a server, Erlang C(c, a)·S/(c − a) with a = λS."""
    a = mpmath.mpf(rate) * mean_s
    top = a**servers / mpmath.factorial(servers) * servers / (servers - a)
    c = top / (mpmath.fsum(a**i / mpmath.factorial(i) for i in range(servers)) + top)
    return float(c * mean_s / (servers - a))


def gi_m_1_erlang_sigma(n: int, rate: float, mean_s: float) -> float:
    """GI/M/1 with Erlang-n gaps of phase rate λ (every n-th arrival of a Poisson stream of λ): σ ∈ (0, 1), the
    root of σ = A*(μ(1 − σ)), A*(s) = (λ/(λ + s))ⁿ the gaps' transform (Kleinrock, vol. 1, §6.4)."""
    lam, mu = mpmath.mpf(rate), 1 / mpmath.mpf(mean_s)
    sigma = mpmath.findroot(lambda x: x - (lam / (lam + mu * (1 - x))) ** n, mpmath.mpf("0.5"))
    if not 0 < sigma < 1:
        raise ValueError(f"no σ in (0, 1) for n = {n}, λ = {rate}, S = {mean_s}: the queue is not stable")
    return float(sigma)


def gi_m_1_erlang_wait_s(n: int, rate: float, mean_s: float) -> float:
    """The mean wait at one of n single-worker instances served in turn: σ/(μ(1 − σ)) (``gi_m_1_erlang_sigma``),
    in the unit of ``mean_s``."""
    sigma = gi_m_1_erlang_sigma(n, rate, mean_s)
    return sigma * mean_s / (1.0 - sigma)


def _balanced(balancer: str, instances: int, workers: int) -> GraphSpec:
    service = {"instances": instances, "workers_per_instance": workers, "service_ms": BALANCED_MEAN_S * 1000.0}
    return GraphSpec.model_validate(
        {"entry": "a", "deadline_ms": 600_000.0, "services": {"a": {**service, "balancer": balancer}}}
    )


def _balancers(quick: bool) -> list[BalancerRow]:
    """One service at ρ = 0.8 behind each balancer, Poisson arrivals: its mean wait for a worker against Erlang C
    (pooled: one M/M/20; random: each instance an M/M/2 of a tenth of the stream), the GI/M/1 queue round-robin
    makes of each single-worker instance, and the oracle for least-outstanding (no closed form)."""
    minutes = 6 if quick else 21
    rows = []
    grid = [("pooled", 10, 2), ("random", 10, 2), ("round-robin", 10, 1), ("least-outstanding", 10, 2)]
    for balancer, instances, workers in grid:
        rate = 0.8 * instances * workers / BALANCED_MEAN_S
        spec = _balanced(balancer, instances, workers)
        world = new_chain(layout_of(spec), 23)
        per_minute = []
        wait = started = 0.0
        for minute in range(minutes):
            world = chain_minute_of(world, minute, round(rate * 60.0))
            if minute:  # the first left out: the queues start empty
                per_minute.append(world.m_svc[0, W.M_WAIT_S] / world.m_svc[0, W.M_STARTED])
                wait += world.m_svc[0, W.M_WAIT_S]
                started += world.m_svc[0, W.M_STARTED]
        se = statistics.stdev(per_minute) / math.sqrt(len(per_minute))
        if balancer == "pooled":
            expected, source = erlang_c_wait_s(instances * workers, rate, BALANCED_MEAN_S), "Erlang C, M/M/20"
        elif balancer == "random":
            expected, source = erlang_c_wait_s(workers, rate / instances, BALANCED_MEAN_S), "Erlang C, M/M/2 of λ/10"
        elif balancer == "round-robin":
            expected, source = gi_m_1_erlang_wait_s(instances, rate, BALANCED_MEAN_S), "GI/M/1, Erlang(10) gaps"
        else:
            asked = 100_000 if quick else 400_000  # plain Python: a few seconds per 100,000
            oracle = simulate(spec, rate_per_s=rate, requests=asked, warmup=asked // 10, seed=29)
            waits = oracle.services["a"].waits_ms / 1000.0
            batches = waits[: len(waits) // 20 * 20].reshape(20, -1).mean(axis=1)  # its own error, by batch means
            se = math.hypot(se, float(batches.std(ddof=1)) / math.sqrt(20))
            expected, source = float(waits.mean()), "the oracle"
        rows.append(BalancerRow(balancer, instances, workers, 0.8, float(1000.0 * wait / started), 3000.0 * se,
                                1000.0 * expected, source))  # fmt: skip
    return rows


def chain_checks(quick: bool) -> ChainChecks:
    return ChainChecks(
        tuple(_amplification(quick)), tuple(_tails(quick)), tuple(_hedges(quick)), tuple(_balancers(quick))
    )


def chains_finding(c: ChainChecks | None) -> list[str]:
    """The Findings' line on these checks."""
    if c is None:
        return []
    amp_in = sum(abs(r.measured - r.expected) <= r.half + 1e-9 for r in c.amplification)
    exact = [r for r in c.amplification if r.failure == 1.0]
    tails_in = sum(abs(r.slow_share - r.expected) <= r.half for r in c.tails)
    widest = max(c.tails, key=lambda r: r.fan_out)
    return [
        "- **Chains of services** (the request engine's graph): retries through layers cost the leaf "
        + ", ".join(f"{r.measured:g}" for r in exact)
        + " attempts per request where ∏(1 + rᵢ) says "
        + ", ".join(f"{r.expected:g}" for r in exact)
        + f", and {amp_in} of {len(c.amplification)} rows (leaves failing with p < 1 too) fall inside their "
        f"closed form's interval; fanning out to n leaves makes the leaves' rare p99 the page's common case as "
        f"1 − 0.99ⁿ says at {tails_in} of {len(c.tails)} points ({100 * widest.slow_share:.1f} % of pages at "
        f"n = {widest.fan_out}); hedging "
        + "; ".join(
            f"past the p{100 * r.quantile:g} brings the page's p99 from {r.unhedged_p99_ms:.0f} to "
            f"{r.engine_p99_ms:.1f} ms for {100 * r.engine_extra:.1f} % more leaf calls (the oracle: "
            f"{r.oracle_p99_ms:.1f} ms, {100 * r.oracle_extra:.1f} %)"
            for r in c.hedges
        )
        + "; a service's balancer waits as queueing's closed forms say ("
        + ", ".join(f"{r.balancer} {r.engine_ms:.2f} ms against {r.expected_ms:.2f}" for r in c.balancers)
        + f": {sum(_balancer_ok(r) for r in c.balancers)} of {len(c.balancers)} inside).",
    ]


def chains_section(c: ChainChecks | None) -> str:
    if c is None:
        return ""
    amp = [
        [
            str(r.layers),
            str(r.retries),
            f"{r.failure:g}",
            f"{r.requests:,}",
            f"{r.measured:.3f}",
            f"{r.expected:.3f}" + (f" ± {r.half:.3f}" if r.half > 0 else ""),
            _yes(abs(r.measured - r.expected) <= r.half + 1e-9),
        ]
        for r in c.amplification
    ]
    tails = [
        [str(r.fan_out), f"{r.pages:,}", f"{100 * r.slow_share:.2f} %",
         f"{100 * r.expected:.2f} % ± {100 * r.half:.2f}", _yes(abs(r.slow_share - r.expected) <= r.half)]
        for r in c.tails
    ]  # fmt: skip
    hedges = [
        [f"{r.quantile:g}", f"{r.engine_p99_ms:.1f}", f"{r.oracle_p99_ms:.1f}", f"{r.unhedged_p99_ms:.1f}",
         f"{100 * r.engine_extra:.1f} %", f"{100 * r.oracle_extra:.1f} %", _yes(_hedge_ok(r))]
        for r in c.hedges
    ]  # fmt: skip
    balancers = [
        [r.balancer, f"{r.instances} × {r.workers}", f"{r.utilization:g}", f"{r.engine_ms:.3f} ± {r.half:.3f}",
         f"{r.expected_ms:.3f}", r.source, _yes(_balancer_ok(r))]
        for r in c.balancers
    ]  # fmt: skip
    return "\n".join(
        [
            "## Chains of services: retries layer by layer, the tail at scale, hedging, balancers (docs/graphs.md)",
            "",
            "**Retries multiply.** A chain of layers, each retrying a failed call up to r times (no budget, time to "
            "spare), above a leaf whose attempts fail with probability p. Layer by layer from the leaf a call's "
            "tries are Σₖ₌₀ʳ Fᵏ, F the chance one try below fails (p at the leaf, then F^(r+1) a layer up); the "
            "leaf's attempts per entry request are their product, ∏(1 + rᵢ) when p = 1 (exact: every request costs "
            "the same). The half-width for p < 1 is the 95 % interval of a mean of that many requests, from the "
            "same law's second moment.",
            "",
            _table(["layers", "r", "p", "requests", "leaf attempts / request", "closed form", "inside"], amp),
            "",
            "**The tail at scale.** A page calls n leaves at once (exponential, mean 10 ms, nothing queued) and "
            "answers when the last has: it is slower than the leaves' p99 τ with probability 1 − 0.99ⁿ. Counted "
            "from the response-time histogram, whose bins are 1 % wide, at the bin edge t just above τ, so the "
            "closed form is taken there: 1 − (1 − e^(−t/10 ms))ⁿ; the half-width is the binomial 95 % interval.",
            "",
            _table(["n", "pages", "slower than the leaves' p99", "closed form", "inside"], tails),
            "",
            "**Hedging** (the same page, n = 10, a second copy of each leaf call not answered by the leaves' latency "
            "quantile as the page has seen it): the page's p99 against the oracle's (within 10 %) and far below "
            "the slowest-of-ten's p99 without hedging (closed form), for the extra leaf calls the oracle also "
            "sends (within 2 points).",
            "",
            _table(
                ["hedge past", "page p99 ms", "oracle", "unhedged (closed form)", "extra calls", "oracle", "agrees"],
                hedges,
            ),
            "",
            "**Balancers** (one service, exponential work of 10 ms, Poisson arrivals at 80 % of its workers): the "
            "mean wait for a worker behind one queue for every worker (pooled), and behind a queue per instance "
            "chosen at random (each instance then sees a tenth of a Poisson stream: M/M/2), in turn (every tenth "
            "arrival: gaps Erlang(10), a GI/M/1 queue with one worker) or by the fewest outstanding (no closed "
            "form: the oracle, which adds its own error). ± 3 standard errors, the minutes as batches.",
            "",
            _table(["balancer", "instances × workers", "ρ", "engine wait ms", "expected", "from", "inside"], balancers),
        ]
    )

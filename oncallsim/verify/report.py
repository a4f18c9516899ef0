"""The validation report: every check run, written as Markdown with tables and PNG plots.

Seeds are fixed and the plots carry no timestamp, so regenerating on the same machine gives the same file.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from oncallsim.extras import require
from oncallsim.model import MODEL_VERSION
from oncallsim.verify.chain_checks import ChainChecks, chain_checks, chains_section
from oncallsim.verify.cliff import DRAIN, DrainPoint, ShapeRow, drain_grid, shape_rows
from oncallsim.verify.engines import EngineRow, Timeline, compare_scenarios
from oncallsim.verify.fleet import BalancerPoint, DiscoveryCheck, balancer_grid, discovery_checks
from oncallsim.verify.kratos import KratosChecks, kratos_checks, kratos_section
from oncallsim.verify.pipeline import CachePoint, DbPoint, cache_grid, db_grid
from oncallsim.verify.queue import QueuePoint, queue_grid
from oncallsim.verify.resilience import Amplification, Bistability, ResilienceCheck, resilience_checks

__all__ = ["Results", "render", "run_all", "write_report"]

IMAGES = Path("images") / "validation"
NO_WAITS = 1e-6  # Erlang C below this: no customer of the run is expected to wait, nothing to compare


class Results(NamedTuple):
    quick: bool
    queue: list[QueuePoint]
    cache: list[CachePoint]
    db: list[DbPoint]
    engines: list[EngineRow]
    timelines: dict[tuple[str, str, int], Timeline]
    balancers: tuple[BalancerPoint, ...] = ()
    discovery: tuple[DiscoveryCheck, ...] = ()
    amplification: tuple[Amplification, ...] = ()
    bistability: tuple[Bistability, ...] = ()
    resilience: tuple[ResilienceCheck, ...] = ()
    drains: tuple[DrainPoint, ...] = ()
    shapes: tuple[ShapeRow, ...] = ()
    kratos: KratosChecks | None = None
    generated: str = ""  # the day the checks ran (UTC, ISO 8601): the report says it
    chains: ChainChecks | None = None


def run_all(quick: bool, progress: Callable[[str], None] = lambda _: None) -> Results:
    """Every check of the report (quick: a smaller grid, shorter runs, one seed)."""
    progress("queue only (M/M/N)")
    queue = queue_grid(quick)
    progress("cache")
    cache = cache_grid(quick)
    progress("database")
    db = db_grid(quick)
    progress("built-in scenarios on both engines")
    rows, timelines = compare_scenarios(quick)
    progress("balancers and discovery")
    balancers, discovery = tuple(balancer_grid(quick)), tuple(discovery_checks())
    progress("retries, throttling, CoDel, the limiter, metastability")
    amplification, bistability, checks = resilience_checks(quick)
    progress("the retrying server's Markov chain against the engine")
    drains = tuple(drain_grid(quick))
    progress("Kratos's mechanisms against their oracles")
    kratos = kratos_checks(quick)
    progress("chains of services: retries layer by layer, the tail at scale, hedging")
    chains = chain_checks(quick)
    return Results(
        quick, queue, cache, db, rows, timelines, balancers, discovery, tuple(amplification), tuple(bistability),
        tuple(checks), drains, tuple(shape_rows()), kratos, datetime.now(UTC).date().isoformat(), chains,
    )  # fmt: skip


def _pct(x: float) -> str:
    return f"{100 * x:.3g} %"


def _ci(value: float, half: float, scale: float = 1.0, digits: int = 4) -> str:
    return f"{value * scale:.{digits}g} ± {half * scale:.2g}"


def _inside(value: float, half: float, target: float, compare: bool = True) -> str:
    if not compare:
        return "—"
    return "yes" if abs(value - target) <= half else "**no**"


def _table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _queue_section(points: list[QueuePoint]) -> str:
    rows = []
    for q in points:
        rows.append(
            [
                str(q.servers),
                f"{q.utilization:g}",
                f"{q.customers:,}",
                _ci(*q.wait_probability, digits=4),
                f"{q.erlang_c:.4g}",
                _inside(*q.wait_probability, q.erlang_c, q.erlang_c >= NO_WAITS),
                f"{q.wait_t_s * 1000:.4g}",
                _ci(*q.wait_exceeds),
                f"{q.wait_exceeds_formula:.4g}",
                _ci(*q.mean_wait_s, scale=1000),
                f"{q.mean_wait_formula_s * 1000:.4g}",
                _ci(*q.p99_s, scale=1000),
                f"{q.p99_exact_s * 1000:.4g}",
                _inside(*q.p99_s, q.p99_exact_s),
                f"{q.p99_approx_s * 1000:.4g} ({100 * (q.p99_approx_s / q.p99_exact_s - 1):+.1f} %)",
            ]
        )
    head = ["N", "ρ", "customers", "P(wait)", "Erlang C", "in CI", "t ms", "P(W>t)", "C·e^(−(Nμ−λ)t)"]
    head += ["mean wait ms", "C/(Nμ−λ) ms", "p99 ms", "exact p99 ms", "in CI", "minute model p99 ms"]
    return _table(head, rows)


def _coverage(points: list[QueuePoint]) -> dict[str, tuple[int, int]]:
    """How many of the points' 95 % intervals cover their formula (about 95 % of them should)."""
    checks: dict[str, list[bool]] = {"P(wait)": [], "P(W>t)": [], "mean wait": [], "p99": []}
    for q in points:
        if q.erlang_c < NO_WAITS:  # the simulation sees no waiting at all: nothing to compare but zeros
            checks["p99"].append(q.p99_s.covers(q.p99_exact_s))
            continue
        checks["P(wait)"].append(q.wait_probability.covers(q.erlang_c))
        checks["P(W>t)"].append(q.wait_exceeds.covers(q.wait_exceeds_formula))
        checks["mean wait"].append(q.mean_wait_s.covers(q.mean_wait_formula_s))
        checks["p99"].append(q.p99_s.covers(q.p99_exact_s))
    return {k: (sum(v), len(v)) for k, v in checks.items()}


def _savefig(fig: Any, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=80, metadata={"Software": None})


def _plots(res: Results, images: Path) -> list[str]:
    matplotlib = require("matplotlib", "reports")

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    images.mkdir(parents=True, exist_ok=True)
    names = []
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.6))
    for q in res.queue:
        if q.erlang_c >= NO_WAITS:
            ax1.errorbar(q.erlang_c, q.wait_probability.value, yerr=q.wait_probability.half, fmt="o", ms=3, c="C0")
            ax1.errorbar(q.wait_exceeds_formula, q.wait_exceeds.value, yerr=q.wait_exceeds.half, fmt="s", ms=3, c="C1")
    ax1.plot([1e-6, 1], [1e-6, 1], "k:", lw=1)
    ax1.set(xscale="log", yscale="log", xlabel="formula", ylabel="request engine", title="P(wait) (o), P(W > t) (□)")
    for n in sorted({q.servers for q in res.queue}):
        pts = [q for q in res.queue if q.servers == n]
        u = [q.utilization for q in pts]
        ax2.errorbar(
            u,
            [100 * (q.p99_s.value / q.p99_exact_s - 1) for q in pts],
            yerr=[100 * q.p99_s.half / q.p99_exact_s for q in pts],
            fmt="o-",
            ms=3,
            label=f"sim N={n}",
        )
        ax2.plot(u, [100 * (q.p99_approx_s / q.p99_exact_s - 1) for q in pts], "x--", c="grey", lw=0.8)
    ax2.axhline(0, c="k", lw=0.8)
    ax2.set(xlabel="utilization ρ", ylabel="% from exact p99", title="p99: engine (o) and minute model (x)")
    ax2.legend(fontsize=7)
    _savefig(fig, images / "queue.png")
    names.append("queue.png")
    plt.close(fig)

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.4))
    for i, rate in enumerate(sorted({c.arrivals_per_s for c in res.cache})):
        cpts = [c for c in res.cache if c.arrivals_per_s == rate]
        ttl = np.linspace(0, max(c.ttl_s for c in cpts), 200)
        rt = rate / 20_000 * ttl
        ax1.plot(ttl, rt / (1 + rt), c=f"C{i}", lw=1)
        ax1.errorbar(
            [c.ttl_s for c in cpts],
            [c.hit.value for c in cpts],
            yerr=[c.hit.half for c in cpts],
            fmt="o",
            ms=3,
            c=f"C{i}",
            label=f"{rate:g} req/s",
        )
    ax1.set(xlabel="TTL s", ylabel="hit ratio", title="cache: engine (o), rT/(1 + rT) (line)")
    ax1.legend(fontsize=7)
    rho = np.linspace(0, 0.96, 200)
    ax2.plot(rho, 5 / (1 - rho), "k", lw=1)
    ax2.errorbar(
        [d.utilization for d in res.db],
        [d.query_ms.value for d in res.db],
        yerr=[d.query_ms.half for d in res.db],
        fmt="o",
        ms=3,
    )
    ax2.set(xlabel="database utilization ρ", ylabel="mean query ms", title="database: engine (o), 5 ms/(1 − ρ)")
    _savefig(fig, images / "cache_db.png")
    names.append("cache_db.png")
    plt.close(fig)

    views = (("cache-flush", ("cache_hit", "error_rate"), "cache_hit"), ("surge", ("error_rate", "queue_at_end"), None))
    for scenario, fields, low in views:
        run = res.timelines.get((scenario, "hands-off", 1))
        if run is None:
            continue
        # around the incident: the flush (the minute model's lowest hit ratio) or the worst minute
        key = run.fields[low][0] if low else -run.fields["error_rate"][1]
        at = int(np.argmin(key))
        span = np.arange(max(0, at - 15), min(len(key), at + 45))
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
        for ax, field in zip(axes, fields, strict=True):
            minute, request = run.fields[field]
            ax.plot(span, minute[span], lw=1, marker=".", ms=3, label="minute model")
            ax.plot(span, request[span], lw=1, marker=".", ms=3, label="request engine")
            ax.set(xlabel="minute", title=f"{scenario}, hands-off, seed 1: {field}")
            ax.legend(fontsize=7)
        _savefig(fig, images / f"{scenario}.png")
        names.append(f"{scenario}.png")
        plt.close(fig)
    return names


def render(res: Results, images_rel: Path = IMAGES) -> str:
    """The report's Markdown (the plots are written separately by ``write_report``)."""
    from oncallsim.verify.prose import engines_section, summary

    cov = _coverage(res.queue)
    img = images_rel.as_posix()
    parts = [
        "# Validation: the request engine against the formulas and the minute model",
        "",
        f"Generated by `oncallsim validate{' --quick' if res.quick else ''}`"
        + (f" on {res.generated}" if res.generated else "")
        + f" under model version {MODEL_VERSION} (fixed seeds: regenerating gives "
        "the same numbers). Intervals are 95 % batch-means confidence intervals: each run's measured minutes "
        "in 20 consecutive batches (10 for the cache and database), ± t·sd/√B around the pooled value.",
        "",
        summary(res, cov),
        "",
        "## 1. Queue only: M/M/N",
        "",
        "The engine's queue-only mode (`queue_only`): a Poisson stream, one pooled FIFO queue, exponential "
        "service of mean S = 50 ms, no cache or database, 3 warm-up minutes from empty, each operating point "
        "its own seed. t is the mean conditional wait 1/(Nμ − λ), rounded to the 0.1 ms histogram bin. The "
        "exact p99 solves P(R > x) = 0.01 for the M/M/N response time in 50-digit arithmetic; the minute "
        "model's is S·ln 100 + max(0, ln(C/0.01))/(Nμ − λ) (MODEL.md §3.6).",
        "",
        _queue_section(res.queue),
        "",
        f"![queue-only agreement]({img}/queue.png)",
        "",
        "## 2. Cache",
        "",
        "Full pipeline at a fixed rate, TTL and fleet, the cache started in its steady state, the database "
        "made large (10⁶ queries/s) so that only the cache is under test; 20,000 hot objects.",
        "",
        _table(
            ["λ req/s", "TTL s", "hit ratio", "rT/(1 + rT)", "in CI", "refill ms", "rT/(1 + r(T + refill))", "in CI"],
            [
                [
                    f"{c.arrivals_per_s:g}",
                    f"{c.ttl_s:g}",
                    _ci(*c.hit, digits=5),
                    f"{c.formula:.5f}",
                    _inside(*c.hit, c.formula),
                    f"{1000 * c.refill_s:.1f}",
                    f"{c.formula_refill:.5f}",
                    _inside(*c.hit, c.formula_refill),
                ]
                for c in res.cache
            ],
        ),
        "",
        "## 3. Database",
        "",
        "Full pipeline with TTL 0 (every request misses and does its 2 reads) at λ = ρ × 4,000 / 2 req/s; 20 "
        "partitions, each FIFO with exponential service of mean 5 ms.",
        "",
        _table(
            ["ρ offered", "ρ measured", "mean query ms", "5 ms/(1 − ρ)", "in CI"],
            [
                [
                    f"{d.utilization:g}",
                    f"{d.measured_utilization:.4f}",
                    _ci(*d.query_ms, digits=4),
                    f"{d.formula_ms:.4g}",
                    _inside(*d.query_ms, d.formula_ms),
                ]
                for d in res.db
            ],
        ),
        "",
        f"![cache and database]({img}/cache_db.png)",
        "",
        engines_section(res, img),
        "",
        _fleet_section(res),
        "",
        _resilience_section(res),
        "",
        kratos_section(res.kratos),
        "",
        chains_section(res.chains),
        "",
        _cliff_section(res),
    ]
    return "\n".join(parts) + "\n"


def _fleet_section(res: Results) -> str:
    """Balancers against queueing theory and discovery against its rules (verify/fleet.py)."""
    if not res.balancers and not res.discovery:
        return ""
    return "\n".join(
        [
            "## The fleet: balancers and discovery",
            "",
            "Queue-only mode, one worker per instance, exponential service S = 50 ms, ρ = 0.8 per instance. "
            "`random` is M/M/1 per instance; `pooled` is M/M/N; `p2c` (Kratos's: in-flight × the CPU the "
            "instance reports × √latency) stays above the supermarket model's limit: with one worker an instance "
            "reads near 1000 ‰ whenever it is busy, and the latency is an average, not the queue length JSQ(2) "
            "compares. The section on Kratos's mechanisms compares it with a finite JSQ(2).",
            "",
            _table(
                ["balancer", "instances", "mean time in system ms", "theory ms", "theory", "gap", "in CI"],
                [
                    [
                        b.balancer,
                        str(b.instances),
                        _ci(*b.mean_time_s, scale=1000.0),
                        f"{1000 * b.theory_s:.4g}",
                        b.theory,
                        _pct(b.relative_gap),
                        _inside(*b.mean_time_s, b.theory_s, b.balancer != "p2c"),
                    ]
                    for b in res.balancers
                ],
            ),
            "",
            _table(
                ["discovery check", "measured", "expected", "holds"],
                [[d.what, d.measured, d.expected, "yes" if d.ok else "**no**"] for d in res.discovery],
            ),
        ]
    )


def _resilience_section(res: Results) -> str:
    """The overload mechanisms against their theory (verify/resilience.py)."""
    if not res.amplification and not res.resilience:
        return ""
    return "\n".join(
        [
            "## Overload control: retries, throttling, CoDel, the limiter, metastability",
            "",
            "Retries at once behind a random balancer, some of 10 instances refusing connections: each attempt "
            "fails with probability f = refusing/10, so a call makes Σ_{j=0..N} fʲ attempts and fails with "
            "probability f^(N+1).",
            "",
            _table(
                ["f", "retries N", "attempts per call", "Σ fʲ", "calls failed", "f^(N+1)"],
                [
                    [
                        f"{a.failing:g}",
                        str(a.retries),
                        f"{a.attempts_per_call:.4f}",
                        f"{a.theory:.4f}",
                        _pct(a.call_failure),
                        _pct(a.theory_failure),
                    ]
                    for a in res.amplification
                ],
            ),
            "",
            "Metastability (reference §8): 10 instances × 4 workers (μ = 400/s), FIFO, a 2 s timeout, retries at "
            "once. Started from a backlog of three timeouts' work, the fleet recovers exactly when λ(N + 1) < μ; "
            "above, every attempt times out and is retried, the queue never drains and goodput stays at zero. "
            "Started empty, it is healthy either way: bistable.",
            "",
            _table(
                ["λ/μ", "retries N", "λ(N + 1)/μ", "goodput/λ from a backlog", "goodput/λ from empty", "as theory"],
                [
                    [
                        f"{b.load:g}",
                        str(b.retries),
                        f"{b.amplified:.2f}",
                        f"{b.from_backlog_goodput:.3f}",
                        f"{b.from_empty_goodput:.3f}",
                        "yes" if b.ok else "**no**",
                    ]
                    for b in res.bistability
                ],
            ),
            "",
            _table(
                ["check", "measured", "expected", "holds"],
                [[c.what, c.measured, c.expected, "yes" if c.ok else "**no**"] for c in res.resilience],
            ),
        ]
    )


def _seconds(x: float) -> str:
    return "never (> 10⁹ s)" if math.isinf(x) else f"{x:.4g}"


def _cliff_section(res: Results) -> str:
    """The retrying server's chain against the engine (verify/cliff.py), and the timeout's shape."""
    if not res.drains:
        return ""
    d = DRAIN
    capacity = d.workers / d.service_s
    # the drained points the chain meets within the sampling error, and those it drains sooner than the engine
    close = [p for p in res.drains if p.undrained == 0 and p.agrees]
    near = [p for p in res.drains if p.undrained == 0 and not p.agrees]
    agree = sum(p.agrees for p in res.drains)
    twice = next(r for r in res.shapes if r.waits_for.startswith("≈ 2 "))
    lines = [
        "## The cliff's chain against the engine (docs/cliff.md)",
        "",
        f"One instance of {d.workers} workers, exponential service of mean {1000 * d.service_s:g} ms (cμ = "
        f"{capacity:g}/s), one FIFO queue without a limit, a {d.timeout_s:g} s timeout, retries at once. The "
        f"engine's queue is filled first (a minute at cμ + {res.drains[0].backlog:,}/60 per second, retries off: those "
        f"requests are only work), then λ arrives with N retries. Drain time: the first second the engine counts "
        "an empty queue; the chain's expected time to n ≤ c from the engine's starting state (n₀, 0), plus half a "
        f"second for that count (`verify/cliff.py`). {res.drains[0].seeds} seeds a point; the engine's mean "
        f"± 1.96 sd/√seeds over the seeds that drained within {d.window_min} minutes. The chain with a fixed "
        f"timeout agrees within the sampling error at {agree} of {len(res.drains)} points.",
        "",
        _table(
            [
                "λ/s",
                "N",
                "λ(N + 1)/cμ",
                "n₀",
                "engine s",
                "undrained",
                "chain, fixed timeout s",
                "in CI",
                "chain, exponential timeout s",
                "chain: empty → collapsed s",
                "chain: 1/|λ₂| s",
            ],
            [
                [
                    f"{p.arrivals_per_s:g}",
                    str(p.retries),
                    f"{p.amplified:.2f}",
                    f"{p.start:.0f}",
                    _ci(*p.engine_s) if p.undrained < p.seeds else "—",
                    f"{p.undrained} of {p.seeds}",
                    _seconds(p.fixed_s),
                    "yes" if p.agrees else "**no**",
                    _seconds(p.exponential_s),
                    _seconds(p.collapse_s),
                    _seconds(p.relaxation_s),
                ]
                for p in res.drains
            ],
        ),
        "",
        "Where the chain is exact it agrees: without retries it is M/M/c (the abandoned requests are still "
        "served), and with few retries far from the cliff ("
        + ", ".join(
            f"N = {p.retries}, λ(N + 1)/cμ = {p.amplified:.2f}: {p.fixed_s:.1f} s against "
            f"{p.engine_s.value:.1f} ± {p.engine_s.half:.1f} s"
            for p in close
        )
        + "). Past the cliff (λ(N + 1) > cμ) both never drain: every attempt times out, each call sends N + 1 "
        "attempts and the queue grows. Nearer it, with more retries, the chain drains sooner than the engine ("
        + ", ".join(
            f"N = {p.retries}, λ(N + 1)/cμ = {p.amplified:.2f}: {p.fixed_s:.0f} s against "
            f"{p.engine_s.value:.0f} ± {p.engine_s.half:.0f} s"
            for p in near
        )
        + "). Its state does not say which attempt a call is at, so a retry sent from the orbit is retried again "
        "with one probability, (N − 1)/N when every attempt fails: a call then makes a geometric number of "
        "retries of mean N, where the engine's make exactly N. The mean is right, so is the bad mode's balance, "
        "λ(N + 1) against cμ; but while the orbit fills after the queue was filled, the retries reach their "
        "full rate later in the engine: the delay before a call's k-th retry adds up to λD·N(N + 1)/2 requests "
        "of retries not yet sent with exactly N retries, λD·N² with a geometric number (D = T + backoff). The "
        "difference, λD·N(N − 1)/2 requests, is drained at cμ − λ(N + 1) per second"
        + "".join(f"{_gap(p, capacity)}" for p in near[-1:])
        + ". The cliff itself, where λ(N + 1) = cμ, is where both put it.",
        "",
        "**Where an exponential timeout differs from a fixed one.** The textbook chain gives each attempt an "
        "exponential timeout of mean T: the chance that an attempt times out depends smoothly on how long it "
        "waits, where a fixed timeout is a step at T. For this server (p(n): the chance an attempt that finds n "
        "requests at the server times out):",
        "",
        _table(
            ["the attempt finds", "n", "fixed T", "exponential, mean T"],
            [[r.waits_for, str(r.queue), f"{r.fixed:.3g}", f"{r.exponential:.3g}"] for r in res.shapes],
        ),
        "",
        "An exponential timeout fails attempts that never waited (S/(S + T) of them: a healthy server then "
        f"retries a little all the time) and spares many that waited well past T ({1 - twice.exponential:.0%} of "
        "those that waited 2T). In the bad mode it is the second that matters: fewer attempts time out, "
        "fewer are retried, the queue the retries sustain is smaller and drains sooner (the column of the "
        "exponential timeout). Near the cliff the difference is large; a map's class it changes only near the "
        "line λ(N + 1) = cμ (docs/cliff.md compares the two chains' classes on retry-storm's map). The map's "
        "chain decides each attempt's timeout as the engine "
        "does, with the fixed T; what stays exponential is the wait in the orbit (T plus the backoff, a fixed "
        "delay made exponential of the same mean).",
    ]
    return "\n".join(lines)


def _gap(p: DrainPoint, capacity: float) -> str:
    """The orbit's lag, worked for one point: λD·N(N − 1)/2 requests at cμ − λ(N + 1) per second."""
    lag = p.arrivals_per_s * DRAIN.timeout_s * p.retries * (p.retries - 1) / 2.0
    rate = capacity - p.arrivals_per_s * (p.retries + 1)
    return (
        f": at N = {p.retries}, {p.arrivals_per_s:g} × {DRAIN.timeout_s:g} × {p.retries * (p.retries - 1) // 2} = "
        f"{lag:.0f} requests at {rate:g}/s is {lag / rate:.0f} s, against {p.engine_s.value - p.fixed_s:.0f} s "
        "measured"
    )


def write_report(res: Results, out: Path) -> list[Path]:
    """Write ``out`` and its plots (``images/validation/`` beside it); the Markdown via a temporary file."""
    images = out.parent / IMAGES
    names = _plots(res, images)
    tmp = out.with_name(out.name + ".part")
    tmp.write_text(render(res), encoding="utf-8")
    os.replace(tmp, out)
    return [out, *(images / n for n in names)]

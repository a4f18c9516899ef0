"""The checks of Kratos's mechanisms against oracles written apart from the engine (issue 23, item 10), and their
section of docs/validation.md: p2c against a finite-N JSQ(2) (``balancing.py``, ``jsq.py``), the BBR limiter's
admitted throughput and its CPU's rise time (``bbr.py``), CoDel against RFC 8289's pseudocode (``codel.py``) and
the classic breaker's state sequence (``classic.py``). Each row says what was measured, what was expected, the
tolerance, and whether it holds.
"""

from __future__ import annotations

from typing import NamedTuple

from oncallsim.verify import balancing, bbr, classic, codel
from oncallsim.verify.balancing import TOLERANCE

__all__ = ["KratosChecks", "kratos_checks", "kratos_finding", "kratos_section"]


class KratosChecks(NamedTuple):
    balance: tuple[balancing.BalancePoint, ...]
    ramp: tuple[bbr.Throughput, ...]
    rise: tuple[int, float, float]  # the first 429's second, the saturated CPU EMA (‰), the closed form's rise (s)
    codel_engine: codel.CodelRun
    codel_rfc: codel.CodelRun
    codel_rfc_every: codel.CodelRun  # the RFC without its one-packet rule
    breaker_engine: tuple[list[classic.StateChange], int]
    breaker_oracle: tuple[list[classic.StateChange], int]
    step: bbr.Step | None = None  # the sudden step (a report of before the check: none)

    @property
    def rise_ok(self) -> bool:
        return int(self.rise[2]) - 1 <= self.rise[0] <= int(self.rise[2]) + 1


def kratos_checks(quick: bool) -> KratosChecks:
    first, _ = bbr.measured_rise_s()
    level = bbr.saturated_ema()
    return KratosChecks(
        tuple(balancing.balance_grid(quick)),
        tuple(bbr.throughput(quick)),
        (first, level, bbr.ema_rise_s(level)),
        codel.engine_drops(),
        codel.oracle_drops(),
        codel.oracle_drops(keep_last=False),
        classic.engine_sequence(),
        classic.oracle_sequence(),
        bbr.step(quick),
    )


def _yes(ok: bool) -> str:
    return "yes" if ok else "**no**"


def _table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def _ms(x: float) -> str:
    return f"{1000.0 * x:.1f}"


def _balance(points: tuple[balancing.BalancePoint, ...]) -> str:
    rows = []
    for p in points:
        s = p.setup
        where = f"{s.instances} × {s.workers}, ρ = {s.utilization:g}"
        o = p.oracle
        for b in ("random", "round-robin"):
            mean, half, p99 = p.engine[b]
            rows.append(
                [
                    where, str(p.clients), b, f"{_ms(mean)} ± {_ms(half)}", f"{_ms(p99)}",
                    f"{b}: {_ms(o[b].mean_s)} ± {_ms(o[b].mean_half)}", f"{_ms(o[b].p99_s)}",
                    f"3 combined half-widths or {100 * balancing.BASELINE_FLOOR:g} %", _yes(p.baseline_ok(b)),
                ]
            )  # fmt: skip
        mean, half, p99 = p.engine["p2c"]
        ratios = p.ratios()
        rows.append(
            [
                where, str(p.clients), "p2c", f"{_ms(mean)} ± {_ms(half)} ({100 * p.p2c_mean_gap:+.0f} %)",
                f"{_ms(p99)} ({100 * p.p2c_p99_gap:+.0f} %)",
                f"JSQ(2): {_ms(o['jsq2'].mean_s)} ± {_ms(o['jsq2'].mean_half)}; random ∕ it "
                f"{ratios['random'][1]:.2f} (engine {ratios['random'][0]:.2f}), round robin ∕ it "
                f"{ratios['round-robin'][1]:.2f} (engine {ratios['round-robin'][0]:.2f})",
                f"{_ms(o['jsq2'].p99_s)}", f"mean, p99 and both ratios within {100 * p.tolerance:g} %", _yes(p.p2c_ok),
            ]
        )  # fmt: skip
    head = ["instances × workers", "clients", "engine", "mean ms", "p99 ms", "oracle: mean ms", "oracle p99 ms"]
    return _table([*head, "tolerance", "holds"], rows)


def _drops(run: codel.CodelRun) -> str:
    first = ", ".join(f"{1000 * t:.0f}" for t in run.drops[:4])
    return f"{len(run.drops)} drops, {run.served} served; first at {first} ms"


def _same(a: codel.CodelRun, b: codel.CodelRun) -> bool:
    return len(a.drops) == len(b.drops) and all(abs(x - y) < 1e-9 for x, y in zip(a.drops, b.drops, strict=True))


def _states(seq: tuple[list[classic.StateChange], int]) -> str:
    return " → ".join(f"{c.state} at {c.at_s:g} s" for c in seq[0]) + f" ({seq[1]} rejected)"


def kratos_finding(k: KratosChecks | None) -> list[str]:
    """The Findings' line on these checks."""
    if k is None:
        return []
    one = [p for p in k.balance if p.clients == 1]
    held = [p for p in k.balance if p.p2c_ok]
    above = [r for r in k.ramp if r.offered >= 1.0]
    return [
        "- **Kratos's mechanisms against oracles written apart from the engine**: p2c holds within "
        f"{100 * TOLERANCE:g} % of a finite JSQ(2) at {len(held)} of {len(k.balance)} points ("
        + ", ".join(
            f"one client on {p.setup.instances} × {p.setup.workers}: {100 * p.p2c_mean_gap:+.0f} %" for p in one
        )
        + "), and falls behind it as clients multiply: their own in-flight counts say little and the shared CPU "
        f"reading herds them. The BBR limiter passes {min(r.passed for r in above):.2f}–"
        f"{max(r.passed for r in above):.2f} of capacity as the offered load climbs to "
        f"{max(r.offered for r in above):g}× (without one, goodput falls to "
        f"{min(r.off_goodput for r in above):.2f}){_step_finding(k.step)}; its "
        f"CPU's rise from idle {'meets' if k.rise_ok else 'misses'} the EMA's closed form. CoDel drops "
        + ("exactly" if _same(k.codel_engine, k.codel_rfc_every) else "not")
        + " where RFC 8289's pseudocode does without its one-packet rule, which the engine lacks; the classic "
        f"breaker's states {'follow' if k.breaker_engine == k.breaker_oracle else 'do not follow'} Hystrix's on a "
        "scripted error pattern. The section before the cliff's has every number."
    ]


def _step_finding(s: bbr.Step | None) -> str:
    if s is None:
        return ""
    return (
        f"; after a sudden step from {bbr.STEP_FROM:g} to {bbr.STEP_TO:g}× capacity goodput is back to "
        f"{s.engine.settled:.2f} of it {s.engine.recovered_s} s after the step, as aegis simulated apart on the same "
        f"workers ({s.oracle.settled:.2f}) and on a Go server ({s.oracle_go.settled:.2f}); timed from admission "
        f"(model version 2) the limiter kept the queue the step built and goodput stayed at {s.engine_v2.settled:.2f}"
    )


def _curve(c: bbr.StepCurve) -> list[str]:
    return [f"{g:.2f}" for g in c.bins] + [
        "never" if c.recovered_s < 0 else f"{c.recovered_s} s",
        f"{c.settled:.2f}",
    ]


def _step_section(s: bbr.Step | None) -> list[str]:
    if s is None:
        return []
    bins = [f"{a}–{b} s" for a, b in bbr.STEP_BINS]
    rows = [
        ["engine, model version 3: timed from the worker's start", *_curve(s.engine),
         _yes(bbr.Step.agrees(s.engine, s.oracle))],
        ["aegis apart, the same worker pool, timed from the worker's start", *_curve(s.oracle), "oracle"],
        ["engine, model version 2: timed from the admission", *_curve(s.engine_v2),
         _yes(bbr.Step.agrees(s.engine_v2, s.oracle_admission))],
        ["aegis apart, the same worker pool, timed from the admission", *_curve(s.oracle_admission), "oracle"],
        ["aegis apart, a Go server (handlers share the cores)", *_curve(s.oracle_go), "the article's claim"],
        ["engine, no limiter", *_curve(s.engine_off), "—"],
    ]  # fmt: skip
    head = [
        "goodput ∕ c after the step",
        *bins,
        f"≥ {bbr.RECOVERED:g} c from",
        f"settled (from {bbr.SETTLED_FROM} s)",
    ]
    return [
        "",
        f"**A sudden step: the flash crowd.** The same fleet, a minute at {bbr.STEP_FROM:g} c, then "
        f"{bbr.STEP_TO:g} c at once. Goodput per 10 s of the step minute, by arrival (the requests that arrived in "
        "those seconds and were answered within the timeout, ∕ c; the engine's from the paths of one request in "
        f"{bbr.STEP_EVERY}), the engine over {s.engine.seeds} seed(s), the oracle over "
        f"{s.oracle.seeds}. The oracle is aegis's limiter simulated apart (`verify/aegis.py`: its window, cache, "
        "EMA and drop rule as go-kratos/aegis e0742c6 has them) in front of the same pool of workers behind FIFO "
        "queues, timing a request as the engine does, and in front of a Go server, where aegis runs: no queue "
        "before the handlers, every admitted request's goroutine shares the cores (processor sharing). Expected: "
        f"the engine meets its oracle (settled levels within {bbr.STEP_TOLERANCE:g} c; goodput at or above "
        f"{bbr.RECOVERED:g} c from the same 10 s bin on, or one bin apart), and recovers within 30 s to at least "
        "0.75 c as aegis does on a Go server.",
        "",
        _table([*head, "holds"], rows),
        "",
        "Until the CPU EMA climbs from ~500 to 800 ‰ (about 10 s) nothing is dropped, and a queue of some 10 s of "
        "work builds; its requests are answered after their clients gave up. A Go server's handlers time each "
        "request's own share of the cores, which stretches with the load in proportion to its work: the least "
        "bucket average stays well under the mean, maxPass × minRT falls below what is in flight, and the backlog "
        "is shed within seconds. Timed from its admission, a request's time in a FIFO queue is mostly the "
        "queue's wait, nearly the same for every request: minRT becomes that wait, and maxPass (the window's peak, "
        "above the mean) × minRT covers the whole queue, so the limiter keeps the queue it should shed and "
        "goodput stays at 0 while the overload lasts — aegis's own rule, as the oracle shows, in front of a "
        "server it was not written for. Since model version 3 the engine times a request from its worker's start "
        "(its handler's work, as a Go server runs it without a queue) and behaves as aegis does on a Go server.",
    ]


def kratos_section(k: KratosChecks | None) -> str:
    if k is None:
        return ""
    ramp_rows = []
    for r in k.ramp:
        ok = "—" if 0.8 <= r.offered < 1.0 else _yes(r.ok)
        ramp_rows.append(
            [f"{r.offered:g}", f"{r.passed:.3f}", f"{r.goodput:.3f}", f"{r.off_goodput:.3f}", ok]
        )  # fmt: skip
    e, o = k.breaker_engine, k.breaker_oracle
    return "\n".join(
        [
            "## Kratos's mechanisms against oracles written apart from the engine",
            "",
            "**p2c against a finite-N JSQ(2).** The supermarket limit above holds as the instances grow without "
            "bound; `verify/jsq.py` simulates the finite fleet itself in plain Python (nothing of the engine): each "
            "instance a FIFO queue before its workers, exponential service of 50 ms, a Poisson stream split among "
            "the clients, each client choosing on its own. Its JSQ(2) draws two distinct instances and takes the "
            "one with fewer of this client's requests in flight (with one client, the queue length itself). The "
            "engine's `random` and `round-robin` must meet the oracle's (that checks the harness); its `p2c` should "
            "sit near JSQ(2) and beat random and round robin by the ratios JSQ(2) does. Means ± their 95 % "
            "batch-means half-widths; the gaps in brackets are against JSQ(2).",
            "",
            _balance(k.balance),
            "",
            "With one client p2c is near JSQ(2) on instances of four workers; with more clients it falls behind "
            "even a client's own JSQ(2): Kratos's load multiplies the in-flight count by the CPU the instance last "
            "reported — a 500 ms reading, the same for every client — and √(latency EWMA). The more clients, the "
            "fewer requests each has in flight on an instance (mostly none), so the shared CPU reading decides "
            "and the clients move together: with many clients p2c loses to round robin and then to random, "
            "where JSQ(2) by the clients' own counts never does. With one worker per instance (the full report's "
            "second fleet) every busy instance reads near 1000 ‰, the CPU says little, and p2c is well above "
            "JSQ(2) even with one client; at 64 clients JSQ(2) by each client's counts is itself little better "
            "than round robin, and p2c meets it there.",
            "",
            "**The BBR limiter as the article draws it.** 4 instances × 4 workers (capacity c = 320 requests/s), "
            "exponential service of 50 ms, a 2 s timeout; the offered load climbs a step each minute (the article's "
            "figure). Passed: what the limiter lets through ∕ c; goodput: answered well within the timeout ∕ c. "
            "Expected: below 0.8 c everything passes (the CPU stays under 800 ‰); from c on, passed and goodput "
            f"stay within [{bbr.HELD_LOW:g}, 1.1] c with the limiter (it holds the CPU EMA at 800 ‰: about 0.8 c, a "
            "little above or below), while without it goodput falls below 0.2 c once the load is "
            "1.3 c or more (at 1.1 c the queue takes most of a minute to pass the timeout). Near 0.9 c the CPU is "
            "over 800 ‰ and the limiter sheds some load although the fleet could serve it, as aegis's rule does: "
            "no verdict there.",
            "",
            _table(
                ["offered ∕ c", "passed ∕ c (bbr)", "goodput ∕ c (bbr)", "goodput ∕ c (no limiter)", "holds"], ramp_rows
            ),
            *_step_section(k.step),
            "",
            _table(
                ["check", "measured", "expected", "tolerance", "holds"],
                [
                    [
                        "the CPU EMA's rise from idle: one instance idle for a minute, then offered 2× its capacity "
                        "(no timeout within the minute: every error is a 429)",
                        f"first 429 in second {k.rise[0]} of the load",
                        f"⌈ln(1 − 800 ∕ r) ∕ ln 0.95⌉ ticks of 0.5 s = {k.rise[2]:g} s, r = {k.rise[1]:.0f} ‰ the "
                        f"EMA's saturated level (r = 1000 ‰: {bbr.ema_rise_s():g} s)",
                        "± 1 s (the per-second count)",
                        _yes(k.rise_ok),
                    ],
                    [
                        "CoDel against RFC 8289 §5 as written (its `bytes() <= MAXPACKET`: a queue left with one "
                        "request or none is not dropped from)",
                        _drops(k.codel_engine),
                        _drops(k.codel_rfc),
                        "the same drop times (1 ns)",
                        _yes(_same(k.codel_engine, k.codel_rfc)),
                    ],
                    [
                        "CoDel against RFC 8289 §5 without that one line",
                        _drops(k.codel_engine),
                        _drops(k.codel_rfc_every),
                        "the same drop times (1 ns)",
                        _yes(_same(k.codel_engine, k.codel_rfc_every)),
                    ],
                    [
                        "the classic breaker on a scripted error pattern (0 %, 40 %, 80 % failures, then none; "
                        "Hystrix's 20 requests, 50 %, 5 s)",
                        _states(e),
                        _states(o),
                        "the same states at the same times",
                        _yes(e == o),
                    ],
                ],
            ),
            "",
            "CoDel's script (`verify/codel.py`): one worker, deterministic 10 ms service, arrivals at 1.5× "
            "capacity for 3 s, at half until 5 s (the queue drains, the state resets), 1.5× again until 6.5 s (an "
            "episode within 16 intervals of the last resumes its count). The engine's CoDel drops exactly where "
            "the RFC's pseudocode does without its one-packet rule; with it, the RFC holds off while the queue "
            "is short, so its first episode starts later and the sequences part from there.",
        ]
    )

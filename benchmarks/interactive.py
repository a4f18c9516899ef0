"""One interactive run: a full 24 h free-play day (1,440 minutes) through ``Simulation``.

Budget (DESIGN.md): ≤ 25 ms on the 2-core reference machine. Prints the median and the best of repeats, and
ratios against two peers measured in the same process: a bare pure-Python loop of the same formulas (traffic
with noise, cache, database, Erlang C, errors, burn windows, budget, cost, cache refill: no records, no
events, no validation; the target is "no slower than it"), and the Erlang-C call alone
(``scipy.special.pdtr``), the floor any scalar Python minute model pays for its queueing formula.

    python benchmarks/interactive.py [--repeats 30]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

from scipy.special import pdtr

from oncallsim import Simulation

BUDGET_MS = 25.0


def time_day(scenario: str = "free-play", seed: int = 1) -> float:
    start = time.perf_counter()
    Simulation(scenario, seed=seed).run()
    return (time.perf_counter() - start) * 1000.0


def bare_erlang_c(a: float, n: int) -> float:
    """The peer: Erlang C in plain Python (SciPy's Poisson cdf, CPython's log-gamma), none of our code."""
    b = min(1.0, math.exp(n * math.log(a) - a - math.lgamma(n + 1.0)) / float(pdtr(n, a)))
    return b / (1.0 - (a / n) * (1.0 - b))


def bare_day(minutes: int = 1440) -> float:
    """The peer: the minute's formulas as one plain Python loop (the free-play day's steady path)."""
    warm, budget, cost, window, total = 1.0, 1.0, 0.0, [0.0] * 60, 0.0
    state = 12345
    for t in range(minutes):
        expected = 1000.0 * (1.0 + 0.25 * math.sin(2.0 * math.pi * (t + 480 - 360.0) / 1440.0))
        state = (state * 1103515245 + 12345) & 0x7FFFFFFF
        u1, u2 = 1.0 - state / 2147483648.0, ((state * 69069) & 0x7FFFFFFF) / 2147483648.0
        radius, angle = math.sqrt(-2.0 * math.log(u1)), 2.0 * math.pi * u2
        count = 60.0 * expected + math.sqrt(60.0 * expected) * radius * math.cos(angle)
        admitted = max(0.0, count * (1.0 + 0.02 * radius * math.sin(angle))) / 60.0
        rt = admitted / 20000.0 * 60.0
        hit = warm * rt / (1.0 + rt)
        demand = admitted * 3.0 * (1.0 - hit)
        rho = demand / 4000.0
        query_ms = 250.0 if rho >= 1.0 else min(250.0, 5.0 / (1.0 - rho))
        service_s = (70.0 + (1.0 - hit) * 3.0 * query_ms) / 1000.0
        servers = 160
        a = admitted * service_s
        if a >= servers:
            overload, timeout, p99 = 1.0 - servers / a, 0.0, 2.0
        else:
            c = bare_erlang_c(a, servers)
            drain = servers / service_s - admitted
            overload, timeout = 0.0, c * math.exp(-drain * 2.0)
            p99 = min(2.0, service_s * math.log(100.0) + (math.log(c / 0.01) / drain if c > 0.01 else 0.0))
        error_rate = overload + (1.0 - overload) * timeout
        window = [*window[1:], error_rate]
        burn_1h, burn_5m = sum(window) / 60.0 / 0.001, sum(window[-5:]) / 5.0 / 0.001
        budget -= error_rate / 0.001 / 43200.0
        cost += 0.4 * 10 / 60.0
        warm = min(1.0, warm + (1.0 - warm) * (1.0 - math.exp(-1.0 / 30.0)) * min(1.0, 4000.0 / max(demand, 1e-9)))
        total += burn_1h + burn_5m + p99 + budget + cost
    return total


def time_bare_day() -> float:
    start = time.perf_counter()
    bare_day()
    return (time.perf_counter() - start) * 1000.0


def time_erlang_loop(minutes: int = 1440) -> float:
    start = time.perf_counter()
    for m in range(minutes):
        bare_erlang_c(80.0 + (m % 7), 160)
    return (time.perf_counter() - start) * 1000.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    time_day()  # warm imports and caches
    days = [time_day(seed=s) for s in range(args.repeats)]
    loops = [time_erlang_loop() for _ in range(args.repeats)]
    bares = [time_bare_day() for _ in range(args.repeats)]
    median, best = statistics.median(days), min(days)
    peer = statistics.median(loops)
    bare = statistics.median(bares)
    print(
        f"full day (1,440 minutes) through Simulation: median {median:.1f} ms, best {best:.1f} ms "
        f"over {args.repeats} repeats (budget {BUDGET_MS:.0f} ms: {'met' if median <= BUDGET_MS else 'NOT met'})"
    )
    print(f"per minute: median {median / 1440 * 1000:.1f} µs")
    print(
        f"peer, bare pure-Python loop of the same formulas: median {bare:.1f} ms; "
        f"ratio Simulation / bare loop = {median / bare:.2f}× (target ≤ 1: {'met' if median <= bare else 'NOT met'})"
    )
    print(
        f"peer, bare Erlang-C loop for the same minutes: median {peer:.1f} ms; "
        f"ratio Simulation / Erlang-C loop = {median / peer:.1f}×"
    )


if __name__ == "__main__":
    main()

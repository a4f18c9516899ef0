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
    """The peer: every formula of the free-play minute as one plain Python loop, with nothing around it.

    mulberry32 and Box–Muller noise, the diurnal curve, shedding, the cache, the database, the service time,
    Erlang C with the waiting tail and p99, errors by cause, the burn windows, the budget and the page, the
    cost, the cache refill, the boot countdown and the target-tracking autoscaler: no records, no events, no
    validation, no state objects. "A day through Simulation no slower than this" is the target.
    """
    mask = 0xFFFFFFFF
    state = 1
    warm, budget, cost, window, firing = 1.0, 1.0, 0.0, [0.0] * 60, False
    serving, booting, quiet, floor, target = 10, [0, 0, 0, 0], 0, 10, 0.6
    total = 0.0

    def uniform() -> float:
        nonlocal state
        state = t = (state + 0x6D2B79F5) & mask
        t = ((t ^ (t >> 15)) * (t | 1)) & mask
        t ^= (t + (t ^ (t >> 7)) * (t | 61)) & mask
        return (t ^ (t >> 14)) / 4294967296.0

    for t in range(minutes):
        expected = 1000.0 * (1.0 + 0.25 * math.sin(2.0 * math.pi * (t + 480 - 360.0) / 1440.0))
        u1, u2 = 1.0 - uniform(), uniform()
        radius, angle = math.sqrt(-2.0 * math.log(u1)), 2.0 * math.pi * u2
        per_minute = 60.0 * expected
        count = (per_minute + math.sqrt(per_minute) * radius * math.cos(angle)) * (
            1.0 + 0.02 * radius * math.sin(angle)
        )
        admitted = max(0.0, count) / 60.0 * (1.0 - 0.3 * 0.0)
        rt = admitted / 20000.0 * 60.0
        hit = warm * rt / (1.0 + rt)
        demand = admitted * 3.0 * (1.0 - hit)
        rho = demand / 4000.0
        query_ms = 250.0 if rho >= 1.0 else min(250.0, 5.0 / (1.0 - rho))
        service_s = (70.0 * (1.0 + 0.25 * 0.0) + (1.0 - hit) * 3.0 * query_ms) / 1000.0
        servers = serving * 16
        a = admitted * service_s
        if a >= servers:
            overload, timeout, p99, utilization = 1.0 - servers / a, 0.0, 2.0, 1.0
        else:
            c = bare_erlang_c(a, servers)
            drain = servers / service_s - admitted
            overload, timeout, utilization = 0.0, c * math.exp(-drain * 2.0), a / servers
            p99 = min(2.0, service_s * math.log(100.0) + (math.log(c / 0.01) / drain if c > 0.01 else 0.0))
        e_timeout = (1.0 - overload) * timeout
        e_bad = (1.0 - overload) * (1.0 - timeout) * 0.05 * 0.0
        error_rate = overload + e_timeout + e_bad
        window = [*window[1:], error_rate] if t else [error_rate] * 60
        burn_1h, burn_5m = sum(window) / 60 / 0.001, sum(window[-5:]) / 5 / 0.001
        budget -= error_rate / 0.001 / 43200
        firing = burn_5m >= 14.4 if firing else (burn_1h >= 14.4 and burn_5m >= 14.4)
        cost += 0.4 * (serving + sum(booting)) / 60.0
        f_db = 1.0 if demand <= 4000.0 else 4000.0 / demand
        warm = min(1.0, warm + (1.0 - warm) * (1.0 - math.exp(-1.0 / 30.0)) * f_db)
        serving, booting = serving + booting[1], [0, booting[2], booting[3], 0]
        desired = min(40, max(floor, math.ceil(serving * utilization / target - 1e-9)))
        size = serving + sum(booting)
        if desired > size and not any(booting):
            booting[3] += desired - size
            quiet = 0
        elif desired < size:
            quiet += 1
            if quiet >= 10:
                serving -= min(size - desired, max(1, math.floor(0.2 * size)), serving)
                quiet = 0
        else:
            quiet = 0
        total += burn_1h + p99 + budget + cost + firing
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

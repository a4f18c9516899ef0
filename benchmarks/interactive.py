"""One interactive run: a full 24 h free-play day (1,440 minutes) through ``Simulation``.

Budget (DESIGN.md): ≤ 25 ms on the 2-core reference machine. Prints the median and the best of repeats, and
the ratio against a peer measured in the same process: a bare loop of the same Erlang-C call per minute
(``scipy.special.pdtr``), i.e. the floor any scalar Python minute model pays for its queueing formula alone.

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
    median, best = statistics.median(days), min(days)
    peer = statistics.median(loops)
    print(
        f"full day (1,440 minutes) through Simulation: median {median:.1f} ms, best {best:.1f} ms "
        f"over {args.repeats} repeats (budget {BUDGET_MS:.0f} ms: {'met' if median <= BUDGET_MS else 'NOT met'})"
    )
    print(f"per minute: median {median / 1440 * 1000:.1f} µs")
    print(
        f"peer, bare Erlang-C loop for the same minutes: median {peer:.1f} ms; "
        f"ratio Simulation / bare loop = {median / peer:.1f}×"
    )


if __name__ == "__main__":
    main()

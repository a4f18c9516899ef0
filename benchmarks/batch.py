"""Batch throughput: full-model minute-steps per second, batch engine vs the scalar Simulation on the same work.

Prints, for a built-in policy, the vectorized engine in one process and in a 2-process sweep, the scalar
``Simulation`` on a sample of the same runs, their ratio, and the peers measured on this machine in the same
run: a stateless numpy Erlang-C loop (the queueing formula alone, no state, no policy).

    python benchmarks/batch.py [--runs 4000] [--sweep-runs 20000] [--scenario surge]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy.special import gammaln, pdtr

from oncallsim import Simulation
from oncallsim.batch.engine import BatchRun
from oncallsim.batch.policies import vectorized
from oncallsim.batch.sweep import LocalExecutor, SweepSpec, sweep
from oncallsim.policies import load_policy

GOAL = 1_000_000


def batch_rate(scenario: str, runs: int, policy: str) -> float:
    batch = BatchRun(scenario, range(runs), keep=())
    start = time.perf_counter()
    batch.run(policy=vectorized(policy))
    return runs * batch.length / (time.perf_counter() - start)


def scalar_rate(scenario: str, runs: int, policy: str) -> float:
    start = time.perf_counter()
    steps = 0
    for seed in range(runs):
        sim = Simulation(scenario, seed=seed)
        sim.run(policy=load_policy(policy))
        steps += len(sim.timeline)
    return steps / (time.perf_counter() - start)


def sweep_rate(scenario: str, runs: int, policy: str, workers: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        spec = SweepSpec(scenario, seeds=runs, policy=policy, rows_per_task=max(1, runs // (2 * workers)))
        start = time.perf_counter()
        sweep(spec, LocalExecutor(workers), Path(tmp) / "out.parquet")
        elapsed = time.perf_counter() - start
    return runs * Simulation(scenario, minutes=None).plan.minutes / elapsed


def erlang_loop_rate(runs: int, minutes: int = 1440) -> float:
    """The peer: per minute, Erlang C for every run with numpy (pdtr + gammaln), nothing else."""
    rng = np.random.default_rng(0)
    n = np.full(runs, 160.0)
    start = time.perf_counter()
    for _ in range(minutes):
        a = rng.uniform(60.0, 150.0, runs)
        b = np.exp(n * np.log(a) - a - gammaln(n + 1.0)) / pdtr(n, a)
        _c = b / (1.0 - (a / n) * (1.0 - b))
    return runs * minutes / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4000)
    parser.add_argument("--sweep-runs", type=int, default=20000, help="enough to amortize the workers' start")
    parser.add_argument("--scenario", default="surge")
    args = parser.parse_args()
    peer = erlang_loop_rate(args.runs)
    print(f"{args.scenario}: full-model minute-steps per second (this machine, {os.cpu_count()} cores)")
    print(f"  peer: stateless numpy Erlang-C loop          {peer:12,.0f}/s")
    for policy in ("hands-off", "textbook"):
        one = batch_rate(args.scenario, args.runs, policy)
        two = sweep_rate(args.scenario, args.sweep_runs, policy, workers=2)
        scalar = scalar_rate(args.scenario, max(4, args.runs // 200), policy)
        verdict = "met" if two >= GOAL else "NOT met"
        print(f"  policy {policy}:")
        print(f"    batch engine, 1 process ({args.runs} runs)      {one:12,.0f}/s")
        print(f"    sweep, 2 worker processes ({args.sweep_runs} runs) {two:12,.0f}/s   goal {GOAL:,}/s: {verdict}")
        print(f"    scalar Simulation                         {scalar:12,.0f}/s")
        print(
            f"    ratios: batch/scalar {one / scalar:.1f}×, batch/peer {one / peer:.2f}×, sweep/peer {two / peer:.2f}×"
        )


if __name__ == "__main__":
    main()

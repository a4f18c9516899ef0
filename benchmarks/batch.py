"""Batch throughput: full-model minute-steps per second, batch engine vs the scalar Simulation on the same work.

Prints, for a built-in policy, the vectorized engine in one process (per batch size), the end-to-end CLI sweep
(``oncallsim sweep SCENARIO --seeds N --policy P`` on 2 worker processes: start-up, workers and Parquet
included, with the cores it kept busy, and its fixed part: the same command for one seed), the scalar
``Simulation`` on a sample of the same runs, where a worker's
time goes (``BatchRun.step`` and the rest), and the peer measured on this machine in the same run: a stateless
numpy Erlang-C loop (the queueing formula alone, no state, no policy).

    python benchmarks/batch.py [--runs 4000] [--sweep-runs 20000] [--scenario surge] [--policies textbook]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy.special import gammaln, pdtr

from oncallsim import Simulation
from oncallsim.batch.engine import BatchRun
from oncallsim.batch.policies import vectorized
from oncallsim.batch.runs import row
from oncallsim.debrief.accumulate import OutcomeAccumulator, scenario_incident_start
from oncallsim.debrief.scorecard import p99_targets
from oncallsim.policies import load_policy
from oncallsim.scenarios import load_scenario

GOAL = 3_000_000  # issue 8: the CLI sweep, end to end on 2 cores


def batch_rate(scenario: str, runs: int, policy: str) -> float:
    BatchRun(scenario, range(8), keep=()).run(policy=vectorized(policy))  # warm: compiled code loaded
    batch = BatchRun(scenario, range(runs), keep=())
    start = time.perf_counter()
    batch.run(policy=vectorized(policy))
    return runs * batch.length / (time.perf_counter() - start)


def scalar_rate(scenario: str, runs: int, policy: str) -> float:
    Simulation(scenario, seed=0).run(policy=load_policy(policy))  # warm: compiled code loaded
    start = time.perf_counter()
    steps = 0
    for seed in range(runs):
        sim = Simulation(scenario, seed=seed)
        sim.run(policy=load_policy(policy))
        steps += len(sim.timeline)
    return steps / (time.perf_counter() - start)


def cli_sweep_rate(scenario: str, runs: int, policy: str, workers: int) -> tuple[float, float]:
    """The command a user types, end to end (start-up, workers, Parquet, summary): its rate and the cores busy."""
    minutes = Simulation(scenario).plan.minutes
    with tempfile.TemporaryDirectory() as tmp:
        command = [sys.executable, "-m", "oncallsim", "sweep", scenario, "--seeds", str(runs), "--policy", policy]
        command += ["--workers", str(workers), "--out", str(Path(tmp) / "out.parquet")]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        elapsed = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return runs * minutes / elapsed, cpu / elapsed


def cli_floor_s(scenario: str, policy: str, workers: int) -> float:
    """The same command for one seed: start-up (imports, numba's first use, the plan), two workers, Parquet."""
    with tempfile.TemporaryDirectory() as tmp:
        command = [sys.executable, "-m", "oncallsim", "sweep", scenario, "--seeds", "1", "--policy", policy]
        command += ["--workers", str(workers), "--out", str(Path(tmp) / "out.parquet")]
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        return time.perf_counter() - start


def worker_shares(scenario: str, runs: int, policy: str) -> dict[str, float]:
    """Where a sweep worker's time goes for one chunk (the loop of ``run_seeds``, timed stage by stage)."""
    spec = load_scenario(scenario)
    times = dict.fromkeys(("set-up", "BatchRun.step", "policy", "outcome accumulator", "outcome rows"), 0.0)
    start = time.perf_counter()
    batch = BatchRun(spec, range(runs), keep=())
    acc = OutcomeAccumulator(batch.n, batch.params, batch.budget.copy(), spec.latency_target_ms, p99_targets(spec))
    vector = vectorized(policy)
    assert vector is not None
    vector.reset(batch)
    times["set-up"] += time.perf_counter() - start
    decide = getattr(vector, "decide_coded", vector.decide)
    while not batch.done:
        t = batch.t
        a = time.perf_counter()
        actions = decide(batch)
        b = time.perf_counter()
        batch.step(actions)
        c = time.perf_counter()
        acc.add(t, batch.last)
        times["policy"] += b - a
        times["BatchRun.step"] += c - b
        times["outcome accumulator"] += time.perf_counter() - c
    a = time.perf_counter()
    starts = [scenario_incident_start(plan, batch.length) for plan in batch.plans]
    outcomes = acc.finish(starts, batch.action_minutes())
    times["outcome accumulator"] += time.perf_counter() - a
    a = time.perf_counter()
    _rows = [row(spec, seed, o) for seed, o in zip(range(runs), outcomes, strict=True)]
    times["outcome rows"] += time.perf_counter() - a
    total = sum(times.values())
    return {name: value / total for name, value in times.items()}


def batch_length(scenario: str) -> int:
    return int(Simulation(scenario).plan.minutes)


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
    parser.add_argument("--sweep-runs", type=int, default=20000, help="the CLI sweep's --seeds")
    parser.add_argument("--scenario", default="surge")
    parser.add_argument("--policies", default="hands-off,textbook", help="comma-separated built-in policies")
    parser.add_argument("--repeat", type=int, default=2, help="CLI sweeps per policy; the best is shown")
    parser.add_argument("--batch-sizes", default="500,2000,5000", help="runs per batch for the 1-process rate")
    args = parser.parse_args()
    peer = erlang_loop_rate(args.runs)
    print(f"{args.scenario}: full-model minute-steps per second (this machine, {os.cpu_count()} cores)")
    print(f"  peer: stateless numpy Erlang-C loop          {peer:12,.0f}/s")
    for policy in args.policies.split(","):
        print(f"  policy {policy}:")
        for size in (int(x) for x in args.batch_sizes.split(",")):
            one = batch_rate(args.scenario, size, policy)
            print(f"    batch engine, 1 process, {size:5d} runs a batch {one:12,.0f}/s   {one / peer:.2f}× the peer")
        one = batch_rate(args.scenario, args.runs, policy)
        cli, cores = max(cli_sweep_rate(args.scenario, args.sweep_runs, policy, 2) for _ in range(args.repeat))
        floor = min(cli_floor_s(args.scenario, policy, 2) for _ in range(args.repeat))
        scalar = scalar_rate(args.scenario, max(4, args.runs // 200), policy)
        verdict = "met" if cli >= GOAL else "NOT met"
        label = f"CLI sweep end to end, 2 workers ({args.sweep_runs} seeds)"
        print(
            f"    {label} {cli:12,.0f}/s   {cli / peer:.2f}× the peer, "
            f"{cores:.2f} cores busy; goal {GOAL:,}/s: {verdict}"
        )
        steps = args.sweep_runs * batch_length(args.scenario)
        print(
            f"    of which fixed (the same command for 1 seed) {floor:.2f} s of {steps / cli:.2f} s; "
            f"the rest {steps / max(steps / cli - floor, 1e-9):,.0f}/s"
        )
        print(f"    scalar Simulation                         {scalar:12,.0f}/s")
        ratios = f"batch/scalar {one / scalar:.1f}×, batch/peer {one / peer:.2f}×, CLI sweep/peer {cli / peer:.2f}×"
        print(f"    ratios: {ratios}")
        shares = worker_shares(args.scenario, 5000, policy)
        print("    a sweep worker's time (5000 runs a chunk): " + ", ".join(f"{k} {v:.0%}" for k, v in shares.items()))


if __name__ == "__main__":
    main()

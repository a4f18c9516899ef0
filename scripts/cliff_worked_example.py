"""docs/cliff.md's worked example, measured again: retry-storm's cliff map over load × retries, its picture, the
chain with an exponential timeout beside the fixed one, and the scenario itself on held-out seeds at each point.

    python scripts/cliff_worked_example.py [--seeds 20] [--held-out 10] [--out docs/images/cliff]

Prints Markdown tables (the classes, the chains' agreement, the held-out seeds) and the wall and CPU time of the
map; writes the map's Parquet files, HTML and PNG under --out. Minutes of work on this 2-core machine.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from oncallsim.batch import cliff_map, cliff_output  # noqa: E402
from oncallsim.batch.cliff_map import classify  # noqa: E402
from oncallsim.batch.executors import LocalExecutor  # noqa: E402
from oncallsim.cliff.predict import predict  # noqa: E402
from oncallsim.scenarios import load_scenario  # noqa: E402
from oncallsim.simulation import Simulation  # noqa: E402

LETTERS = {"stable": "S", "mixed": "x", "metastable": "M", "unstable": "U", None: "·"}


def cpu_s() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def held_out_run(job: tuple[dict[str, object], int, int, int]) -> str:
    """One run of the scenario itself (its own brownout, drawn per seed), watched as a map's run is
    (``observe_run``: the minute before the brownout, then up to ``horizon`` minutes after it)."""
    overrides, seed, within, horizon = job
    at, length, _ = Simulation("retry-storm", seed=seed, overrides=overrides).plan.brownouts[0]
    run = cliff_map.observe_run(
        load_scenario("retry-storm"), overrides, seed, warmup_min=at, trigger_minutes=length,
        horizon_min=min(horizon, 60 - at - length), hold_min=3,
    )  # fmt: skip
    return "slow" if run.outcome == "stable" and run.recovery_min > within else run.outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--held-out", type=int, default=10)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images" / "cliff")
    parser.add_argument("--loads", default="0.2:1.4:7")
    parser.add_argument("--retries", default="0:3:4")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    spec = cliff_map.CliffSpec(
        "retry-storm", cliff_map.parse_vary([f"load={args.loads}", f"retries={args.retries}"]), seeds=args.seeds
    )
    plan = cliff_map.plan_map(spec)
    started, cpu = time.perf_counter(), cpu_s()
    results, runs = cliff_map.run_map(plan, LocalExecutor())
    wall, cpu = time.perf_counter() - started, cpu_s() - cpu
    out = args.out / "retry-storm.parquet"
    cliff_output.write_runs(out, runs, plan.config)
    cliff_output.write_points(out, results, plan.config)
    title = f"retry-storm: trigger {plan.trigger.text()}, {spec.seeds} seeds a point"
    cliff_output.map_png(plan, results, args.out / "retry-storm.png", title)
    (args.out / "retry-storm.html").write_text(cliff_output.map_html(plan, results, title), encoding="utf-8")
    print(f"{len(runs['seed'])} runs, {len(results)} points: {wall:.0f} s wall, {cpu:.0f} s CPU (2026-12-02)")
    loads, retries = spec.vary["load"], spec.vary["retries"]
    by = {(r.values["load"], r.values["retries"]): r for r in results}
    print("\n| retries \\ load | " + " | ".join(f"{x:g}" for x in loads) + " |")
    print("|---|" + "---|" * len(loads))
    exponential = {}
    for n in retries:
        cells = []
        for x in loads:
            r = by[(x, n)]
            exp = predict(r.operating, within_min=spec.within_min, horizon_min=spec.horizon_min, run_min=plan.minutes,
                          shape="exponential")  # fmt: skip
            exponential[(x, n)] = exp.cls
            cells.append(f"{LETTERS[r.cls]} {LETTERS[r.chain.cls]} {LETTERS[exp.cls]}")
        print(f"| {n} | " + " | ".join(cells) + " |")
    same = sum(r.cls == r.chain.cls for r in results)
    same_exp = sum(r.cls == exponential[(r.values["load"], r.values["retries"])] for r in results)
    print(f"\nruns = chain (fixed timeout) at {same} of {len(results)}; = chain (exponential) at {same_exp}")
    print("\n| load | retries | λ/cμ | λA/cμ | zone | runs | recovery p10/p50/p90 min | chain | chain recovery min |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        spread = " / ".join(f"{np.percentile(r.recovery_min, p):g}" for p in (10, 50, 90)) if r.recovery_min else "—"
        mean = "never" if r.chain.recovery_s == float("inf") else f"{r.chain.recovery_s / 60:.1f}"
        counts = ", ".join(f"{v} {k}" for k, v in r.counts.items() if v)
        print(f"| {r.values['load']:g} | {r.values['retries']} | {r.operating.load:.2f} | {r.amplified:.2f} | "
              f"{r.zone} | {r.cls} ({counts}) | {spread} | {r.chain.cls} | {mean} |")  # fmt: skip
    if args.held_out:
        seeds = range(1000, 1000 + args.held_out)
        print(f"\nheld-out seeds {seeds.start}–{seeds.stop - 1}, the scenario's own brownout (drawn per seed):")
        print("| load | retries | map | scenario |")
        print("|---|---|---|---|")
        agree = 0
        jobs = [
            (dict(plan.overrides[r.number]), seed, spec.within_min, spec.horizon_min) for r in results for seed in seeds
        ]
        with ProcessPoolExecutor(max_workers=2) as pool:
            outcomes = list(pool.map(held_out_run, jobs))
        for k, r in enumerate(results):
            cls = classify(outcomes[k * len(seeds) : (k + 1) * len(seeds)])
            agree += cls == r.cls
            print(f"| {r.values['load']:g} | {r.values['retries']} | {r.cls} | {cls} |")
        print(f"\nthe scenario on held-out seeds agrees with the map at {agree} of {len(results)} points")


if __name__ == "__main__":
    main()

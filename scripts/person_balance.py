"""Can a person who reacts pass? The measurement behind the built-in scenarios' objectives and scores.

Plays each scenario on many seeds by hands-off, by the playbook (``textbook``) and by a scripted person
(``policies/person.py``) told by the page or by the guided clock's first stop and acting some minutes later; prints
per scenario and player the share of seeds that met every objective, each objective's pass rate, and the score's
median and range. docs/scenarios.md quotes its figures.

    python scripts/person_balance.py [--seeds 1000-1019] [--scenario bad-deploy ...] [--delays 0,5,10,20,30]
"""

from __future__ import annotations

import argparse
import statistics
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from oncallsim import Simulation
from oncallsim.debrief import make_report
from oncallsim.debrief.report import opening_fleet_cost, run_outcome
from oncallsim.debrief.score import SCORE_UNITS, part_amounts
from oncallsim.policies import load_policy
from oncallsim.policies.person import Person
from oncallsim.scenarios import builtin_scenarios

Row = tuple[list[bool], int, float, dict[str, float], list[float | None]]


def play(job: tuple[str, int, str, int]) -> tuple[str, str, int, Row]:
    scenario, seed, who, delay = job
    sim = Simulation(scenario, seed=seed)
    policy: Any = Person(delay, "stop" if who == "stop" else "page") if who in ("page", "stop") else load_policy(who)
    sim.run(policy=policy)
    report = make_report(sim, effects=False)  # the objectives and the score; no decision replays
    label = who if who in ("hands-off", "textbook") else f"{who}+{delay}"
    amounts = part_amounts(run_outcome(sim), opening_fleet_cost(sim))
    values = [o.value for o in report.objectives]
    return (
        scenario,
        label,
        seed,
        ([o.passed for o in report.objectives], report.score, report.budget_spent, amounts, values),
    )


def _quantiles(values: list[float | None]) -> list[str]:
    """p10, p50 and p90 of an objective's measured values (a recovery that never came sorts last)."""
    ordered = sorted(values, key=lambda v: (v is None, v or 0.0))
    picks = [ordered[min(len(ordered) - 1, int(q * len(ordered)))] for q in (0.1, 0.5, 0.9)]
    return ["none" if v is None else f"{v:.4g}" for v in picks]


def seeds_of(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--seeds", default="1000-1019", help="a range of seeds, LOW-HIGH (default 1000-1019)")
    ap.add_argument("--scenario", action="append", help="a scenario id (repeatable; default: all with objectives)")
    ap.add_argument("--delays", default="0,5,10,20,30", help="the person's delays in minutes (default 0,5,10,20,30)")
    ap.add_argument("--told", default="page,stop", help="what tells the person: page, stop or both (default both)")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    known = builtin_scenarios()
    scenarios = args.scenario or [sid for sid, s in known.items() if s.objectives]
    seeds = seeds_of(args.seeds)
    who = [("hands-off", 0), ("textbook", 0)]
    who += [(t, int(d)) for t in args.told.split(",") for d in args.delays.split(",")]
    jobs = [(sc, seed, w, d) for sc in scenarios for w, d in who for seed in seeds]
    results: dict[tuple[str, str], list[Row]] = {}
    with ProcessPoolExecutor(args.workers) as pool:
        for scenario, label, _seed, row in pool.map(play, jobs, chunksize=2):
            results.setdefault((scenario, label), []).append(row)
    for scenario in scenarios:
        labels = [o.label() for o in known[scenario].objectives]
        print(f"\n{scenario} (seeds {args.seeds}): objectives " + "; ".join(f"[{i}] {x}" for i, x in enumerate(labels)))
        for (sc, label), rows in results.items():
            if sc != scenario:
                continue
            every = sum(all(r[0]) for r in rows) / len(rows)
            each = " ".join(f"{sum(r[0][i] for r in rows) / len(rows):4.0%}" for i in range(len(labels)))
            scores = [r[1] for r in rows]
            spent = statistics.median(r[2] for r in rows)
            parts = " · ".join(f"{name} {statistics.median(r[3][name] for r in rows):.1f}" for name in SCORE_UNITS)
            print(
                f"  {label:<10} all met {every:4.0%}   each {each}   score {statistics.median(scores):5.1f} "
                f"[{min(scores)}–{max(scores)}]   budget spent (median) {spent:.2%}   parts (median): {parts}"
            )
            print(
                f"  {'':<10} measured (p10 / p50 / p90, never = none): "
                + "; ".join(f"[{i}] " + " / ".join(_quantiles([r[4][i] for r in rows])) for i in range(len(labels)))
            )


if __name__ == "__main__":
    main()

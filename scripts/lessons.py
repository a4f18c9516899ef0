"""The article's lessons as scenarios (issue 23): each "before" against its "after" over many seeds.

For each lesson scenario (cpu-herd, breaker-flap, capacity-drift) and each seed: the scenario as it opens
(hands-off: the "before"), the textbook playbook, and the "after" from the start (the opening with the after's
setting). Prints, per scenario and way, how many seeds pass every objective and each objective's distribution
(10th / 50th / 90th percentile), which is where each file's thresholds come from:

    python scripts/lessons.py [--seeds 0:20] [--scenario cpu-herd]
"""

from __future__ import annotations

import argparse
import statistics

from oncallsim import Simulation
from oncallsim.debrief.report import run_outcome
from oncallsim.debrief.scorecard import score
from oncallsim.policies import load_policy

AFTERS = {
    "cpu-herd": {"balancer": "p2c"},
    "breaker-flap": {"breaker": "sre"},
    "capacity-drift": {"limiter": "bbr"},
}


def _quantiles(values: list[float]) -> str:
    if len(values) < 2:
        return " / ".join(f"{v:.4g}" for v in values)
    q = statistics.quantiles(values, n=10, method="inclusive")
    return f"{q[0]:.4g} / {statistics.median(values):.4g} / {q[-1]:.4g}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0:20", help="first:last (exclusive)")
    parser.add_argument("--scenario", action="append", choices=sorted(AFTERS))
    args = parser.parse_args()
    first, last = (int(x) for x in args.seeds.split(":"))
    for scenario in args.scenario or list(AFTERS):
        for way in ("before", "textbook", "after"):
            passed = 0
            values: dict[str, list[float]] = {}
            for seed in range(first, last):
                overrides = AFTERS[scenario] if way == "after" else {}
                sim = Simulation(scenario, seed=seed, overrides=overrides)
                sim.run(policy=load_policy("textbook") if way == "textbook" else None)
                results = score(sim.scenario, run_outcome(sim))
                passed += all(r.passed for r in results)
                for r in results:
                    values.setdefault(r.name, []).append(float("nan") if r.value is None else float(r.value))
            print(f"{scenario} {way}: all objectives on {passed}/{last - first} seeds", flush=True)
            for label, vs in values.items():
                print(f"  {label}: {_quantiles(vs)}", flush=True)


if __name__ == "__main__":
    main()

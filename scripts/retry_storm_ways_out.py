"""Which moves end a retry storm, and how fast: the measurement behind docs/overload.md and policies/fleet.py.

Plays ``retry-storm`` hands-off on one seed and, in a copy of the run per move, makes one move a few minutes after
the brownout ended; prints the minute each run recovered (error rate below 1 %) and the budget it had left.

    python scripts/retry_storm_ways_out.py [--seed 7] [--after 3] [--minutes 45]
"""

from __future__ import annotations

import argparse
from typing import Any

from oncallsim import Simulation

MOVES: dict[str, list[tuple[str, Any]]] = {
    "nothing": [],
    "retry budget 10 %": [("retry_budget", 0.1)],
    "deadline propagation": [("deadline_propagation", True)],
    "CoDel": [("queue_discipline", "codel")],
    "BBR limiter": [("limiter", "bbr")],
    "full-jitter backoff": [("retry_backoff", "full-jitter")],
    "shed all low-priority": [("shed_share", 1.0)],
    "floor 30": [("floor", 30)],
    "budget + deadlines": [("retry_budget", 0.1), ("deadline_propagation", True)],
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--after", type=int, default=3, help="minutes after the brownout ended (default 3)")
    ap.add_argument("--minutes", type=int, default=45)
    args = ap.parse_args()
    probe = Simulation("retry-storm", seed=args.seed, minutes=args.minutes)
    start, length, slowdown = probe.plan.brownouts[0]
    at = start + length + args.after
    print(f"seed {args.seed}: brownout {probe.plan.clock(start)} for {length} min, {slowdown:.1f}× slower; "
          f"each move at {probe.plan.clock(at)}")  # fmt: skip
    for name, actions in MOVES.items():
        sim = Simulation("retry-storm", seed=args.seed, minutes=args.minutes)
        recovered = None
        for m in range(args.minutes):
            record = sim.step(actions if m == at else [])
            if m > at and recovered is None and record.error_rate < 0.01:
                recovered = m - at
        when = f"{recovered} min after the move" if recovered is not None else "never"
        print(f"  {name:24s} recovered: {when:24s} budget left {record.budget_left:6.1%}", flush=True)


if __name__ == "__main__":
    main()

"""First contact: how long both engines take to be ready from an empty compiled-code cache, and after.

For this checkout and, beside it, another commit (default: the parent of HEAD; ``--against REV``), each in
fresh processes with ``NUMBA_CACHE_DIR`` pointing at an empty folder, as a newcomer meets it:

- cold: both engines prepared from an empty cache (imports included): CPU seconds (user + system, the
  process and its children) and wall seconds;
- warm: a new process with the now full cache, until both engines are ready (wall seconds);
- the busy minute: free play at 2,500 req/s through ``Simulation.step`` (median ms of 20 minutes), plain and
  with every overload mechanism on (p2c with 8 clients, CoDel and a queue limit, deadlines, BBR, throttling,
  2 retries with full jitter and a 10 % budget).

The other commit is checked out in a temporary git worktree and measured the same way, one after the other,
so the ratios compare the two on the same machine in the same call. Budgets (DESIGN.md): cold ≤ 30 s of CPU
(goal 15), warm ≤ 0.5 s, the busy minute with every mechanism no slower than before.

    python benchmarks/compile.py [--against REV] [--only-here]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PREPARE = """
import time
t = time.perf_counter()
from oncallsim.model.engine import ENGINES, prepare
for name in ("minute", "request"):
    prepare(ENGINES[name])
print(time.perf_counter() - t)
"""

BUSY = """
import json, statistics, sys, time
from oncallsim import Simulation
from benchmarks.requests import MECHANISMS
out = {}
for label, extra in (("plain", {}), ("mechanisms", MECHANISMS)):
    overrides = {"base_requests_per_s": 2500.0, "diurnal_amplitude": 0.0, "floor": 20, **extra}
    sim = Simulation("free-play", seed=1, engine="request", minutes=22, overrides=overrides)
    sim.step()
    times = []
    for _ in range(20):
        start = time.perf_counter()
        sim.step()
        times.append((time.perf_counter() - start) * 1000.0)
    out[label] = statistics.median(times)
print(json.dumps(out))
"""


def _run(checkout: Path, code: str, cache: Path) -> tuple[str, float, float]:
    """(stdout, CPU s of the child, wall s)."""
    env = {**os.environ, "PYTHONPATH": str(checkout), "NUMBA_CACHE_DIR": str(cache)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=checkout, env=env, capture_output=True, text=True, check=True
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return done.stdout.strip().splitlines()[-1], cpu, wall


def measure(checkout: Path) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="oncallsim-cache-") as cache:
        _, cold_cpu, cold_wall = _run(checkout, PREPARE, Path(cache))
        _, _, warm_wall = _run(checkout, PREPARE, Path(cache))
        busy, _, _ = _run(checkout, BUSY, Path(cache))
    minutes = json.loads(busy)
    return {
        "cold CPU s": cold_cpu,
        "cold wall s": cold_wall,
        "warm ready s": warm_wall,
        "busy minute ms": minutes["plain"],
        "busy minute, every mechanism, ms": minutes["mechanisms"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", default="HEAD~1", help="the commit to compare with (default: HEAD's parent)")
    ap.add_argument("--only-here", action="store_true", help="measure this checkout alone")
    args = ap.parse_args()
    here = measure(ROOT)
    other: dict[str, float] | None = None
    if not args.only_here:
        with tempfile.TemporaryDirectory(prefix="oncallsim-against-") as tmp:
            tree = Path(tmp) / "tree"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), args.against],
                           check=True, capture_output=True)  # fmt: skip
            try:
                other = measure(tree)
            finally:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
    print(f"{'':36} {'this checkout':>14}" + (f" {args.against:>14} {'ratio':>7}" if other else ""))
    for name, value in here.items():
        row = f"{name:36} {value:>14.2f}"
        if other:
            row += f" {other[name]:>14.2f} {value / other[name]:>7.2f}"
        print(row)


if __name__ == "__main__":
    main()

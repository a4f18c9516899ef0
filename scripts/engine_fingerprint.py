"""Fingerprints of the engines' numbers, to show a refactor of compiled code changes none of them.

Plays every built-in scenario on both engines (hands-off, and the textbook playbook) and a busy free-play
stretch with every overload mechanism on (the busy minute of benchmarks/requests.py), and prints a SHA-256 of
each run's records as JSON (every field, every extra, every event). Run it before and after a change and compare
the two outputs: a single differing bit in any number shows as a differing line.

    python scripts/engine_fingerprint.py [--minutes 45] [--model-version 1] > before.txt

``--model-version 1`` plays every run with version 1's rules, as a version-1 run file replays: its lines must stay
those of the code before version 2.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the checkout: its benchmarks' settings

from benchmarks.requests import MECHANISMS
from oncallsim import Simulation, builtin_scenarios
from oncallsim.policies import load_policy

BUSY = {"base_requests_per_s": 2500.0, "diurnal_amplitude": 0.0, "floor": 20}


def digest(sim: Simulation, policy: str | None) -> str:
    """Every value of every record, but the settings a request-engine record carries (the run's inputs, which gain
    names as controls are added or renamed; tests/test_version1.py compares them)."""
    records = sim.run(policy=load_policy(policy) if policy else None)
    lines = hashlib.sha256()
    for record in records:
        values = record.to_dict()
        if isinstance(values.get("extras"), dict):
            values["extras"] = {k: v for k, v in values["extras"].items() if k != "settings"}
        lines.update(json.dumps(values, sort_keys=True, default=repr).encode())
    return lines.hexdigest()[:16]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=int, default=45, help="minutes of each run (the scenario's, if shorter)")
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument(
        "--model-version", default=None, help="the model version's rules (default: this code's; 1: version-1 files)"
    )
    args = ap.parse_args()
    runs: list[tuple[str, dict[str, Any], str, str | None]] = []
    for sid in builtin_scenarios():
        for engine in ("minute", "request"):
            for policy in (None, "textbook"):
                runs.append((sid, {}, engine, policy))
    runs.append(("free-play", {**BUSY, **MECHANISMS}, "request", None))
    for sid, overrides, engine, policy in runs:
        start = time.perf_counter()
        try:
            version = {} if args.model_version is None else {"model_version": args.model_version}
            sim = Simulation(sid, seed=args.seed, engine=engine, overrides=overrides, minutes=args.minutes, **version)
            value = digest(sim, policy)
        except Exception as exc:  # a scenario the engine refuses (fleet events on the minute engine)
            value = f"refused: {type(exc).__name__}"
        label = f"{sid}{'+mechanisms' if overrides else ''} {engine} {policy or 'hands-off'}"
        print(f"{label:48} {value}", flush=True)
        print(f"  {time.perf_counter() - start:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()

"""How many request-engine live runs this machine holds at a speed with minute-engine runs still on time
(issue 29 item 7): a real server, ``--bystanders`` minute-engine runs at 16× and N slow-instance runs at the
speed, each with a WebSocket viewer; after ``--settle`` seconds, over ``--window`` seconds: how many request
runs say they are slowed, and the bystanders' lateness (``/api/stats``: p99, share over 250 ms). N grows until a
request run is slowed or the bystanders' p99 passes 250 ms.

    python scripts/worker_capacity.py --speeds 1,4,16 --max-runs 12
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.server import Watcher, get_json, post_json, start_server, stop_server, wait_engines_ready


def post_run(base: str, body: dict[str, Any]) -> str:
    return str(post_json(base, "/api/runs", body, 60.0)["id"])


def point(speed: int, runs: int, bystanders: int, settle: float, window: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        process, base, log = start_server(Path(tmp) / "cap.sqlite", startup_timeout_s=120)
        viewers: list[Watcher] = []  # a run nobody watches does not tick
        try:
            wait_engines_ready(base)
            ids = [post_run(base, {"scenario": "free-play", "seed": i, "speed": 16, "difficulty": "hard",
                                   "minutes": 10000}) for i in range(bystanders)]  # fmt: skip
            heavy = {"scenario": "slow-instance", "speed": speed, "difficulty": "hard", "minutes": 1440}
            ids += [post_run(base, {**heavy, "seed": i}) for i in range(runs)]
            viewers = [Watcher.of_run(base, run_id) for run_id in ids]
            for viewer in viewers:
                viewer.start()
            time.sleep(settle)
            slowed_max = 0
            end = time.monotonic() + window
            while time.monotonic() < end:
                slowed_max = max(slowed_max, get_json(base, "/api/stats")["slowed"])
                time.sleep(0.5)
            stats = get_json(base, f"/api/stats?window_s={window}")
            return {
                "speed": speed,
                "runs": runs,
                "slowed": slowed_max,
                "p99_ms": round(stats["lateness_p99_ms"]),
                "over_250ms": round(stats["late_over_250ms_share"], 3),
                "in_workers": stats["in_workers"],
                # what the request runs' pages said at the end: the speed each plays at (its own when not slowed)
                "playing_at": [viewer.slowed or speed for viewer in viewers[bystanders:]],
                "load": round(os.getloadavg()[0], 1),
            }
        finally:
            for viewer in viewers:
                viewer.stop.set()
            stop_server(process, log, timeout_s=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--speeds", default="1,4,16")
    parser.add_argument("--max-runs", type=int, default=12)
    parser.add_argument("--bystanders", type=int, default=20)
    parser.add_argument("--settle", type=float, default=15.0)
    parser.add_argument("--window", type=float, default=10.0)
    args = parser.parse_args()
    for speed in (int(s) for s in args.speeds.split(",")):
        held = 0
        runs = 1
        while runs <= args.max_runs:
            result = point(speed, runs, args.bystanders, args.settle, args.window)
            print(json.dumps(result), flush=True)
            if result["slowed"] or result["p99_ms"] > 250:
                break
            held = runs
            runs = runs + 1 if runs < 4 else runs * 2
        print(
            f"{speed}x: {held} request-engine runs held with {args.bystanders} minute-engine runs on time", flush=True
        )


if __name__ == "__main__":
    main()

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
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.server import start_server


def post(base: str, body: dict[str, Any]) -> str:
    req = urllib.request.Request(
        base + "/api/runs", json.dumps(body).encode(), {"Content-Type": "application/json", "Origin": base}
    )
    with urllib.request.urlopen(req, timeout=60) as r:
        return str(json.loads(r.read())["id"])


def get(base: str, path: str) -> Any:
    with urllib.request.urlopen(base + path, timeout=30) as r:
        return json.loads(r.read())


def view(base: str, run_id: str, stop: threading.Event, slowed: dict[str, Any]) -> None:
    """A viewer (a run nobody watches does not tick); the speed its states say it plays at (``slowed``)."""
    from websockets.sync.client import connect

    url = base.replace("http", "ws") + f"/api/runs/{run_id}/ws"
    with connect(url, origin=base, max_size=None) as ws:  # type: ignore[arg-type]
        while not stop.is_set():
            try:
                message = json.loads(ws.recv(timeout=0.5))
                state = message if message.get("type") == "state" else message.get("state")
                if state:
                    slowed[run_id] = state.get("slowed")
            except TimeoutError:
                continue
            except Exception:  # the server stopped at the end of a point
                return


def point(speed: int, runs: int, bystanders: int, settle: float, window: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        process, base, log = start_server(Path(tmp) / "cap.sqlite", startup_timeout_s=120)
        stop = threading.Event()
        try:
            while not all(e["state"] == "ready" for e in get(base, "/api/engines")):
                time.sleep(0.5)
            ids = [post(base, {"scenario": "free-play", "seed": i, "speed": 16, "difficulty": "hard",
                               "minutes": 10000}) for i in range(bystanders)]  # fmt: skip
            heavy = {"scenario": "slow-instance", "speed": speed, "difficulty": "hard", "minutes": 1440}
            ids += [post(base, {**heavy, "seed": i}) for i in range(runs)]
            slowed: dict[str, Any] = {}
            for run_id in ids:
                threading.Thread(target=view, args=(base, run_id, stop, slowed), daemon=True).start()
            time.sleep(settle)
            slowed_max = 0
            end = time.monotonic() + window
            while time.monotonic() < end:
                slowed_max = max(slowed_max, get(base, "/api/stats")["slowed"])
                time.sleep(0.5)
            stats = get(base, f"/api/stats?window_s={window}")
            return {
                "speed": speed,
                "runs": runs,
                "slowed": slowed_max,
                "p99_ms": round(stats["lateness_p99_ms"]),
                "over_250ms": round(stats["late_over_250ms_share"], 3),
                "in_workers": stats["in_workers"],
                # what the request runs' pages said at the end: the speed each plays at (its own when not slowed)
                "playing_at": [slowed.get(run_id) or speed for run_id in ids[bystanders:]],
                "load": round(os.getloadavg()[0], 1),
            }
        finally:
            stop.set()
            process.terminate()
            process.wait(timeout=30)
            log.close()


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

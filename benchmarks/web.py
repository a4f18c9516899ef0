"""Many live runs at once: can one small machine keep hundreds of consoles ticking at 16× without falling behind?

Starts ``oncallsim serve`` on a free loopback port, creates N runs at 16 minutes per second, connects one
WebSocket viewer per run (as N browser tabs would), listens for a fixed time, then stops everything. Prints
the minutes each viewer received against what the clock owed it (the ratio), and the server's worst lateness
of a minute. Loopback only; bounded in runs and time.

    python benchmarks/web.py [--runs 200] [--seconds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import websockets

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.server import running_server

SPEED = 16


def post(base: str, path: str, body: dict[str, object]) -> dict[str, object]:
    request = urllib.request.Request(
        base + path, data=json.dumps(body).encode(), headers={"content-type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())  # type: ignore[no-any-return]


async def viewer(base: str, run_id: str, seconds: float, counts: dict[str, int]) -> None:
    url = base.replace("http://", "ws://") + f"/api/runs/{run_id}/ws"
    async with websockets.connect(url, max_size=None) as ws:
        await ws.recv()  # the snapshot
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                message = json.loads(await asyncio.wait_for(ws.recv(), timeout=left))
            except TimeoutError:
                break
            if message.get("type") == "minute":
                counts[run_id] = counts.get(run_id, 0) + 1


async def load(base: str, runs: int, seconds: float) -> dict[str, int]:
    ids = [
        str(post(base, "/api/runs", {"scenario": "free-play", "seed": k, "speed": SPEED})["id"]) for k in range(runs)
    ]
    counts: dict[str, int] = {}
    await asyncio.gather(*(viewer(base, run_id, seconds, counts) for run_id in ids))
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, running_server(Path(tmp) / "runs.sqlite3") as base:
        counts = asyncio.run(load(base, args.runs, args.seconds))
        with urllib.request.urlopen(base + "/api/stats", timeout=10) as response:
            stats = json.loads(response.read())
    owed = SPEED * args.seconds
    received = [counts.get(k, 0) for k in counts] or [0]
    ratio = statistics.median(received) / owed
    print(f"{args.runs} live runs at {SPEED}× for {args.seconds:.0f} s, one WebSocket viewer each:")
    print(
        f"  minutes received per viewer: median {statistics.median(received):.0f}, min {min(received)} "
        f"(the clock owed {owed:.0f}); ratio {ratio:.2f}"
    )
    print(f"  server: worst lateness of a minute {stats['max_lag_ms']:.0f} ms; {stats['ticking']} runs ticking")


if __name__ == "__main__":
    main()

"""Many live runs at once: can one small machine keep hundreds of consoles ticking at 16× without falling behind?

Starts ``oncallsim serve`` on a free loopback port, creates N runs at 16 minutes per second, connects one
WebSocket viewer per run (as N browser tabs would), listens for a fixed time, then stops everything. Prints
the minutes each viewer received against what the clock owed it (the ratio), and the server's worst lateness
of a minute. Loopback only; bounded in runs and time.

    python benchmarks/web.py [--runs 100,200,500] [--seconds 10]

For each number of runs (a fresh server each), one line: runs held, the minutes received against those owed,
and the lateness of the minutes the server computed in the measured window (p50, p99, share over 250 ms).
The target (issue 13): 500 runs at 16× with p99 under 250 ms. Measured 2026-12-03 on the 2-core machine: 500 runs
p99 34–50 ms, none over 250 ms (173–328 ms before the server's garbage collector was tuned: docs/web.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import urllib.request
from pathlib import Path

import websockets

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.server import start_server

SPEED = 16


def post(base: str, path: str, body: dict[str, object]) -> dict[str, object]:
    request = urllib.request.Request(
        base + path,
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", "origin": base},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())  # type: ignore[no-any-return]


def get(base: str, path: str) -> dict[str, float]:
    with urllib.request.urlopen(base + path, timeout=30) as response:
        return json.loads(response.read())  # type: ignore[no-any-return]


async def viewer(base: str, run_id: str, start: asyncio.Event, stop: asyncio.Event, counts: dict[str, int]) -> None:
    """Connects, takes the snapshot, then counts the minutes that arrive between ``start`` and ``stop``."""
    url = base.replace("http://", "ws://") + f"/api/runs/{run_id}/ws"
    async with websockets.connect(url, max_size=None, origin=base, open_timeout=120) as ws:  # type: ignore[arg-type]
        await ws.recv()  # the snapshot
        stopping = asyncio.ensure_future(stop.wait())
        while not stop.is_set():
            receiving = asyncio.ensure_future(ws.recv())
            done, _ = await asyncio.wait({receiving, stopping}, return_when=asyncio.FIRST_COMPLETED)
            if receiving not in done:
                receiving.cancel()
                break
            if start.is_set() and json.loads(receiving.result()).get("type") == "minute":
                counts[run_id] = counts.get(run_id, 0) + 1


async def load(base: str, runs: int, seconds: float) -> tuple[dict[str, int], dict[str, float]]:
    """All runs created and watched first; then ``seconds`` measured with every viewer connected."""
    ids = [
        str(post(base, "/api/runs", {"scenario": "free-play", "seed": k, "speed": SPEED})["id"]) for k in range(runs)
    ]
    counts: dict[str, int] = {}
    start, stop = asyncio.Event(), asyncio.Event()
    viewers = [asyncio.ensure_future(viewer(base, run_id, start, stop, counts)) for run_id in ids]
    while (await asyncio.to_thread(get, base, "/api/stats"))["viewers"] < runs:
        await asyncio.sleep(0.2)  # waiting for a condition: every viewer connected
    loop = asyncio.get_running_loop()
    started = loop.time()
    start.set()
    await asyncio.sleep(seconds)
    stats = await asyncio.to_thread(get, base, f"/api/stats?window_s={seconds}")
    stop.set()
    stats["measured_s"] = loop.time() - started
    await asyncio.gather(*viewers)
    return counts, stats


def measure(runs: int, seconds: float) -> dict[str, float]:
    # one client creates every run here: the limits per client (web/limits.py) raised to the runs measured
    limits = [f"runs={runs}", f"runs_per_client={runs}", f"new_runs_per_minute={runs}", f"resident={runs}"]
    with tempfile.TemporaryDirectory() as tmp:
        process, base, log = start_server(Path(tmp) / "runs.sqlite3", extra=[a for x in limits for a in ("--limit", x)])
        try:
            counts, stats = asyncio.run(load(base, runs, seconds))
        finally:
            process.terminate()
            process.wait(timeout=30)
            log.close()
    received = [counts.get(k, 0) for k in counts] or [0]
    return {
        "runs": runs,
        "median_received": statistics.median(received),
        "min_received": min(received),
        "ratio": statistics.median(received) / (SPEED * stats["measured_s"]),
        **stats,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="100,200,500", help="comma-separated numbers of live runs")
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    try:
        sizes = [int(n) for n in args.runs.split(",")]
    except ValueError:
        parser.error(f"--runs: comma-separated whole numbers, got {args.runs!r}")
    if any(not 1 <= n <= 2000 for n in sizes) or not 1 <= args.seconds <= 300:
        parser.error("--runs from 1 to 2000 each, --seconds from 1 to 300")
    print(
        f"live runs at {SPEED}x for {args.seconds:.0f} s, one WebSocket viewer each (measured once all are connected)"
    )
    print("  runs  received/owed  lateness p50    p99  >250 ms  worst")
    for n in sizes:
        r = measure(n, args.seconds)
        print(
            f"  {n:4d}  {r['ratio']:13.2f}  {r['lateness_p50_ms']:9.0f} ms {r['lateness_p99_ms']:4.0f} ms"
            f"  {r['late_over_250ms_share']:6.1%}  {r['max_lag_ms']:5.0f} ms",
            flush=True,
        )


if __name__ == "__main__":
    main()

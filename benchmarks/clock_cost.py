"""What one live minute costs the server's event loop, piece by piece (issue 30, item 7), without sockets:

    python benchmarks/clock_cost.py [--runs 50] [--minutes 200]

For ``--runs`` minute-engine live runs (free play, as benchmarks/web.py plays them), each minute of each run as
the clock computes it: the step (``Simulation.step``), the minute's message (``wire_record`` + ``state``), its
encoding (orjson) and its delivery to one viewer's queue (``broadcast``). Prints the mean microseconds of each
and what they bound: the event loop is one thread, so at 16 minutes a second it holds at most
1 s / (16 × cost per minute) runs, before the WebSocket sends (measured by benchmarks/web.py) and with the
machine's other work on the same core. The load average is printed beside the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from oncallsim import Simulation
from oncallsim.store import RunStore
from oncallsim.web.live import RunManager, wire_record

SPEED = 16


async def measure(runs: int, minutes: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        store = RunStore(Path(tmp) / "runs.sqlite3")
        manager = RunManager(store)
        lives = []
        for k in range(runs):
            sim = await asyncio.to_thread(Simulation, "free-play", seed=k)
            live = await manager.create(sim, SPEED, paused=True)
            live.subscribers.add(asyncio.Queue())  # one viewer that reads nothing (its queue is emptied below)
            lives.append(live)
        spent = {"step": 0.0, "message": 0.0, "encode": 0.0, "deliver": 0.0, "tick": 0.0}
        clock = time.perf_counter
        for _ in range(minutes):
            for live in lives:
                t0 = clock()
                record = live.sim.step([])
                t1 = clock()
                message = {"type": "minute", "record": wire_record(record, live.sim.plan, live.gauge),
                           "state": live.state()}  # fmt: skip
                t2 = clock()
                text = orjson.dumps(message).decode()
                t3 = clock()
                for queue in live.subscribers:
                    queue.put_nowait(text)
                t4 = clock()
                spent["step"] += t1 - t0
                spent["message"] += t2 - t1
                spent["encode"] += t3 - t2
                spent["deliver"] += t4 - t3
            for live in lives:
                for queue in live.subscribers:
                    while not queue.empty():
                        queue.get_nowait()
        # the whole minute as the clock runs it (``LiveRun.tick``: the same pieces, plus the pacing and the
        # position written every 15 minutes), for comparison
        for live in lives:
            live.paused = False
        t0 = clock()
        for _ in range(minutes):
            progress: list[tuple[str, int]] = []
            for live in lives:
                live.tick(progress)
            for live in lives:
                for queue in live.subscribers:
                    while not queue.empty():
                        queue.get_nowait()
        spent["tick"] = clock() - t0
        for live in lives:
            live.paused = True
        await manager.shutdown()
        store.close()
    n = runs * minutes
    return {k: v / n * 1e6 for k, v in spent.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--minutes", type=int, default=200)
    args = parser.parse_args()
    if not 1 <= args.runs <= 2000 or not 1 <= args.minutes <= 1440:
        parser.error("--runs from 1 to 2000, --minutes from 1 to 1440")
    cost = asyncio.run(measure(args.runs, args.minutes))
    parts = cost["step"] + cost["message"] + cost["encode"] + cost["deliver"]
    print(f"{args.runs} runs x {args.minutes} minutes, load average {os.getloadavg()[0]:.1f}")
    for name in ("step", "message", "encode", "deliver"):
        print(f"  {name:8s} {cost[name]:7.1f} us  {cost[name] / parts:5.1%}")
    print(f"  parts    {parts:7.1f} us;  the clock's tick (all of it) {cost['tick']:7.1f} us a run-minute")
    print(f"  bound: at {SPEED}x one event loop computes at most {1e6 / (SPEED * cost['tick']):.0f} runs (no sends)")


if __name__ == "__main__":
    main()

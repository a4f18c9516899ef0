"""What one live minute costs the server's event loop, piece by piece (issue 30, item 7), without sockets:

    python benchmarks/clock_cost.py [--runs 50] [--minutes 200]

For ``--runs`` minute-engine live runs (free play, as benchmarks/web.py plays them), each minute of each run as
the clock computes it: the step (``Simulation.step``), the minute's message (``wire_record`` + ``state``), its
encoding (orjson) and its delivery to one viewer's queue (``broadcast``). Prints the mean microseconds of each
and what they bound: the event loop is one thread, so at 16 minutes a second it holds at most
1 s / (16 × cost per minute) runs, before the WebSocket sends (measured by benchmarks/web.py) and with the
machine's other work on the same core. The load average is printed beside the figures.

Each figure twice: the mean over all minutes (wall clock: on a shared machine it counts the time the process
waited for a core) and the cheapest round (one minute of every run, a few milliseconds: the code's own cost,
as an idle core runs it). The whole tick also in CPU time (``time.thread_time``). On a loaded machine the mean
is several times the cheapest round: the gap is the machine, not the code.
"""

from __future__ import annotations

import argparse
import asyncio
import math
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
PIECES = ("step", "message", "encode", "deliver")


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
        for live in lives:  # a first minute untimed: the compiled minute loaded from numba's cache (a second or more)
            live.sim.step([])
        spent = dict.fromkeys(PIECES, 0.0)
        cheapest = dict.fromkeys(PIECES, math.inf)
        clock = time.perf_counter
        for _ in range(minutes):
            before = dict(spent)
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
            for name in PIECES:
                cheapest[name] = min(cheapest[name], spent[name] - before[name])
            for live in lives:
                for queue in live.subscribers:
                    while not queue.empty():
                        queue.get_nowait()
        # the whole minute as the clock runs it (``LiveRun.tick``: the same pieces, plus the pacing and the
        # position written every 15 minutes), for comparison
        for live in lives:
            live.paused = False
        tick = {"tick": 0.0, "tick_cpu": 0.0, "tick_cheapest": math.inf}
        for _ in range(minutes):
            progress: list[tuple[str, int]] = []
            t0, c0 = clock(), time.thread_time()
            for live in lives:
                live.tick(progress)
            wall, cpu = clock() - t0, time.thread_time() - c0
            tick["tick"] += wall
            tick["tick_cpu"] += cpu
            tick["tick_cheapest"] = min(tick["tick_cheapest"], wall)
            for live in lives:
                for queue in live.subscribers:
                    while not queue.empty():
                        queue.get_nowait()
        for live in lives:
            live.paused = True
        await manager.shutdown()
        store.close()
    n = runs * minutes
    cost = {k: v / n * 1e6 for k, v in spent.items()}
    cost.update({f"{k}_cheapest": v / runs * 1e6 for k, v in cheapest.items()})
    cost.update({k: v / (runs if k == "tick_cheapest" else n) * 1e6 for k, v in tick.items()})
    return cost


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--minutes", type=int, default=200)
    args = parser.parse_args()
    if not 1 <= args.runs <= 2000 or not 1 <= args.minutes <= 1440:
        parser.error("--runs from 1 to 2000, --minutes from 1 to 1440")
    cost = asyncio.run(measure(args.runs, args.minutes))
    parts = sum(cost[name] for name in PIECES)
    cheap = sum(cost[f"{name}_cheapest"] for name in PIECES)
    print(f"{args.runs} runs x {args.minutes} minutes, load average {os.getloadavg()[0]:.1f}")
    print("  piece       mean (wall)        cheapest round")
    for name in PIECES:
        mean, low = cost[name], cost[f"{name}_cheapest"]
        print(f"  {name:8s} {mean:7.1f} us {mean / parts:5.1%}   {low:7.1f} us {low / cheap:5.1%}")
    print(f"  parts    {parts:7.1f} us          {cheap:7.1f} us")
    print(
        f"  the clock's tick (all of it) a run-minute: mean {cost['tick']:.1f} us wall, {cost['tick_cpu']:.1f} us CPU;"
        f" cheapest round {cost['tick_cheapest']:.1f} us"
    )
    print(
        f"  bound: at {SPEED}x one event loop computes at most {1e6 / (SPEED * cost['tick']):.0f} runs on this machine"
        f" as loaded now, {1e6 / (SPEED * cost['tick_cheapest']):.0f} on an idle core (no sends)"
    )


if __name__ == "__main__":
    main()

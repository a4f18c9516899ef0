"""Whether a minute-engine live run keeps its pace while request-engine game-day rooms play (issue 29 item 7): a
real server, one minute-engine bystander run at 16x with a viewer and N request-engine rooms (slow-instance) at the
speed, each started by its facilitator's socket; after ``--settle`` seconds, over ``--window`` seconds: the minutes
the bystander got of those it was owed, each room's minutes and the speed its page says it plays at (``slowed``),
the slowest ``/api/stats`` answer, the bystander's lateness (p99).

    python scripts/room_bystander.py --rooms 0,1,2 --speed 16

Run it with ``PYTHONPATH`` pointing at the checkout to measure (the server is ``python -m oncallsim``).
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

TIMEOUT_S = 120.0  # a loaded machine answers slowly: these bound a request, not the measurement


def point(rooms: int, speed: int, settle: float, window: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        process, base, log = start_server(Path(tmp) / "rooms.sqlite", startup_timeout_s=120)
        ws = base.replace("http", "ws")
        watchers: list[Watcher] = []
        try:
            wait_engines_ready(base)
            run = post_json(base, "/api/runs", {"scenario": "free-play", "seed": 1, "speed": 16, "difficulty": "hard",
                                                "minutes": 10000}, TIMEOUT_S)  # fmt: skip
            bystander = Watcher.of_run(base, run["id"], open_timeout_s=TIMEOUT_S)
            watchers.append(bystander)
            for i in range(rooms):
                spec = {"scenario": "slow-instance", "seed": i, "speed": speed, "engine": "request", "minutes": 1440}
                room = post_json(base, "/api/gameday/rooms", spec, TIMEOUT_S)
                token = room["facilitator_url"].split("#key=")[1]
                join = {"type": "join", "token": token}
                watchers.append(Watcher(f"{ws}/gameday/{room['id']}/ws", base, join, open_timeout_s=TIMEOUT_S))
            for w in watchers:
                w.start()
            time.sleep(settle)
            start = [w.minute for w in watchers]
            ping_max = 0.0
            end = time.monotonic() + window
            while time.monotonic() < end:
                t0 = time.monotonic()
                get_json(base, "/api/stats", TIMEOUT_S)
                ping_max = max(ping_max, time.monotonic() - t0)
                time.sleep(0.25)
            gained = [w.minute - s for w, s in zip(watchers, start, strict=True)]
            stats = get_json(base, f"/api/stats?window_s={window}", TIMEOUT_S)
            return {
                "rooms": rooms,
                "speed": speed,
                "bystander_minutes": gained[0],
                "owed": int(16 * window),
                "bystander_p99_ms": round(stats["lateness_p99_ms"]),
                "stats_ping_max_s": round(ping_max, 2),
                "room_minutes": gained[1:],
                "rooms_playing_at": [w.slowed or speed for w in watchers[1:]],
                "load": round(os.getloadavg()[0], 1),
            }
        finally:
            for w in watchers:
                w.stop.set()
            stop_server(process, log, timeout_s=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rooms", default="0,1,2")
    parser.add_argument("--speed", type=int, default=16)
    parser.add_argument("--settle", type=float, default=10.0)
    parser.add_argument("--window", type=float, default=10.0)
    args = parser.parse_args()
    for rooms in (int(n) for n in args.rooms.split(",")):
        print(json.dumps(point(rooms, args.speed, args.settle, args.window)), flush=True)


if __name__ == "__main__":
    main()

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
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.server import start_server


def post(base: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    req = urllib.request.Request(
        base + path, json.dumps(body).encode(), {"Content-Type": "application/json", "Origin": base}
    )
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read())  # type: ignore[no-any-return]


def get(base: str, path: str) -> Any:
    with urllib.request.urlopen(base + path, timeout=120) as r:
        return json.loads(r.read())


class Watcher(threading.Thread):
    """A socket on a run or a room (a facilitator, who starts it): the last minute and ``slowed`` it was sent."""

    def __init__(self, url: str, origin: str, join: dict[str, Any] | None = None) -> None:
        super().__init__(daemon=True)
        self.url, self.origin, self.join = url, origin, join
        self.minute, self.slowed = -1, None
        self.stop = threading.Event()

    def run(self) -> None:
        from websockets.sync.client import connect

        with connect(self.url, origin=self.origin, max_size=None, open_timeout=120) as ws:  # type: ignore[arg-type]
            if self.join is not None:
                ws.send(json.dumps(self.join))
                ws.recv(timeout=120)  # the snapshot
                ws.send(json.dumps({"type": "resume"}))
            while not self.stop.is_set():
                try:
                    message = json.loads(ws.recv(timeout=0.5))
                except TimeoutError:
                    continue
                except Exception:  # the server stopped at the end of a point
                    return
                state = message if message.get("type") == "state" else message.get("state")
                if state:
                    self.minute = max(self.minute, state["minute"])
                    self.slowed = state.get("slowed")


def point(rooms: int, speed: int, settle: float, window: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        process, base, log = start_server(Path(tmp) / "rooms.sqlite", startup_timeout_s=120)
        ws = base.replace("http", "ws")
        watchers: list[Watcher] = []
        try:
            while not all(e["state"] == "ready" for e in get(base, "/api/engines")):
                time.sleep(0.5)
            run = post(base, "/api/runs", {"scenario": "free-play", "seed": 1, "speed": 16, "difficulty": "hard",
                                           "minutes": 10000})  # fmt: skip
            bystander = Watcher(f"{ws}/api/runs/{run['id']}/ws", base)
            watchers.append(bystander)
            for i in range(rooms):
                room = post(base, "/api/gameday/rooms", {"scenario": "slow-instance", "seed": i, "speed": speed,
                                                         "engine": "request", "minutes": 1440})  # fmt: skip
                token = room["facilitator_url"].split("#key=")[1]
                watchers.append(Watcher(f"{ws}/gameday/{room['id']}/ws", base, {"type": "join", "token": token}))
            for w in watchers:
                w.start()
            time.sleep(settle)
            start = [w.minute for w in watchers]
            ping_max = 0.0
            end = time.monotonic() + window
            while time.monotonic() < end:
                t0 = time.monotonic()
                get(base, "/api/stats")
                ping_max = max(ping_max, time.monotonic() - t0)
                time.sleep(0.25)
            gained = [w.minute - s for w, s in zip(watchers, start, strict=True)]
            stats = get(base, f"/api/stats?window_s={window}")
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
            process.terminate()
            process.wait(timeout=30)
            log.close()


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

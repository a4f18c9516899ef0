"""Against a real server (issue 29 item 7): two request-engine live runs at 16× (slow-instance) have their
minutes computed in worker processes, and a minute-engine bystander keeps its minutes on time while
``/api/stats`` answers at once. Bounded waits for conditions; the bounds are what "on time" means here (the
bystander owed 16 minutes a second gets at least half of them; a ping answers within 2 s)."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.server import start_server

# Wall-clock pacing (a browser at 16×, latency bounds): runs alone, after the parallel part of `make test`.
pytestmark = pytest.mark.serial


def _post(base: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        base + path, json.dumps(body).encode(), {"Content-Type": "application/json", "Origin": base}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())  # type: ignore[no-any-return]


def _get(base: str, path: str, timeout: float) -> Any:
    with urllib.request.urlopen(base + path, timeout=timeout) as response:
        return json.loads(response.read())


class Viewer(threading.Thread):
    """A WebSocket viewer of one run (a run nobody watches does not tick): the last minute it was sent."""

    def __init__(self, base: str, run_id: str) -> None:
        super().__init__(daemon=True)
        self.url = base.replace("http", "ws") + f"/api/runs/{run_id}/ws"
        self.origin = base
        self.minute = -1
        self.slowed: Any = None
        self.stop = threading.Event()

    def run(self) -> None:
        from websockets.exceptions import ConnectionClosed
        from websockets.sync.client import connect

        with connect(self.url, origin=self.origin, max_size=None) as ws:  # type: ignore[arg-type]
            while not self.stop.is_set():
                try:
                    message = json.loads(ws.recv(timeout=0.5))
                except TimeoutError:
                    continue
                except ConnectionClosed:  # the server stopped at the end of the test
                    return
                state = message.get("state") if message.get("type") != "state" else message
                if state:
                    self.minute = max(self.minute, state["minute"])
                    self.slowed = state.get("slowed")


def _until(condition: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_request_engine_runs_never_freeze_a_minute_engine_bystander(tmp_path: Path) -> None:
    process, base, log = start_server(tmp_path / "runs.sqlite", startup_timeout_s=60)
    viewers: list[Viewer] = []
    try:
        # a cold cache compiles the engines first (the preparer); the runs wait for it, so does this test
        _until(lambda: all(e["state"] == "ready" for e in _get(base, "/api/engines", 5)), 900, "engines ready")
        heavy = [
            _post(base, "/api/runs", {"scenario": "slow-instance", "seed": s, "speed": 16, "difficulty": "hard"})
            for s in (1, 2)
        ]
        bystander = _post(
            base, "/api/runs", {"scenario": "free-play", "seed": 3, "speed": 16, "difficulty": "hard", "minutes": 4000}
        )
        viewers = [Viewer(base, run["id"]) for run in (*heavy, bystander)]
        for viewer in viewers:
            viewer.start()
        *request_viewers, watcher = viewers
        # both request-engine runs are playing, in worker processes
        _until(lambda: all(v.minute >= 3 for v in request_viewers), 300, "the request-engine runs play")
        assert _get(base, "/api/stats", 5)["in_workers"] == 2
        # the bystander keeps its minutes while they play: 160 minutes at 16× owed in 10 s; at least 80 come
        start_minute, start = watcher.minute, time.monotonic()
        heavy_start = [v.minute for v in request_viewers]
        pings = []
        while watcher.minute < start_minute + 160:
            assert time.monotonic() - start < 20.0, f"bystander at {watcher.minute - start_minute} of 160 minutes"
            ping = time.monotonic()
            stats = _get(base, "/api/stats", 2.0)  # answers promptly, or this raises
            pings.append(time.monotonic() - ping)
            time.sleep(0.2)
        assert stats["runs_in_memory"] == 3 and max(pings) < 2.0
        # and the request-engine runs went on meanwhile (slower if they must, said in their states)
        assert all(v.minute > m for v, m in zip(request_viewers, heavy_start, strict=True))
    finally:
        for viewer in viewers:
            viewer.stop.set()
        process.terminate()
        process.wait(timeout=20)
        log.close()
    # the server stopped its worker processes with it: nothing of it runs on
    text = (tmp_path / "runs.sqlite.server.log").read_text()
    assert "Traceback" not in text, text[-2000:]

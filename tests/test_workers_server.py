"""Against a real server (issue 29 item 7): two request-engine live runs at 16× (slow-instance) have their
minutes computed in worker processes, and a minute-engine bystander keeps its minutes on time while
``/api/stats`` answers at once. Bounded waits for conditions; the bounds are what "on time" means here (the
bystander owed 16 minutes a second gets at least half of them; a ping answers within 2 s)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.server import Watcher, get_json, post_json, start_server, stop_server, wait_engines_ready

# Wall-clock pacing (a browser at 16×, latency bounds): runs alone, after the parallel part of `make test`.
pytestmark = pytest.mark.serial


def _until(condition: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_request_engine_runs_never_freeze_a_minute_engine_bystander(tmp_path: Path) -> None:
    process, base, log = start_server(tmp_path / "runs.sqlite", startup_timeout_s=60)
    viewers: list[Watcher] = []
    try:
        wait_engines_ready(base)  # a cold cache compiles the engines first; the runs wait for it, so does this test
        heavy = [
            post_json(base, "/api/runs", {"scenario": "slow-instance", "seed": s, "speed": 16, "difficulty": "hard"})
            for s in (1, 2)
        ]
        bystander = post_json(
            base, "/api/runs", {"scenario": "free-play", "seed": 3, "speed": 16, "difficulty": "hard", "minutes": 4000}
        )
        viewers = [Watcher.of_run(base, run["id"]) for run in (*heavy, bystander)]
        for viewer in viewers:
            viewer.start()
        *request_viewers, watcher = viewers
        # both request-engine runs are playing, in worker processes
        _until(lambda: all(v.minute >= 3 for v in request_viewers), 300, "the request-engine runs play")
        assert get_json(base, "/api/stats", 5)["in_workers"] == 2
        # the bystander keeps its minutes while they play: 160 minutes at 16× owed in 10 s; at least 80 come
        start_minute, start = watcher.minute, time.monotonic()
        heavy_start = [v.minute for v in request_viewers]
        pings = []
        while watcher.minute < start_minute + 160:
            assert time.monotonic() - start < 20.0, f"bystander at {watcher.minute - start_minute} of 160 minutes"
            ping = time.monotonic()
            stats = get_json(base, "/api/stats", 2.0)  # answers promptly, or this raises
            pings.append(time.monotonic() - ping)
            time.sleep(0.2)
        assert stats["runs_in_memory"] == 3 and max(pings) < 2.0
        # and the request-engine runs went on meanwhile (slower if they must, said in their states)
        assert all(v.minute > m for v, m in zip(request_viewers, heavy_start, strict=True))
    finally:
        for viewer in viewers:
            viewer.stop.set()
        stopped = stop_server(process, log, timeout_s=20)
    assert stopped, "the server did not stop within 20 s of being asked"
    # the server stopped its worker processes with it: nothing of it runs on
    text = (tmp_path / "runs.sqlite.server.log").read_text()
    assert "Traceback" not in text, text[-2000:]

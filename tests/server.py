"""A real uvicorn server for the browser tests: `oncallsim serve` on a free loopback port, stopped after; and the
loopback client the server tests and the measuring scripts (scripts/room_bystander.py, worker_capacity.py) share:
JSON requests, the wait for the engines, a WebSocket watcher of a run or a room."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(
    db: Path,
    port: int | None = None,
    startup_timeout_s: float = 90.0,
    extra: list[str] | None = None,
    expect_status: int = 200,
) -> tuple[subprocess.Popen[str], str, IO[str]]:
    """Start `oncallsim serve` and wait until it answers (``expect_status``: 401 when it asks for a token);
    returns the process, its base URL and its log file."""
    port = port or free_port()
    base = f"http://127.0.0.1:{port}"
    log_path = db.with_name(db.name + ".server.log")
    log = log_path.open("a")  # a file, not a pipe: a full pipe would stall the server
    process = subprocess.Popen(
        [sys.executable, "-m", "oncallsim", "serve", "--port", str(port), "--db", str(db), *(extra or [])],
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + startup_timeout_s
    while True:  # wait for the condition "the server answers", bounded by a deadline
        if process.poll() is not None:
            log.close()
            raise RuntimeError(f"server exited: {log_path.read_text()}")
        try:
            with urllib.request.urlopen(base + "/api/scenarios", timeout=1) as response:
                if response.status == expect_status:
                    return process, base, log
        except OSError as error:
            if isinstance(error, urllib.error.HTTPError) and error.code == expect_status:
                return process, base, log
            if time.monotonic() > deadline:
                process.kill()
                log.close()
                raise
            time.sleep(0.05)


def stop_server(process: subprocess.Popen[str], log: IO[str], timeout_s: float = 10.0) -> bool:
    """Stop a server `start_server` started and close its log: whether it ended on its own within ``timeout_s``
    of being asked (if not, it is killed)."""
    process.terminate()
    try:
        process.wait(timeout=timeout_s)
        stopped = True
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        stopped = False
    log.close()
    return stopped


@contextmanager
def running_server(db: Path, startup_timeout_s: float = 90.0) -> Iterator[str]:
    process, base, log = start_server(db, startup_timeout_s=startup_timeout_s)
    try:
        yield base
    finally:
        stop_server(process, log)


def post_json(base: str, path: str, body: dict[str, Any], timeout_s: float = 30.0) -> dict[str, Any]:
    """POST ``body`` as JSON from the server's own origin (the server refuses a write from another) and return
    the JSON answer."""
    request = urllib.request.Request(
        base + path, json.dumps(body).encode(), {"Content-Type": "application/json", "Origin": base}
    )
    with urllib.request.urlopen(request, timeout=timeout_s) as response:
        return json.loads(response.read())  # type: ignore[no-any-return]


def get_json(base: str, path: str, timeout_s: float = 30.0) -> Any:
    with urllib.request.urlopen(base + path, timeout=timeout_s) as response:
        return json.loads(response.read())


def wait_engines_ready(base: str, timeout_s: float = 900.0) -> None:
    """Wait until both engines are compiled (a cold cache compiles them first, in the server's preparer; the runs
    wait for it), bounded by ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not all(e["state"] == "ready" for e in get_json(base, "/api/engines", 5.0)):
        if time.monotonic() > deadline:
            raise TimeoutError(f"the engines were not ready after {timeout_s:g} s")
        time.sleep(0.2)


class Watcher(threading.Thread):
    """A WebSocket on a run or a game-day room (a run nobody watches does not tick): the last minute it was sent
    and the speed its states say it plays at (``slowed``, None when not slowed). ``join``: the message a room's
    socket is joined with (its snapshot is read, then the room resumed: a facilitator starting it). It ends when
    ``stop`` is set or the server closes the socket."""

    def __init__(self, url: str, origin: str, join: dict[str, Any] | None = None, open_timeout_s: float = 10.0):
        super().__init__(daemon=True)
        # not ``self.join``: that is Thread.join
        self.url, self.origin, self.join_message, self.open_timeout_s = url, origin, join, open_timeout_s
        self.minute = -1
        self.slowed: Any = None
        self.stop = threading.Event()

    @classmethod
    def of_run(cls, base: str, run_id: str, open_timeout_s: float = 10.0) -> Watcher:
        return cls(base.replace("http", "ws") + f"/api/runs/{run_id}/ws", base, open_timeout_s=open_timeout_s)

    def run(self) -> None:
        from websockets.exceptions import ConnectionClosed
        from websockets.sync.client import connect
        from websockets.typing import Origin

        with connect(self.url, origin=Origin(self.origin), max_size=None, open_timeout=self.open_timeout_s) as ws:
            if self.join_message is not None:
                ws.send(json.dumps(self.join_message))
                ws.recv(timeout=self.open_timeout_s)  # the snapshot
                ws.send(json.dumps({"type": "resume"}))
            while not self.stop.is_set():
                try:
                    message = json.loads(ws.recv(timeout=0.5))
                except TimeoutError:
                    continue
                except ConnectionClosed:  # the server stopped at the end of a test or a point
                    return
                state = message if message.get("type") == "state" else message.get("state")
                if state:
                    self.minute = max(self.minute, state["minute"])
                    self.slowed = state.get("slowed")

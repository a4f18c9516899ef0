"""A real uvicorn server for the browser tests: `oncallsim serve` on a free loopback port, stopped after."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def running_server(db: Path, startup_timeout_s: float = 30.0) -> Iterator[str]:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log_path = db.with_name(db.name + ".server.log")
    log = log_path.open("w")  # a file, not a pipe: a full pipe would stall the server
    process = subprocess.Popen(
        [sys.executable, "-m", "oncallsim", "serve", "--port", str(port), "--db", str(db)],
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + startup_timeout_s
        while True:  # wait for the condition "the server answers", bounded by a deadline
            if process.poll() is not None:
                raise RuntimeError(f"server exited: {log_path.read_text()}")
            try:
                with urllib.request.urlopen(base + "/api/scenarios", timeout=1) as response:
                    if response.status == 200:
                        break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()

"""A real uvicorn server for the browser tests: `oncallsim serve` on a free loopback port, stopped after."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO


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


@contextmanager
def running_server(db: Path, startup_timeout_s: float = 90.0) -> Iterator[str]:
    process, base, log = start_server(db, startup_timeout_s=startup_timeout_s)
    try:
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()

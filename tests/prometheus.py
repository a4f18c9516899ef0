"""A real Prometheus for the tests (Debian's `prometheus` package: the server and promtool; nothing downloaded).

A server runs on 127.0.0.1 on a free port with a temporary storage folder, answers through its HTTP API, and is
stopped after. With ONCALLSIM_REQUIRE_PROMETHEUS=1 (set by .ci/run) a missing Prometheus fails the tests that
need it instead of skipping them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.server import free_port

PROMETHEUS = os.environ.get("ONCALLSIM_PROMETHEUS", "prometheus")
PROMTOOL = os.environ.get("ONCALLSIM_PROMTOOL", "promtool")


def require_prometheus() -> None:
    missing = [tool for tool in (PROMETHEUS, PROMTOOL) if shutil.which(tool) is None]
    if missing:
        message = f"no {' or '.join(missing)} on PATH (apt-get install prometheus)"
        if os.environ.get("ONCALLSIM_REQUIRE_PROMETHEUS") == "1":
            pytest.fail(message)
        pytest.skip(message)


def wait_for(condition: Any, what: str, timeout_s: float = 20.0) -> Any:
    """Poll ``condition`` until it returns something true (its value is returned), bounded by a deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@contextmanager
def prometheus_server(storage: Path, config: str = "global: {}\n", extra: list[str] | None = None) -> Iterator[str]:
    """Prometheus on 127.0.0.1 with ``storage`` as its TSDB and ``config`` as its configuration; yields its base
    URL once it is ready, and stops it."""
    require_prometheus()
    port = free_port()
    config_file = storage.parent / f"prometheus-{port}.yml"
    config_file.write_text(config)
    log_path = storage.parent / f"prometheus-{port}.log"
    base = f"http://127.0.0.1:{port}"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [
                PROMETHEUS,
                f"--config.file={config_file}",
                f"--storage.tsdb.path={storage}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--storage.tsdb.retention.time=100y",  # a backfill's samples are old: keep them
                *(extra or []),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:

            def ready() -> bool:
                if process.poll() is not None:
                    raise AssertionError(f"prometheus exited: {log_path.read_text()[-2000:]}")
                try:
                    with urllib.request.urlopen(base + "/-/ready", timeout=1) as response:
                        return bool(response.status == 200)
                except OSError:
                    return False

            wait_for(ready, "Prometheus to be ready")
            yield base
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def query(base: str, promql: str, at: float) -> list[dict[str, Any]]:
    """An instant query through the HTTP API: the result vector."""
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": promql, "time": f"{at:.3f}"})
    with urllib.request.urlopen(url, timeout=10) as response:
        body = json.load(response)
    assert body["status"] == "success", body
    return list(body["data"]["result"])

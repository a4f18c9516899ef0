"""A real sweep killed with SIGKILL or stopped with SIGTERM keeps every finished chunk, leaves no process
behind, and ``--resume`` ends in exactly the rows of an uninterrupted sweep."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from oncallsim.cli import app

# Wall-clock pacing (a browser at 16×, latency bounds): runs alone, after the parallel part of `make test`.
pytestmark = pytest.mark.serial

runner = CliRunner()
CHUNK = 10
SEEDS = 1500


def args(out: Path, seeds: int = SEEDS, workers: int = 2) -> list[str]:
    return [
        "sweep",
        "bad-deploy",
        "--seeds",
        str(seeds),
        "--policy",
        "textbook",
        "--grid",
        "rollback_minutes=3,5",
        "--workers",
        str(workers),
        "--out",
        str(out),
    ]


def wait_for(condition: object, what: str, timeout_s: float = 60.0) -> None:
    """Poll a condition (never a fixed sleep): fail with ``what`` if it does not hold in time."""
    deadline = time.monotonic() + timeout_s
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def start(out: Path, seeds: int = SEEDS, how: str = "fork") -> tuple[subprocess.Popen[str], list[int]]:
    """A sweep on two worker processes, once it has two chunks on disk; and its children's ids."""
    env = {**os.environ, "ONCALLSIM_ROWS_PER_TASK": str(CHUNK), "ONCALLSIM_SWEEP_START": how}
    command = [sys.executable, "-m", "oncallsim", *args(out, seeds)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    parts = out.with_name(out.name + ".parts")

    def two_parts_and_workers() -> bool:
        assert process.poll() is None, process.communicate()
        return len(list(parts.glob("part-*.parquet"))) >= 2 and len(psutil.Process(process.pid).children()) >= 2

    wait_for(two_parts_and_workers, "two finished chunks and two workers")
    children = [c.pid for c in psutil.Process(process.pid).children(recursive=True)]
    return process, children


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("clean") / "clean.parquet"
    done = runner.invoke(app, args(out, workers=1))
    assert done.exit_code == 0, done.output
    return out


def rows(path: Path) -> list[tuple[object, ...]]:
    table = pq.read_table(path)
    names = sorted(table.column_names)
    return sorted(zip(*(table.column(n).to_pylist() for n in names), strict=True), key=repr)


@pytest.mark.parametrize("how", ["fork", "spawn"])
def test_sigkill_keeps_every_finished_chunk_and_no_worker_outlives_the_sweep(
    tmp_path: Path, clean: Path, how: str
) -> None:
    out = tmp_path / "r.parquet"
    parts = out.with_name(out.name + ".parts")
    process, children = start(out, how=how)
    assert len(children) == 2  # the two workers and nothing else (no resource tracker)
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=60)
    wait_for(lambda: all(gone(pid) for pid in children), "the workers to die with their parent")
    assert not out.exists()
    kept = pq.read_table(parts)  # the parts are a Parquet dataset of closed files, readable as they are
    assert kept.num_rows >= 2 * CHUNK and kept.num_rows % CHUNK == 0
    refused = runner.invoke(app, args(out))
    assert refused.exit_code == 2 and "r.parquet.parts: exists; pass --resume" in refused.stderr
    done = runner.invoke(app, [*args(out), "--resume"], env={"ONCALLSIM_ROWS_PER_TASK": "500"})
    assert done.exit_code == 0, done.output
    assert f"({kept.num_rows} rows kept from before)" in done.stdout
    assert not parts.exists() and rows(out) == rows(clean)


def test_sigterm_stops_like_ctrl_c(tmp_path: Path, clean: Path) -> None:
    out = tmp_path / "r.parquet"
    process, children = start(out)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 128 + signal.SIGTERM, err
    assert "interrupted: the " in err and "--resume continues" in err and "Traceback" not in err
    wait_for(lambda: all(gone(pid) for pid in children), "the workers to end")
    assert out.exists() and not out.with_name(out.name + ".parts").exists()
    kept = pq.read_table(out).num_rows
    assert 2 * CHUNK <= kept < 2 * SEEDS and kept % CHUNK == 0
    done = runner.invoke(app, [*args(out), "--resume"], env={"ONCALLSIM_ROWS_PER_TASK": "500"})
    assert done.exit_code == 0, done.output
    assert rows(out) == rows(clean)


def test_a_sweep_of_every_seed_starts_at_once_in_flat_memory(tmp_path: Path) -> None:
    out = tmp_path / "r.parquet"
    process, children = start(out, seeds=2**32)  # all of 0..2^32-1: chunks are made as they are needed
    rss_mb = psutil.Process(process.pid).memory_info().rss / 2**20
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 128 + signal.SIGTERM, err
    assert rss_mb < 400, f"the parent holds {rss_mb:.0f} MB"
    table = pq.read_table(out)
    assert table.num_rows >= 2 * CHUNK and max(table.column("seed").to_pylist()) < 2**20
    wait_for(lambda: all(gone(pid) for pid in children), "the workers to end")

"""A sweep on a real Dask cluster (a scheduler and two workers on 127.0.0.1) gives the local sweep's rows."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from oncallsim.cli import app
from tests.server import free_port

DASK = str(Path(sys.executable).parent / "dask")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from distributed import Client

    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    workdir = tmp_path_factory.mktemp("dask")
    procs = [
        subprocess.Popen(
            [DASK, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=workdir,
        )
    ]
    try:
        for _ in range(2):
            procs.append(
                subprocess.Popen(
                    [
                        DASK,
                        "worker",
                        address,
                        "--host",
                        "127.0.0.1",
                        "--nworkers",
                        "1",
                        "--nthreads",
                        "1",
                        "--no-dashboard",
                        "--local-directory",
                        str(workdir),
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    cwd=workdir,
                )
            )
        with Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=120)  # the condition, bounded
        yield address
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


@pytest.mark.parametrize(
    ("seeds", "engine_args"), [(24, []), (4, ["--engine", "request", "--minutes", "30"])], ids=["minute", "request"]
)
def test_dask_sweep_equals_the_local_sweep(cluster: str, tmp_path: Path, seeds: int, engine_args: list[str]) -> None:
    runner = CliRunner()
    args = [
        "sweep",
        "cache-flush",
        "--seeds",
        str(seeds),
        "--seed-start",
        "500",
        "--policy",
        "textbook",
        "--grid",
        "ttl_s=60,120",
        *engine_args,
    ]
    env = {"ONCALLSIM_ROWS_PER_TASK": "6"}
    remote, local = tmp_path / "remote.parquet", tmp_path / "local.parquet"
    done = runner.invoke(app, [*args, "--scheduler", cluster, "--out", str(remote)], env=env)
    assert done.exit_code == 0, done.output
    assert "Dask scheduler" in done.stdout and "2 workers" in done.stdout
    done = runner.invoke(app, [*args, "--workers", "1", "--out", str(local)], env=env)
    assert done.exit_code == 0, done.output
    key = ["grid_ttl_s", "seed"]
    a = pq.read_table(remote).to_pandas().sort_values(key).reset_index(drop=True)
    b = pq.read_table(local).to_pandas().sort_values(key).reset_index(drop=True)
    assert len(a) == 2 * seeds and a.equals(b)


def test_a_dask_sweep_resumes_per_seed(cluster: str, tmp_path: Path) -> None:
    runner = CliRunner()
    out, local = tmp_path / "remote.parquet", tmp_path / "local.parquet"
    args = ["sweep", "bad-deploy", "--policy", "textbook", "--grid", "rollback_minutes=3,5"]
    env = {"ONCALLSIM_ROWS_PER_TASK": "5"}
    done = runner.invoke(app, [*args, "--seeds", "12", "--scheduler", cluster, "--out", str(out)], env=env)
    assert done.exit_code == 0, done.output
    done = runner.invoke(app, [*args, "--seeds", "20", "--scheduler", cluster, "--out", str(out), "--resume"], env=env)
    assert done.exit_code == 0, done.output
    assert "(24 rows kept from before)" in done.stdout
    assert runner.invoke(app, [*args, "--seeds", "20", "--workers", "1", "--out", str(local)]).exit_code == 0
    key = ["grid_rollback_minutes", "seed"]
    a = pq.read_table(out).to_pandas().sort_values(key).reset_index(drop=True)
    b = pq.read_table(local).to_pandas().sort_values(key).reset_index(drop=True)
    assert len(a) == 40 and a.equals(b)


def test_a_cliff_map_on_dask_gives_the_local_runs(cluster: str, tmp_path: Path) -> None:
    """The same coarse map of retry-storm on the cluster and on one local process: the same rows, the same classes."""
    runner = CliRunner()
    args = ["cliff", "retry-storm", "--vary", "load=0.4,1", "--vary", "retries=0,3", "--seeds", "2"]
    args += ["--trigger", "brownout:minutes=3,slowdown=6.5", "--warmup", "2", "--horizon", "5"]
    remote, local = tmp_path / "remote.parquet", tmp_path / "local.parquet"
    done = runner.invoke(app, [*args, "--scheduler", cluster, "--out", str(remote)])
    assert done.exit_code == 0, done.output
    assert "Dask scheduler" in done.stdout and "2 workers" in done.stdout
    done = runner.invoke(app, [*args, "--workers", "1", "--out", str(local)])
    assert done.exit_code == 0, done.output
    key = ["point", "seed"]
    a = pq.read_table(remote).to_pandas().sort_values(key).reset_index(drop=True)
    b = pq.read_table(local).to_pandas().sort_values(key).reset_index(drop=True)
    assert len(a) == 8 and a.equals(b)
    classes = [
        pq.read_table(p.with_name(f"{p.stem}-points.parquet")).column("class").to_pylist() for p in (remote, local)
    ]
    assert classes[0] == classes[1] and "metastable" in classes[0] and "stable" in classes[0]

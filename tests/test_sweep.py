"""Sweeps from the command line: Parquet rows, the summary, resume after Ctrl-C, bad input, the HTML plot."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from oncallsim.batch.sweep import LocalExecutor, SweepSpec, parse_grid, sweep
from oncallsim.cli import app

runner = CliRunner()


def test_sweep_writes_one_row_per_run_and_a_summary(tmp_path: Path) -> None:
    out, html = tmp_path / "r.parquet", tmp_path / "r.html"
    done = runner.invoke(
        app,
        [
            "sweep",
            "bad-deploy",
            "--seeds",
            "40",
            "--policy",
            "textbook",
            "--grid",
            "rollback_minutes=3,5",
            "--workers",
            "1",
            "--out",
            str(out),
            "--html",
            str(html),
        ],
    )
    assert done.exit_code == 0, done.output
    table = pq.read_table(out).to_pandas()
    assert len(table) == 80 and set(table["grid_rollback_minutes"]) == {3, 5}
    assert sorted(table[table["grid_rollback_minutes"] == 3]["seed"]) == list(range(40))
    for column in (
        "budget_spent",
        "cost",
        "worst_p99_ms",
        "passed",
        "objectives_passed",
        "objective_1_passed",
        "budget_spent_bad_build",
        "time_to_recovery_min",
    ):
        assert column in table.columns
    faster = table[table["grid_rollback_minutes"] == 3]["budget_spent"].median()
    slower = table[table["grid_rollback_minutes"] == 5]["budget_spent"].median()
    assert faster < slower  # a faster rollback burns less
    assert "Summary per grid point" in done.stdout and "rollback_minutes" in done.stdout
    page = html.read_text()
    assert "Plotly.newPlot" in page and '<script src="http' not in page  # plotly.js inlined: works offline


def test_local_processes_give_the_same_rows_as_one_process(tmp_path: Path) -> None:
    spec = SweepSpec(
        "surge", seeds=30, policy="textbook", grid=parse_grid(["target_utilization=0.5,0.7"]), rows_per_task=8
    )
    one, two = tmp_path / "one.parquet", tmp_path / "two.parquet"
    sweep(spec, LocalExecutor(1), one)
    sweep(spec, LocalExecutor(2), two)
    key = ["grid_target_utilization", "seed"]
    a = pq.read_table(one).to_pandas().sort_values(key).reset_index(drop=True)
    b = pq.read_table(two).to_pandas().sort_values(key).reset_index(drop=True)
    assert a.equals(b)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--grid", "nope=1,2"], "nope: unknown parameter or control"),
        (["--grid", "floor="], "has an empty value"),
        (["--grid", "floor=3,,4"], "has an empty value"),
        (["--grid", "floor=0,4"], "floor: 0 is out of range"),
        (["--policy", "no_such_module_xyz:P"], "policy: cannot import"),
        (["--seeds", "0"], "--seeds: must be at least 1"),
        (["--scheduler", "tcp://127.0.0.1:9"], "--scheduler: cannot reach"),
    ],
)
def test_bad_input_is_one_line_and_leaves_no_file(tmp_path: Path, args: list[str], needle: str) -> None:
    out = tmp_path / "r.parquet"
    done = runner.invoke(app, ["sweep", "surge", "--seeds", "5", "--out", str(out), *args])
    assert done.exit_code == 2, done.output
    assert needle in done.stderr.replace("\n", "") and "Traceback" not in done.output
    assert list(tmp_path.iterdir()) == []


def test_existing_output_needs_resume(tmp_path: Path) -> None:
    out = tmp_path / "r.parquet"
    out.write_bytes(b"")
    done = runner.invoke(app, ["sweep", "surge", "--seeds", "5", "--out", str(out)])
    assert done.exit_code == 2 and "--resume" in done.stderr


def test_ctrl_c_keeps_the_rows_and_resume_finishes(tmp_path: Path) -> None:
    out = tmp_path / "r.parquet"
    part = out.with_name(out.name + ".part")
    command = [
        sys.executable,
        "-m",
        "oncallsim",
        "sweep",
        "free-play",
        "--seeds",
        "400",
        "--workers",
        "1",
        "--out",
        str(out),
    ]
    env = {**os.environ, "ONCALLSIM_ROWS_PER_TASK": "20"}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 120
    while not part.exists():  # the condition: the first chunk is on disk
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.02)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert "interrupted" in err and out.exists() and not part.exists()
    kept = pq.read_table(out).num_rows
    assert 0 < kept < 400 and kept % 20 == 0
    done = runner.invoke(
        app,
        ["sweep", "free-play", "--seeds", "400", "--workers", "1", "--out", str(out), "--resume"],
        env={"ONCALLSIM_ROWS_PER_TASK": "20"},
    )
    assert done.exit_code == 0, done.output
    table = pq.read_table(out).to_pandas()
    assert sorted(table["seed"]) == list(range(400))

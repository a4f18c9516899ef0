"""Sweeps from the command line: Parquet rows, the summary, resume after Ctrl-C, bad input, the HTML plot."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from oncallsim.batch.sweep import LocalExecutor, SweepSpec, parse_grid, plan_sweep, sweep
from oncallsim.cli import app
from oncallsim.model import MODEL_VERSION, InvalidInput

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


@pytest.mark.parametrize(
    ("start", "engine", "seeds", "minutes"),
    [("fork", "minute", 30, None), ("spawn", "minute", 30, None), ("fork", "request", 6, 40)],
)
def test_local_processes_give_the_same_rows_as_one_process(
    tmp_path: Path, start: str, engine: str, seeds: int, minutes: int | None
) -> None:
    spec = SweepSpec(
        "surge",
        seeds=seeds,
        policy="textbook",
        grid=parse_grid(["target_utilization=0.5,0.7"]),
        rows_per_task=max(1, seeds // 4),
        minutes=minutes,
        engine=engine,
    )
    one, two = tmp_path / "one.parquet", tmp_path / "two.parquet"
    sweep(spec, LocalExecutor(1), one)
    sweep(spec, LocalExecutor(2, start=start), two)
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
        (["--policy", "os:system"], "policy: os:system is not a policy"),  # never called (it was: a TypeError)
        (["--policy", "json:loads"], "policy: json:loads is not a policy"),
        (["--seeds", "0"], "--seeds: must be from 1 to 4294967296"),
        (["--seeds", "4294967297"], "--seeds: must be from 1 to 4294967296"),
        (["--seed-start", "4294967295", "--seeds", "2"], "--seeds: must be from 1 to 1 "),
        (["--seed-start", "4294967296"], "--seed-start: must be from 0 to 4294967295"),
        (["--seed-start", "-1"], "--seed-start: must be from 0 to 4294967295"),
        (["--workers", "0"], "--workers: must be from 1 to 256"),
        (["--workers", "-2"], "--workers: must be from 1 to 256"),
        (["--workers", "257"], "--workers: must be from 1 to 256"),
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
    parts = out.with_name(out.name + ".parts")
    command = [sys.executable, "-m", "oncallsim", *sweep_args(out, 3000)]
    env = {**os.environ, "ONCALLSIM_ROWS_PER_TASK": "20"}
    # the child answers Ctrl-C even when this test runs where SIGINT is ignored (a background job, some CI)
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 120
    while not list(parts.glob("part-*.parquet")):  # the condition: the first chunk is on disk
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.02)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert "interrupted" in err and out.exists() and not parts.exists()
    kept = pq.read_table(out).num_rows
    assert 0 < kept < 6000 and kept % 20 == 0
    assert f"the {kept} rows already written are in" in err
    done = runner.invoke(app, [*sweep_args(out, 3000), "--resume"])
    assert done.exit_code == 0, done.output
    table = pq.read_table(out).to_pandas()
    for minutes in (3, 5):
        assert sorted(table[table["grid_rollback_minutes"] == minutes]["seed"]) == list(range(3000))


def test_the_last_seeds_of_the_range_run(tmp_path: Path) -> None:
    out = tmp_path / "r.parquet"
    args = ["sweep", "bad-deploy", "--seed-start", "4294967294", "--seeds", "2", "--workers", "1", "--out", str(out)]
    done = runner.invoke(app, args)
    assert done.exit_code == 0, done.output
    assert sorted(pq.read_table(out).column("seed").to_pylist()) == [4294967294, 4294967295]


def test_chunks_are_made_lazily_whatever_the_seed_count() -> None:
    plan = plan_sweep(SweepSpec("bad-deploy", seeds=2**32, policy="textbook", grid=parse_grid(["floor=2,3"])))
    assert plan.remaining({}) == 2 * 2**32
    size = plan.chunk_size(plan.remaining({}), workers=2)
    tasks = plan.tasks({}, size)
    first, second = next(tasks), next(tasks)
    assert isinstance(first.seeds, range) and first.seeds == range(0, size) and second.seeds[0] == size
    assert 500 <= size <= 5000 and first.point == {"floor": 2}


def test_chunks_skip_the_seeds_already_done() -> None:
    plan = plan_sweep(SweepSpec("bad-deploy", seeds=20, seed_start=10, grid=parse_grid(["floor=2,3"])))
    done = {0: np.array([10, 11, 15, 16, 17, 29], dtype=np.int64), 1: np.arange(10, 30, dtype=np.int64)}
    assert plan.remaining(done) == 14
    tasks = list(plan.tasks(done, 5))
    assert [list(t.seeds) for t in tasks] == [[12, 13, 14, 18, 19], [20, 21, 22, 23, 24], [25, 26, 27, 28]]
    assert {t.point_index for t in tasks} == {0}


def test_chunk_sizes_keep_both_workers_busy_with_big_batches() -> None:
    plan = plan_sweep(SweepSpec("surge", seeds=20000, policy="textbook"))
    size = plan.chunk_size(20000, workers=2)
    assert size == 5000 and len(list(plan.tasks({}, size))) == 4  # two equal chunks per worker
    assert plan_sweep(SweepSpec("surge", seeds=20000, policy="textbook", rows_per_task=7)).chunk_size(20000, 2) == 7


def sweep_args(out: Path, seeds: int, *extra: str) -> list[str]:
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
        "1",
        "--out",
        str(out),
        *extra,
    ]


def test_resume_adds_only_the_missing_seeds(tmp_path: Path) -> None:
    out, clean = tmp_path / "r.parquet", tmp_path / "clean.parquet"
    env = {"ONCALLSIM_ROWS_PER_TASK": "64"}
    assert runner.invoke(app, sweep_args(out, 150), env=env).exit_code == 0
    done = runner.invoke(app, [*sweep_args(out, 200), "--resume"], env=env)
    assert done.exit_code == 0, done.output
    assert "300 rows kept from before" in done.stdout and "400 rows in" in done.stdout
    table = pq.read_table(out).to_pandas()
    assert len(table) == 400 and not table.duplicated(["grid_rollback_minutes", "seed"]).any()
    for minutes in (3, 5):
        assert sorted(table[table["grid_rollback_minutes"] == minutes]["seed"]) == list(range(200))
    assert runner.invoke(app, sweep_args(clean, 200)).exit_code == 0
    assert same_rows(out, clean)
    again = runner.invoke(app, [*sweep_args(out, 200), "--resume"], env=env)  # nothing left to do
    assert again.exit_code == 0 and pq.read_table(out).num_rows == 400


def same_rows(a: Path, b: Path) -> bool:
    key = [c for c in pq.read_schema(a).names if c.startswith("grid_")] + ["seed"]
    x = pq.read_table(a).to_pandas().sort_values(key).reset_index(drop=True)
    y = pq.read_table(b).to_pandas().sort_values(key).reset_index(drop=True)
    return bool(x.equals(y))


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        (["--policy", "hands-off"], '--policy (file: "textbook", now: "hands-off")'),
        (["--set", "floor=4"], '--set (file: {}, now: {"floor": 4})'),
        (["--minutes", "60"], "--minutes (file: null, now: 60)"),
        (["--no-noise"], "noise (--no-noise) (file: true, now: false)"),
        (["--seed-start", "7"], "--seed-start (file: 0, now: 7)"),
        (["--grid", "floor=2,3"], "--grid (file:"),
        (["--scenario"], "scenario (file: bad-deploy, now: cache-flush)"),
    ],
)
def test_resume_refuses_another_configuration(tmp_path: Path, change: list[str], needle: str) -> None:
    out = tmp_path / "r.parquet"
    assert runner.invoke(app, sweep_args(out, 20)).exit_code == 0
    before = out.read_bytes()
    args = [*sweep_args(out, 30, "--resume")]
    if change == ["--scenario"]:
        args[1] = "cache-flush"
    else:
        args += change
    done = runner.invoke(app, args)
    assert done.exit_code == 2, done.output
    message = done.stderr.strip()
    assert "\n" not in message and "was made by a different sweep" in message and needle in message, message
    assert out.read_bytes() == before and not out.with_name(out.name + ".parts").exists()


def test_resume_refuses_another_model_version_and_files_without_a_configuration(tmp_path: Path) -> None:
    out = tmp_path / "r.parquet"
    assert runner.invoke(app, sweep_args(out, 10)).exit_code == 0
    table = pq.read_table(out)
    config = json.loads(table.schema.metadata[b"oncallsim.sweep"])
    config["model_version"] = "0"
    pq.write_table(table.replace_schema_metadata({b"oncallsim.sweep": json.dumps(config).encode()}), out)
    done = runner.invoke(app, sweep_args(out, 10, "--resume"))
    assert done.exit_code == 2 and f'model version (file: "0", now: "{MODEL_VERSION}")' in done.stderr
    pq.write_table(table.replace_schema_metadata({}), out)
    done = runner.invoke(app, sweep_args(out, 10, "--resume"))
    assert done.exit_code == 2 and "has no sweep configuration in its metadata" in done.stderr
    assert pq.read_table(out).num_rows == 20


def test_the_file_records_the_whole_configuration(tmp_path: Path) -> None:
    out = tmp_path / "r.parquet"
    args = [*sweep_args(out, 5), "--set", "floor=3", "--minutes", "90", "--no-noise"]
    assert runner.invoke(app, args).exit_code == 0
    config = json.loads(pq.read_schema(out).metadata[b"oncallsim.sweep"])
    assert config["scenario"]["id"] == "bad-deploy" and config["policy"] == "textbook"
    assert config["overrides"] == {"floor": 3} and config["minutes"] == 90 and config["noise"] is False
    assert config["grid"] == {"rollback_minutes": [3, 5]} and config["model_version"] == MODEL_VERSION
    assert config["engine"] == "minute" and config["clock"] is None and config["seed_start"] == 0


class Explodes:
    """A policy whose every decision is refused: the error must reach the user from inside a worker."""

    name = "explodes"

    def reset(self, seed: int) -> None:
        pass

    def decide(self, observation: object) -> list[object]:
        raise InvalidInput("policy", "explodes on purpose")


def test_an_error_in_a_worker_reaches_the_user_as_one_line(tmp_path: Path) -> None:
    out = tmp_path / "r.parquet"
    args = ["sweep", "bad-deploy", "--seeds", "8", "--policy", "tests.test_sweep:Explodes", "--workers", "2"]
    done = runner.invoke(app, [*args, "--out", str(out)], env={"ONCALLSIM_ROWS_PER_TASK": "2"})
    assert done.exit_code == 2, done.output
    assert "policy: explodes on purpose" in done.stderr and "Traceback" not in done.output
    assert list(tmp_path.iterdir()) == []


def test_resume_of_a_file_that_is_not_a_sweep_is_one_line(tmp_path: Path) -> None:
    out = tmp_path / "r.parquet"
    out.write_bytes(b"not parquet")
    done = runner.invoke(app, [*sweep_args(out, 5), "--resume"])
    assert done.exit_code == 2 and "is not a readable Parquet file" in done.stderr, done.output
    assert "\n" not in done.stderr.strip() and out.read_bytes() == b"not parquet"

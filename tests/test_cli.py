"""The command line, in process (typer's runner) and once as the installed console script."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oncallsim.cli import app
from oncallsim.model import CSV_FIELDS, RECORD_FIELDS

runner = CliRunner()


def invoke(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_scenarios_table_lists_ids_titles_clocks_lengths() -> None:
    code, out, _ = invoke("scenarios")
    assert code == 0
    for needle in ("free-play", "bad-deploy", "surge", "cache-flush", "09:00", "11:30", "24 h 00 min", "5 h 00 min"):
        assert needle in out


def test_scenarios_show_prints_the_briefing() -> None:
    code, out, _ = invoke("scenarios", "--show", "surge")
    assert code == 0 and "8 minutes to boot" in out and "boot_delay_min = 8" in out
    assert "Objectives" in out and "cost ≤ $45.00" in out


def test_params_lists_every_parameter() -> None:
    code, out, _ = invoke("params")
    assert code == 0 and "workers_per_instance" in out and "assumption" in out and "shed_share" in out


def test_jsonl_has_every_contract_field() -> None:
    code, out, _ = invoke("run", "bad-deploy", "--minutes", "3", "--format", "jsonl")
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) == 3 and list(rows[0]) == list(RECORD_FIELDS)
    assert set(rows[0]["errors_by_cause"]) == {"overload", "timeout", "bad_build"}


def test_csv_has_the_scalar_fields(tmp_path: Path) -> None:
    out_file = tmp_path / "run.csv"
    code, out, _ = invoke("run", "surge", "--minutes", "5", "--format", "csv", "--out", str(out_file))
    assert code == 0 and out == ""
    rows = list(csv.DictReader(io.StringIO(out_file.read_text())))
    assert len(rows) == 5 and list(rows[0]) == list(CSV_FIELDS)


def test_table_output_marks_the_page() -> None:
    code, out, _ = invoke("run", "bad-deploy", "--seed", "1")
    assert code == 0 and "page fired" in out and "deploy started" in out


def test_set_actions_and_save_run(tmp_path: Path) -> None:
    actions = tmp_path / "actions.json"
    actions.write_text(
        json.dumps([{"minute": 31, "control": "recommendations", "value": False}, {"minute": 40, "control": "warmup"}])
    )
    run_file = tmp_path / "run.json"
    code, out, _ = invoke(
        "run",
        "cache-flush",
        "--seed",
        "9",
        "--set",
        "ttl_s=120",
        "--set",
        "boot_delay_min=5",
        "--actions",
        str(actions),
        "--format",
        "jsonl",
        "--save-run",
        str(run_file),
    )
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert rows[0]["ttl_s"] == 120.0 and rows[31]["recommendations"] is False and rows[40]["warmup_active"]
    saved = json.loads(run_file.read_text())
    assert saved["overrides"] == {"ttl_s": "120", "boot_delay_min": "5"} and len(saved["actions"]) == 2


def test_clock_and_no_noise() -> None:
    code, out, _ = invoke("run", "free-play", "--clock", "12:00", "--minutes", "1", "--no-noise", "--format", "jsonl")
    assert code == 0 and json.loads(out)["requests_per_s"] == 1250.0


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("run", "nope"), "unknown scenario 'nope'; known: free-play"),
        (("run", "free-play", "--set", "flor=3"), "flor: unknown parameter or control"),
        (("run", "free-play", "--set", "floor=0"), "floor: 0 is out of range; allowed a whole number from 1 to 40"),
        (("run", "free-play", "--set", "ttl_s=abc"), "ttl_s: must be a number from 0 to 600"),
        (("run", "free-play", "--set", "floor"), "--set: expects NAME=VALUE"),
        (("run", "free-play", "--clock", "7:5"), "clock: must be a time of day HH:MM"),
        (("run", "free-play", "--seed", "-4"), "seed: must be a whole number from 0 to 4294967295"),
        (("run", "free-play", "--actions", "/nonexistent/a.json"), "cannot read the actions file"),
        (("scenarios", "--show", "x"), "unknown scenario 'x'"),
    ],
)
def test_bad_input_is_one_line_and_nonzero(args: tuple[str, ...], needle: str) -> None:
    code, out, err = invoke(*args)
    assert code == 2
    assert needle in err.replace("\n", "")
    assert "Traceback" not in err + out


def test_malformed_actions_file(tmp_path: Path) -> None:
    bad = tmp_path / "a.json"
    bad.write_text('[{"minute": 3, "control": "shed_share", "value": 1.5}]')
    code, _, err = invoke("run", "free-play", "--actions", str(bad))
    assert code == 2 and "shed_share: 1.5 is out of range; allowed a number from 0 to 1" in err.replace("\n", "")


def test_failed_run_leaves_no_output_file(tmp_path: Path) -> None:
    out_file = tmp_path / "out.jsonl"
    bad = tmp_path / "a.json"
    bad.write_text('[{"minute": 3000, "control": "warmup"}]')
    code, _, err = invoke("run", "free-play", "--actions", str(bad), "--out", str(out_file))
    assert code == 2 and "past the run's end" in err
    assert not out_file.exists() and not list(tmp_path.glob("*.part"))


def test_console_script_is_installed() -> None:
    exe = Path(sys.executable).parent / "oncallsim"
    assert exe.exists(), "pip install -e . must install the oncallsim command"
    done = subprocess.run([str(exe), "run", "free-play", "--set", "floor=99"], capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "floor: 99 is out of range" in done.stderr


def test_a_reader_that_stops_early_ends_the_run_quietly() -> None:
    # `oncallsim run … | head -2`: no "Broken pipe" error, no traceback, a zero exit
    proc = subprocess.Popen(
        [sys.executable, "-m", "oncallsim", "run", "free-play", "--format", "csv"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith(b"minute,clock")
    proc.stdout.close()  # the reader goes away with 1,439 minutes still to write
    assert proc.wait(timeout=120) == 0
    assert proc.stderr.read() == b""


def test_serve_on_a_busy_port_is_one_line_naming_port() -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "oncallsim", "serve", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"error: --port: 127.0.0.1:{port} is already in use; choose another with --port N (make run PORT=N)"
    ]
    assert "console on" not in done.stderr

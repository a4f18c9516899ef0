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
    assert set(rows[0]["errors_by_cause"]) >= {"overload", "timeout", "bad_build"}


def test_csv_has_the_scalar_fields(tmp_path: Path) -> None:
    out_file = tmp_path / "run.csv"
    code, out, _ = invoke("run", "surge", "--minutes", "5", "--format", "csv", "--out", str(out_file))
    assert code == 0 and out.startswith("surge, seed 0, 5 min: budget spent ") and out.count("\n") == 1
    rows = list(csv.DictReader(io.StringIO(out_file.read_text())))
    assert len(rows) == 5 and list(rows[0]) == list(CSV_FIELDS)


def test_table_output_marks_the_page() -> None:
    code, out, _ = invoke("run", "bad-deploy", "--seed", "1")
    assert code == 0 and "page fired" in out and "deploy started" in out
    header = out.splitlines()[0].split()
    assert "hit" in header and "DB" in header
    # a chain's table leaves out the one service's cache and database, whose columns would read 0 %
    code, out, _ = invoke("run", "cascade", "--seed", "1", "--minutes", "2")
    header = out.splitlines()[0].split()
    assert code == 0 and "hit" not in header and "DB" not in header and "p99" in header


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
        (("run", "nope"), "unknown scenario 'nope'; known: "),
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
    # nothing on stderr but, on a machine that compiles the engine afresh, the notice that it does
    assert all(line.startswith(b"preparing the ") for line in proc.stderr.read().splitlines())


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


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("run", "free-play", "--set", "tll_s=3"), "tll_s: unknown parameter or control (did you mean ttl_s?)"),
        (("run", "surg"), "unknown scenario 'surg' (did you mean surge?); known: "),
        (("scenarios", "--show", "baddeploy"), "(did you mean bad-deploy?)"),
        (("sweep", "surge", "--grid", "flor=1,2"), "flor: unknown parameter or control (did you mean floor?)"),
        (("sweep", "srge"), "(did you mean surge?)"),
        (("run", "surge", "--policy", "textbok"), "--policy: unknown policy 'textbok' (did you mean textbook?)"),
        (("run", "surge", "--engine", "requests"), "--engine: unknown engine 'requests' (did you mean request?)"),
    ],
)
def test_unknown_names_get_the_nearest_known_one(args: tuple[str, ...], needle: str) -> None:
    code, out, err = invoke(*args)
    assert code == 2 and needle in err.replace("\n", "") and out == ""


@pytest.mark.parametrize(
    ("item", "needle"),
    [
        ({"minute": 3, "control": "rolback"}, "[0].control: unknown control 'rolback' (did you mean rollback?)"),
        ({"minuet": 3, "control": "rollback"}, "[0].minuet: unknown field (did you mean minute?)"),
        ({"minute": "08:30", "control": "rollback"}, "[0].minute: 08:30 is not within this run: a minute counted "),
        ({"minute": "soon", "control": "rollback"}, "or a time of day HH:MM from 09:00 to 10:59; got 'soon'"),
    ],
)
def test_actions_file_names_the_item_and_suggests(tmp_path: Path, item: dict[str, object], needle: str) -> None:
    bad = tmp_path / "a.json"
    bad.write_text(json.dumps([item]))
    code, _, err = invoke("run", "bad-deploy", "--actions", str(bad))
    assert code == 2 and needle in err.replace("\n", "")


def test_an_action_at_a_clock_time_is_that_minute_of_the_run(tmp_path: Path) -> None:
    """Minutes count from the start; "09:30" in an actions file means 09:30 of this run (minute 30 of bad-deploy,
    minute 10 with --clock 09:20)."""
    by_clock, by_minute = tmp_path / "clock.json", tmp_path / "minute.json"
    by_clock.write_text(json.dumps([{"minute": "09:30", "control": "rollback"}]))
    by_minute.write_text(json.dumps([{"minute": 30, "control": "rollback"}]))
    runs = [
        invoke("run", "bad-deploy", "--seed", "3", "--format", "jsonl", "--actions", str(p))
        for p in (by_clock, by_minute)
    ]
    assert runs[0][0] == 0 and runs[0][1] == runs[1][1]
    rows = [json.loads(line) for line in runs[0][1].splitlines()]
    assert rows[30]["rollback_active"] and not rows[29]["rollback_active"]
    code, out, _ = invoke("run", "bad-deploy", "--clock", "09:20", "--format", "jsonl", "--actions", str(by_clock))
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and rows[10]["rollback_active"] and not rows[9]["rollback_active"]


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (("run", "free-play", "--format", "xml"), "error: --format: must be one of table, csv, jsonl; got 'xml'"),
        (("run", "free-play", "--seed", "abc"), "error: --seed: must be a whole number"),
        (("run",), "error: scenario: missing"),
        (("run", "free-play", "--sed", "1"), "error: --sed: no such option (did you mean --seed?)"),
        (("rn",), "error: no such command 'rn' (did you mean 'run'?)"),
    ],
)
def test_usage_errors_are_one_line_like_the_others(args: tuple[str, ...], line: str) -> None:
    code, out, err = invoke(*args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(line) and "shows the usage" in err
    assert "╭" not in err and "Usage:" not in err


def test_run_ends_with_a_one_line_summary_beside_the_records() -> None:
    code, out, err = invoke("run", "bad-deploy", "--seed", "1")
    last = out.rstrip("\n").splitlines()[-1]
    assert code == 0 and last.startswith("bad-deploy, seed 1, 120 min: budget spent 12.6%, cost $")
    assert last.endswith(", paged at 09:28, objectives met 1/3, score 24/100")
    # machine-readable records keep stdout to themselves: the summary goes to stderr
    code, out, err = invoke("run", "bad-deploy", "--seed", "1", "--format", "jsonl", "--minutes", "5")
    assert code == 0 and all(json.loads(line) for line in out.splitlines())
    assert err.strip().endswith("no page, objectives met 2/3, score 100/100")


@pytest.mark.parametrize(
    "args",
    [
        ("--help",),
        *(
            (c, "--help")
            for c in ("scenarios", "params", "run", "debrief", "serve", "sweep", "validate", "zoom", "arena")
        ),
        ("scenarios",),
        ("params",),
        ("run", "bad-deploy", "--minutes", "40"),
        ("run", "bad-deploy", "--minutes", "40", "--debrief"),
    ],
)
def test_help_and_tables_have_no_trailing_padding_nor_bool_flags(args: tuple[str, ...]) -> None:
    code, out, _ = invoke(*args)
    assert code == 0 and out.strip()
    assert [line for line in out.splitlines() if line != line.rstrip()] == []
    assert "<bool>" not in out


def test_no_command_shows_the_help() -> None:
    code, _, err = invoke()
    assert code == 2 and err.startswith("Usage: ") and "Commands:" in err and "error:" not in err

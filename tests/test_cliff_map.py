"""The cliff map (oncallsim cliff): its axes and trigger checked at the edge, a run's outcome after the trigger, a
point's class at 95 % of its seeds, and a coarse map of retry-storm end to end — the runs' classes, the chain's
beside them, the Parquet files, the offline HTML and the PNG. (A full map is a script's work: docs/cliff.md.)"""

from __future__ import annotations

import math
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from oncallsim.batch.cliff_map import CONFIG_KEY, classify, observe_run, parse_vary
from oncallsim.cli import app
from oncallsim.cliff.trigger import parse_trigger, scenario_trigger, with_trigger
from oncallsim.model import InvalidInput
from oncallsim.scenarios import load_scenario


def test_axes_take_ranges_and_lists_checked_by_the_model() -> None:
    axes = parse_vary(["load=0.4:1.2:5", "retries=0:3:4", "retry_backoff=none,full-jitter"])
    assert axes == {
        "load": [0.4, 0.6, 0.8, 1.0, 1.2],
        "retries": [0, 1, 2, 3],
        "retry_backoff": ["none", "full-jitter"],
    }
    assert parse_vary(["timeout_s=1:4:4"])["timeout_s"] == [1.0, 2.0, 3.0, 4.0]
    refusals = {
        "retries=0:3:3": "retries",  # 1.5 retries
        "retries=0:9:4": "retries",  # past 5
        "load=0:2:3": "--vary load",
        "bogus=1,2": "bogus",
        "load=1:2:0": "--vary load",
        "load=1:2": "--vary load",
        "retry_backoff=none,sideways": "retry_backoff",
        "load=1,1": "--vary load",
    }
    for item, field in refusals.items():
        with pytest.raises(InvalidInput) as caught:
            parse_vary([item])
        assert caught.value.field.startswith(field), (item, str(caught.value))
    with pytest.raises(InvalidInput, match="load scales base_requests_per_s"):
        parse_vary(["load=1,2", "base_requests_per_s=100,200"])
    with pytest.raises(InvalidInput, match="given twice"):
        parse_vary(["load=1,2", "load=3,4"])


def test_the_trigger_is_a_brownout_checked_as_a_scenario_file_checks_it() -> None:
    assert parse_trigger("brownout:minutes=5,slowdown=3").text() == "brownout:minutes=5,slowdown=3"
    for text, field in (
        ("brownout:minutes=0,slowdown=3", "--trigger minutes"),
        ("brownout:minutes=5,slowdown=1", "--trigger slowdown"),
        ("brownout:minutes=5,slowdown=21", "--trigger slowdown"),
        ("brownout:minutes=5", "--trigger"),
        ("brownout:minutes=5,slowdown=3,depth=2", "--trigger"),
        ("surge:peak=2", "--trigger"),
    ):
        with pytest.raises(InvalidInput) as caught:
            parse_trigger(text)
        assert caught.value.field == field, text
    storm = load_scenario("retry-storm")
    own = scenario_trigger(storm)  # 3–6 minutes, 5–8 times slower: the midpoints
    assert own is not None and (own.minutes, own.slowdown) == (5, 6.5)
    placed = with_trigger(storm, own, 5)
    assert [e.model_dump(mode="json") for e in placed.events] == [
        {"kind": "brownout", "at": "10:05", "at_between": None, "minutes": 5, "slowdown": 6.5}
    ]
    assert placed.id == "retry-storm-cliff" and scenario_trigger(load_scenario("free-play")) is None


def test_a_point_is_classed_at_95_percent_of_its_seeds() -> None:
    assert classify(["stable"] * 19 + ["slow"]) == "stable"
    assert classify(["stable"] * 18 + ["metastable"] * 2) == "mixed"
    assert classify(["metastable"] * 20) == "metastable"
    assert classify(["unstable"] * 19 + ["metastable"]) == "unstable"
    assert classify(["slow"] * 20) == "mixed"  # recovered, but not within the few minutes


@pytest.fixture(scope="module")
def storm() -> object:
    return with_trigger(load_scenario("retry-storm"), parse_trigger("brownout:minutes=4,slowdown=6.5"), 3)


def test_a_sustained_loop_is_called_early_and_played_out_it_stays_down(storm: object) -> None:
    """At retry-storm's own point the loop sustains itself: the run is called metastable three minutes after the
    trigger, and played to its end it never recovers (the call's claim, checked)."""
    common = {"warmup_min": 3, "trigger_minutes": 4, "horizon_min": 8, "hold_min": 3}
    called = observe_run(storm, {}, 11, **common)  # type: ignore[arg-type]
    played = observe_run(storm, {}, 11, play_out=True, **common)  # type: ignore[arg-type]
    assert called.outcome == played.outcome == "metastable"
    assert called.minutes == 3 + 4 + 3 and played.minutes == 3 + 4 + 8
    assert called.arrivals_per_s == played.arrivals_per_s and math.isnan(called.recovery_min)
    healed = observe_run(storm, {"retries": 0, "base_requests_per_s": 400.0}, 11, **common)  # type: ignore[arg-type]
    assert healed.outcome == "stable" and 1 <= healed.recovery_min <= 4
    assert healed.minutes == 3 + 4 + healed.recovery_min - 1 + 3  # it stops once recovered and held


def test_a_coarse_map_of_retry_storm_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "map.parquet"
    args = ["cliff", "retry-storm", "--vary", "load=0.4,1", "--vary", "retries=0,3", "--seeds", "2"]
    args += ["--trigger", "brownout:minutes=4,slowdown=6.5", "--warmup", "3", "--horizon", "6", "--out", str(out)]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.output
    assert "4 points × 2 seeds" in done.stdout and "2 local worker processes" in done.stdout
    points = pq.read_table(tmp_path / "map-points.parquet").to_pylist()
    by = {(row["grid_load"], row["grid_retries"]): row for row in points}
    calm, storm = by[(0.4, 0)], by[(1.0, 3)]
    assert (calm["class"], calm["zone"], calm["chain_class"]) == ("stable", "safe", "stable")
    assert (storm["class"], storm["zone"], storm["chain_class"]) == ("metastable", "vulnerable", "metastable")
    assert storm["runs_metastable"] == 2 and math.isinf(storm["chain_recovery_min"])
    assert calm["runs_stable"] == 2 and calm["recovery_p50_min"] <= 5
    runs = pq.read_table(out)
    assert runs.num_rows == 8 and set(runs.column("seed").to_pylist()) == {0, 1}
    assert b'"trigger": "brownout:minutes=4,slowdown=6.5"' in runs.schema.metadata[CONFIG_KEY]
    html = (tmp_path / "map.html").read_text(encoding="utf-8")
    assert "Plotly.newPlot" in html and "<script src=" not in html  # plotly.js inlined: works offline, one file
    assert (tmp_path / "map.png").read_bytes()[:4] == b"\x89PNG"
    assert "retries \\ load" in done.stdout and "MM" in done.stdout and "SS" in done.stdout


def test_bad_map_input_is_one_line_before_anything_runs(tmp_path: Path) -> None:
    runner = CliRunner()
    out = ["--out", str(tmp_path / "x.parquet")]
    for args, field in (
        (["--vary", "load=0.4,1", "--trigger", "brownout:minutes=5", *out], "--trigger"),
        (["--vary", "nope=1,2", *out], "nope"),
        (out, "--vary"),
        (["--vary", "load=1", "--within", "30", *out], "--within"),
        (["--vary", "load=1", "--out", str(tmp_path / "m.csv")], "--out"),
        (["--vary", "load=1", "--seeds", "0", *out], "--seeds"),
    ):
        done = runner.invoke(app, ["cliff", "retry-storm", *args])
        assert done.exit_code == 2, (args, done.output)
        assert field in done.output and len(done.output.strip().splitlines()) == 1, done.output
    done = runner.invoke(app, ["cliff", "free-play", "--vary", "load=1", "--out", str(tmp_path / "x.parquet")])
    assert done.exit_code == 2 and "no brownout of its own" in done.output
    assert not any(tmp_path.iterdir())

"""A team's rules on simulated incidents, evaluated by the real promtool: the alerts' minutes checked against the
rules' arithmetic done here on the records (the oracle), bad rule files refused with promtool's own words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oncallsim import Simulation
from oncallsim.alerting.evaluate import BUILTIN, Episode, RunAlerts, evaluate, input_series, summarize
from oncallsim.cli import app
from oncallsim.metrics.names import METRICS
from oncallsim.model import MinuteRecord
from tests.prometheus import require_prometheus

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "examples" / "rules" / "slo-99.9.yml"
SLO_ERROR = 0.0009999999999999432  # 1 − 0.999 as Sloth prints it
runner = CliRunner()


@pytest.fixture(scope="module")
def bad_deploy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Simulation, Path]:
    sim = Simulation("bad-deploy", seed=4)
    sim.run()
    path = tmp_path_factory.mktemp("runs") / "bad-deploy.json"
    sim.run_file().save(path)
    return sim, path


def _window(timeline: list[MinuteRecord], minute: int, width: int, history: int) -> float:
    """The SLI over the ``width`` minutes up to ``minute`` (the history repeats the opening minute): failed over
    admitted requests, as ``rate(5xx[w]) / rate(not shed[w])`` gives it on samples a minute apart."""
    errors = admitted = 0.0
    for m in range(minute - width + 1, minute + 1):
        if m < -history:
            continue
        r = timeline[max(m, 0)]
        errors += r.admitted_per_s * r.error_rate
        admitted += r.admitted_per_s
    return errors / admitted


def _oracle_naive(timeline: list[MinuteRecord], history: int) -> tuple[int, int]:
    """HighErrorRate: > 1 % over 5 m, for 5 m: pending the first minute it holds, firing 5 minutes on."""
    held = [_window(timeline, m, 5, history) > 0.01 for m in range(len(timeline))]
    pending = held.index(True)
    assert all(held[pending : pending + 6])
    return pending, pending + 5


def _oracle_sloth_page(timeline: list[MinuteRecord], history: int) -> int:
    def over(m: int, short: int, long: int, factor: float) -> bool:
        return (
            _window(timeline, m, short, history) > factor * SLO_ERROR
            and _window(timeline, m, long, history) > factor * SLO_ERROR
        )

    return next(m for m in range(len(timeline)) if over(m, 5, 60, 14.4) or over(m, 30, 360, 6))


def test_the_shipped_rules_fire_when_their_arithmetic_says(bad_deploy: tuple[Simulation, Path], tmp_path: Path) -> None:
    require_prometheus()
    sim, path = bad_deploy
    out, kept = tmp_path / "alerts.json", tmp_path / "runs.test.json"
    result = runner.invoke(app, ["alerts", str(RULES), str(path), "--json", str(out), "--keep-test", str(kept)])
    assert result.exit_code == 0, result.output
    # the groups each minute in the file's order (promtool's own is a map's: a minute late on some runs)
    assert json.loads(kept.read_text())["group_eval_order"] == [
        "sloth-slo-sli-recordings-oncallsim-requests-availability",
        "sloth-slo-meta-recordings-oncallsim-requests-availability",
        "sloth-slo-alerts-oncallsim-requests-availability",
        "naive-error-rate",
    ]
    report = json.loads(out.read_text())
    (run,) = report["runs"]
    assert run["incident_start"] == sim.plan.first_event(sim.length) == 10
    by_rule = {e["rule"]: e for e in run["alerts"]}
    pending, firing = _oracle_naive(sim.timeline, 360)
    assert (by_rule["HighErrorRate (page)"]["pending"], by_rule["HighErrorRate (page)"]["firing"]) == (pending, firing)
    assert by_rule["OncallsimAvailabilitySLO (page)"]["firing"] == _oracle_sloth_page(sim.timeline, 360)
    # the built-in page: the records' own page_firing
    first_page = next(r.minute for r in sim.timeline if r.page_firing)
    assert run["builtin"][0]["firing"] == first_page and run["builtin"][0]["page"]
    # what the terminal says: the incident, and each rule's firing minute against it
    assert f"incident at {sim.plan.clock(10)}" in result.output
    assert f"built-in page {sim.plan.clock(first_page)}" in result.output
    assert sim.plan.clock(firing) in result.output


def test_false_pages_per_week_on_quiet_days(tmp_path: Path) -> None:
    """A rule that fires at the busy hours of a free-play day: its episodes and pages per week against a count
    made on the records."""
    require_prometheus()
    rules = tmp_path / "busy.yml"
    rules.write_text(
        "groups:\n- name: busy\n  rules:\n  - alert: Busy\n    expr: oncallsim_utilization_ratio > 0.55\n"
        "    for: 2m\n    labels: {severity: page}\n"
    )
    sims = []
    for seed in (1, 2):
        sim = Simulation("free-play", seed=seed, minutes=600)
        sim.run()
        sims.append(sim)
    runs = evaluate(rules, sims, ["a", "b"], "oncallsim", history=0)
    firings = 0
    for run, sim in zip(runs, sims, strict=True):
        assert run.quiet
        held = [r.utilization > 0.55 for r in sim.timeline]
        starts = [m for m in range(len(held)) if held[m] and (m == 0 or not held[m - 1])]
        expected = []
        for start in starts:  # pending at the start, firing 2 minutes on if it still holds
            if all(held[start : start + 3]) and start + 2 < len(held):
                expected.append((start, start + 2))
            else:
                expected.append((start, None))
        assert [(e.pending, e.firing) for e in run.episodes] == expected
        firings += sum(1 for _, f in expected if f is not None)
    assert firings > 0
    (builtin, busy) = summarize(runs, {"Busy (page)": True})
    assert builtin.alert == BUILTIN and builtin.per_week == 0.0
    assert busy.per_week == pytest.approx(firings * 10_080 / 1200)
    assert busy.unpaged_per_week == busy.per_week  # quiet runs: the built-in page never fired either


def test_firings_where_the_builtin_page_stayed_silent_count_apart_from_quiet_days() -> None:
    """A run with a scripted incident that never threatened the SLO (no built-in page) is not a quiet day, but a
    rule's firings there are counted per week of such runs (``unpaged/week``); a run the built-in page fired on
    counts in neither."""
    sim = Simulation("free-play", seed=1, minutes=60)
    sim.run()
    page = {"severity": "page"}
    naive = [Episode("Naive", page, pending=10, firing=15, resolved=20), Episode("Naive", page, 30, 35, 36)]
    builtin = [Episode(BUILTIN, {}, pending=12, firing=12)]
    quiet = RunAlerts("quiet", sim, None, [Episode("Naive", page, 40, None, 41)], [])
    coped = RunAlerts("a surge the fleet coped with", sim, 5, naive, [])
    paged = RunAlerts("a surge that paged", sim, 5, naive, builtin)
    (built, row) = summarize([quiet, coped, paged], {"Naive (page)": True})
    assert (row.incidents, row.caught, row.after_start, row.after_builtin) == (2, 2, [10, 10], [3])
    assert (row.quiet_minutes, row.quiet_firings, row.per_week) == (60, 0, 0.0)
    assert (row.unpaged_minutes, row.unpaged_firings) == (120, 2)
    assert row.unpaged_per_week == pytest.approx(2 * 10_080 / 120)
    assert (built.incidents, built.caught, built.unpaged_firings, built.unpaged_per_week) == (2, 1, 0, 0.0)


def test_input_series_repeat_the_opening_minute_back_through_the_history() -> None:
    sim = Simulation("bad-deploy", seed=4, minutes=3)
    sim.run()
    series = input_series(sim.timeline, "web", [m for m in METRICS if m.name == "http_server_requests"], 2)
    ok = next(s for s in series if 'status_class="2xx"' in s["series"])
    amount = sim.timeline[0].admitted_per_s * (1 - sim.timeline[0].error_rate) * 60
    values = [float(v) for v in ok["values"].split()]
    assert values[:3] == [0.0, amount, 2 * amount]
    assert values[3] == pytest.approx(3 * amount)


def test_a_bad_rule_file_gets_promtools_own_message(bad_deploy: tuple[Simulation, Path], tmp_path: Path) -> None:
    require_prometheus()
    _, path = bad_deploy
    bad = tmp_path / "bad.yml"
    bad.write_text("groups:\n- name: x\n  rules:\n  - alert: Foo\n    expr: rate(x[5m) > 1\n")
    result = runner.invoke(app, ["alerts", str(bad), str(path)])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "could not parse expression" in lines[0] and str(bad) in lines[0], result.output


def test_alerts_needs_runs_and_bounded_sweeps(tmp_path: Path) -> None:
    for args, says in (
        ([str(RULES)], "name at least one run file"),
        ([str(RULES), "--scenario", "free-play", "--seeds", "0"], "--seeds: must be from 1"),
        ([str(RULES), "--seeds", "3"], "need --scenario"),
        ([str(RULES), "--scenario", "free-play", "--history", "9999"], "--history: must be from 0 to 4320"),
    ):
        result = runner.invoke(app, ["alerts", *args])
        assert result.exit_code == 2 and says in result.output, (args, result.output)

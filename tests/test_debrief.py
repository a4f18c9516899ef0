"""The debrief: balance of the scenarios, budget split by cause and phase, counterfactuals, run-file round trip."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oncallsim import Action, Simulation
from oncallsim.cli import app
from oncallsim.debrief import make_report, run_outcome
from oncallsim.policies import counterfactuals, full_report, load_policy

BALANCE_SEEDS = range(1000, 1030)  # not the seeds the thresholds were measured on (0–39)
SCENARIOS = ["bad-deploy", "surge", "cache-flush"]


def play(scenario: str, seed: int, policy: str) -> Simulation:
    sim = Simulation(scenario, seed=seed)
    sim.run(policy=load_policy(policy))
    return sim


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_each_scenario_is_a_real_problem_and_solvable(scenario: str) -> None:
    hands_off_failed = textbook_passed = 0
    for seed in BALANCE_SEEDS:
        idle = play(scenario, seed, "hands-off")
        book = play(scenario, seed, "textbook")
        idle_report, book_report = make_report(idle), make_report(book)
        hands_off_failed += not idle_report.passed
        textbook_passed += book_report.passed
        assert book_report.budget_spent <= idle_report.budget_spent
        if idle_report.budget_spent > 1e-6:
            assert book_report.budget_spent < idle_report.budget_spent
    n = len(BALANCE_SEEDS)
    assert hands_off_failed >= 2 * n / 3, f"hands-off failed only {hands_off_failed}/{n}"
    assert textbook_passed >= 2 * n / 3, f"textbook passed only {textbook_passed}/{n}"


def played_by_hand(scenario: str) -> Simulation:
    sim = Simulation(scenario, seed=21)
    plans = {
        "bad-deploy": [Action(25, "rollback"), Action(26, "floor", 12)],
        "surge": [Action(60, "floor", 16), Action(61, "target_utilization", 0.5), Action(200, "floor", 10)],
        "cache-flush": [
            Action(30, "warmup"),
            Action(32, "recommendations", False),
            Action(32, "shed_share", 1.0),
            Action(50, "shed_share", 0.0),
            Action(60, "recommendations", True),
        ],
        "free-play": [Action(100, "ttl_s", 0.0), Action(101, "floor", 6), Action(102, "autoscaler", False)],
    }
    sim.run(plans[scenario])
    return sim


@pytest.mark.parametrize("scenario", [*SCENARIOS, "free-play"])
def test_budget_split_by_cause_and_by_phase_adds_up(scenario: str) -> None:
    sim = played_by_hand(scenario)
    report = make_report(sim)
    spent = sim.plan.budget_start - sim.timeline[-1].budget_left
    assert report.budget_spent == pytest.approx(spent, rel=1e-9, abs=1e-12)
    assert sum(report.budget_spent_by_cause.values()) == pytest.approx(report.budget_spent, rel=1e-9, abs=1e-12)
    assert sum(p.budget_spent for p in report.budget_by_phase) == pytest.approx(report.budget_spent, abs=1e-12)
    assert report.budget_by_phase[0].start_minute == 0 and report.budget_by_phase[-1].end_minute == len(sim.timeline)
    split = report.cost_split
    total = split.base_fleet + split.extra_instances + split.rollback_double_billing
    assert total == pytest.approx(report.cost) == pytest.approx(sim.timeline[-1].cost_so_far)


def test_bad_deploy_budget_is_all_bad_build_and_rollback_billing_shows() -> None:
    report = make_report(played_by_hand("bad-deploy"))
    assert report.budget_spent_by_cause["bad_build"] == pytest.approx(report.budget_spent)
    assert report.cost_split.rollback_double_billing > 0
    assert report.time_to_first_mitigation_min == 15 and report.time_to_recovery_min == 20


def test_cache_flush_budget_is_overload() -> None:
    report = make_report(Simulation("cache-flush", seed=2).counterfactual(None))
    assert report.budget_spent_by_cause["overload"] > 0.9 * report.budget_spent
    assert report.time_to_first_mitigation_min is None


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_counterfactuals_share_the_scenario_draws_and_the_traffic(scenario: str) -> None:
    sim = played_by_hand(scenario)
    others = counterfactuals(sim)
    assert set(others) == {"hands-off", "textbook"}
    mine = [r.requests_per_s for r in sim.timeline]
    for other in others.values():
        assert other.plan == sim.plan
        assert [r.requests_per_s for r in other.timeline] == mine
        assert [r.expected_requests_per_s for r in other.timeline] == [r.expected_requests_per_s for r in sim.timeline]


def test_counterfactuals_stop_where_the_player_stopped() -> None:
    sim = Simulation("surge", seed=5)
    sim.run(until=47)
    assert all(len(o.timeline) == 47 for o in counterfactuals(sim).values())


def test_headline_says_what_the_decisions_bought() -> None:
    report = full_report(played_by_hand("bad-deploy"))
    assert report.headline[0].startswith("Had you done nothing, 12.")
    assert "the playbook spends" in report.headline[0]


def test_every_decision_is_listed_with_its_effect() -> None:
    report = make_report(played_by_hand("cache-flush"))
    assert [d.clock for d in report.decisions] == ["12:00", "12:02", "12:20", "12:30"]
    # people read labels and units, never internal names ("shed_share = 1.0")
    assert report.decisions[1].actions == ["Recommendations feature: off", "Load shedding = 100 %"]
    assert report.decisions[1].items == [
        {"minute": 2 + report.decisions[0].minute, "control": "recommendations", "value": False},
        {"minute": 2 + report.decisions[0].minute, "control": "shed_share", "value": 1.0},
    ]
    first = report.decisions[0]
    assert set(first.before) == set(first.after) >= {"error_rate", "p99_ms", "db_utilization", "cost_per_hour"}


def test_json_contract_fields() -> None:
    data = json.loads(full_report(played_by_hand("surge")).model_dump_json())
    for key in (
        "scenario",
        "seed",
        "objectives",
        "budget_spent",
        "budget_spent_by_cause",
        "cost",
        "worst_p99_ms",
        "minutes_over_latency_target",
        "shed_requests",
        "time_to_first_mitigation_min",
        "counterfactuals",
    ):
        assert key in data
    assert set(data["budget_spent_by_cause"]) == {"overload", "timeout", "bad_build", "dead_instance"}
    assert {"name", "passed", "value", "target"} <= set(data["objectives"][0])
    numeric = (
        "budget_spent",
        "cost",
        "worst_p99_ms",
        "minutes_over_latency_target",
        "shed_requests",
        "time_to_first_mitigation_min",
    )
    for name in ("hands-off", "textbook"):
        assert all(k in data["counterfactuals"][name] for k in numeric)


def test_saved_run_debriefs_to_the_same_numbers_as_the_live_run(tmp_path: Path) -> None:
    run_file, summary = tmp_path / "run.json", tmp_path / "summary.json"
    runner = CliRunner()
    done = runner.invoke(
        app,
        [
            "run",
            "cache-flush",
            "--seed",
            "8",
            "--policy",
            "textbook",
            "--format",
            "jsonl",
            "--out",
            str(tmp_path / "rows.jsonl"),
            "--save-run",
            str(run_file),
        ],
    )
    assert done.exit_code == 0, done.output
    done = runner.invoke(app, ["debrief", str(run_file), "--json", str(summary)])
    assert done.exit_code == 0, done.output
    live = Simulation("cache-flush", seed=8)
    live.run(policy=load_policy("textbook"))
    assert json.loads(summary.read_text()) == json.loads(full_report(live).model_dump_json())
    assert "Score card" in done.stdout


def test_run_with_debrief_prints_the_summary() -> None:
    done = CliRunner().invoke(app, ["run", "bad-deploy", "--policy", "hands-off", "--debrief"])
    assert done.exit_code == 0
    assert "Debrief — Bad deploy" in done.stdout and "objectives missed" in done.stdout
    assert "the other services" not in done.stdout
    # a chain's cost line bills its other services, and its parts add up to the total printed beside them
    chain = CliRunner().invoke(app, ["run", "cascade", "--seed", "2", "--minutes", "6", "--debrief"])
    assert chain.exit_code == 0, chain.stdout
    line = next(row for row in chain.stdout.splitlines() if row.startswith("Cost: "))
    amounts = [float(x) for x in re.findall(r"\$(\d+\.\d\d)", line)]
    assert "the other services' instances" in line and len(amounts) == 5
    assert sum(amounts[:4]) == pytest.approx(amounts[4], abs=0.011)


def test_outcome_of_a_quiet_day() -> None:
    sim = Simulation("free-play", seed=1, minutes=120)
    sim.run()
    result = run_outcome(sim)
    assert result.incident_minute is None and result.time_to_recovery_min is None
    assert result.budget_spent == 0.0 and result.mean_staleness_s == pytest.approx(30.0)


def test_the_debrief_reads_like_a_postmortem() -> None:
    """One incident timeline (each action its own row, even within a minute) and the delay against the playbook."""
    sim = Simulation("bad-deploy", seed=7)
    sim.run(until=40)
    sim.step([("floor", 12), ("rollback", None)])
    sim.run()
    report = full_report(sim)
    rows = [(e.clock, e.kind, e.template % e.args if e.args else e.template) for e in report.incident_timeline]
    assert rows[:3] == [
        ("09:10", "scenario", "deploy started"),
        ("09:12", "scenario", "deploy finished"),
        ("09:28", "detection", "detected: the page fired"),
    ]
    assert ("09:40", "action", "you: Fleet floor = 12 instances") in rows
    assert ("09:40", "action", "you: Roll back") in rows
    assert ("09:40", "mitigation", "first action after the incident began") in rows
    assert rows[-2:][0][1] in ("recovery", "scenario") and any(kind == "recovery" for _c, kind, _t in rows)
    assert [r[0] for r in rows] == sorted(r[0] for r in rows)
    narrative = report.headline[-1]
    assert narrative.startswith("The playbook first acted at 09:29, you at 09:40; each minute of delay cost about ")
    per_minute = (report.budget_spent - report.counterfactuals["textbook"].budget_spent) / 11
    assert f"{per_minute:.2%} of the error budget." in narrative


def test_the_postmortem_exports_as_markdown() -> None:
    from oncallsim.debrief.markdown import render_markdown

    sim = Simulation("bad-deploy", seed=7)
    sim.run(until=30)
    sim.step([("rollback", None)])
    sim.run()
    text = render_markdown(full_report(sim))
    assert text.startswith("# Postmortem — Bad deploy (seed 7)\n")
    assert "| 09:30 | you: Roll back |" in text and "| 09:28 | detected: the page fired |" in text
    assert "| objective | result | measured |" in text and "| score |" in text


def test_one_click_what_ifs_replay_the_run_s_own_draws() -> None:
    from oncallsim.debrief.whatif import what_if
    from oncallsim.model import InvalidInput

    sim = Simulation("bad-deploy", seed=7)
    sim.run(until=40)
    sim.step([("floor", 12), ("rollback", None)])
    sim.run()
    mine = full_report(sim)
    at_page = what_if(sim, "rollback_at_page")  # the page fired at 09:28: rolling back at once spends less
    assert at_page.budget_spent < mine.budget_spent and at_page.objectives_passed == at_page.objectives_total
    assert at_page.budget_spent == pytest.approx(mine.counterfactuals["textbook"].budget_spent)
    without = what_if(sim, "without", index=1)  # without the rollback: the bad build stays, hands-off's budget
    assert without.action == "Roll back" and without.time_to_recovery_min is None
    assert without.budget_spent == pytest.approx(mine.counterfactuals["hands-off"].budget_spent)
    earlier = what_if(sim, "earlier", index=1, minutes=5)
    assert at_page.budget_spent < earlier.budget_spent < mine.budget_spent
    for kind, index, minutes, field in (
        ("sooner", 0, 5, "kind"),
        ("without", 9, 5, "index"),
        ("earlier", 1, 0, "minutes"),
    ):
        with pytest.raises(InvalidInput) as info:
            what_if(sim, kind, index, minutes)
        assert info.value.field == field


def test_the_debrief_charts_read() -> None:
    """One legend per panel, the time axis under each, readable marker labels, counterfactuals in their own styles."""
    from oncallsim.debrief.charts import DECISIONS, PANELS, debrief_figure
    from oncallsim.policies import counterfactuals

    sim = Simulation("bad-deploy", seed=7)
    sim.run(until=40)
    sim.step([("shed_share", 0.3), ("rollback", None)])
    sim.run()
    others = {name: o.timeline for name, o in counterfactuals(sim).items()}
    fig = debrief_figure(sim.timeline, sim.params, sim.actions, 1000.0, others)
    rows = {trace.yaxis: trace.legend for trace in fig.data if trace.meta != DECISIONS}
    assert len(set(rows.values())) == len(PANELS)  # each panel's traces in that panel's own legend
    assert all((legend or "legend").removeprefix("legend") == axis.removeprefix("y") for axis, legend in rows.items())
    assert all(fig.layout[f"xaxis{i if i > 1 else ''}"].showticklabels for i in range(1, len(PANELS) + 1))
    labels = [a.text for a in fig.layout.annotations if a.text.startswith("▼")]
    assert labels == ["▼ deploy started", "▼ page fired"]  # the run's events: a line across the panels, a label
    # the decisions: one trace per panel, a ▼ and a dotted line at the minute across it, what was done on hover
    decisions = [t for t in fig.data if t.meta == DECISIONS]
    assert [t.xaxis for t in decisions] == ["x", *(f"x{i}" for i in range(2, len(PANELS) + 1))]
    for trace in decisions:
        overlay = fig.layout[f"yaxis{trace.yaxis.removeprefix('y')}"]
        assert overlay.overlaying == trace.xaxis.replace("x", "y") and list(overlay.range) == [0, 1]
        assert not overlay.visible
        assert list(trace.x) == [sim.timeline[40].clock] * 2 + [None]
        assert list(trace.y) == [1.0, 0.0, None] and trace.text[0] == "Load shedding = 30 %, Roll back"
        assert "%{text}" in trace.hovertemplate and trace.hoverinfo != "skip"
    styles = {t.name: t.line.dash for t in fig.data if "(" in t.name}
    assert styles["p99 (hands-off)"] != styles["p99 (textbook)"] and "solid" not in styles.values()


def test_a_day_with_an_action_every_minute_debriefs_with_a_bounded_chart() -> None:
    """An action at each of a day's 1,440 minutes: the chart holds one decisions trace per panel (a point pair a
    minute), never a shape and a label per decision (plotly re-validates every shape so far on each one added,
    a cost in the square of the action minutes); the HTML report, in English and translated, carries them all."""
    from oncallsim.debrief.charts import DECISIONS, MARKED_EVENTS, PANELS, debrief_figure
    from oncallsim.debrief.html import render_html

    sim = Simulation("free-play", seed=3)
    for minute in range(sim.length):
        sim.step([("target_utilization", 0.55 if minute % 2 else 0.65)])
    assert sim.length == len({a.minute for a in sim.actions}) == 1440
    others = counterfactuals(sim)
    report = make_report(sim, others)
    timelines = {name: o.timeline for name, o in others.items()}
    fig = debrief_figure(sim.timeline, sim.params, sim.actions, report.latency_target_ms, timelines)
    events = sum(getattr(e, "code", "") in MARKED_EVENTS for r in sim.timeline for e in r.events)
    assert events < 5  # the day's own events (a few), not its decisions
    assert len(fig.layout.shapes) == events * len(PANELS)
    assert len(fig.layout.annotations) == len(PANELS) + events  # the panels' titles and the events' labels
    decisions = [t for t in fig.data if t.meta == DECISIONS]
    assert len(decisions) == len(PANELS) and len(fig.data) < 40
    assert all(len(t.x) == 3 * 1440 for t in decisions)
    assert decisions[0].text[:4] == ("Target utilization = 65 %",) * 2 + ("", "Target utilization = 55 %")
    # each decision on hover, in each panel, in the page's language (the setting's name and its percent)
    for language, said in (("en", "Target utilization = 55 %"), ("da", "Måludnyttelse = 55\u00a0%")):
        page = render_html(report, sim.timeline, sim.plan, sim.params, sim.actions, timelines, language)
        assert page.count('"meta":"decisions"') == len(PANELS) and page.count('"type":"line"') == len(fig.layout.shapes)
        assert page.count(f'"{said}"') == 720 * 2 * len(PANELS)


def test_a_chains_debrief_charts_each_services_saturation_and_p99() -> None:
    """A chain has no one fleet's capacity, cache or database: its debrief's first panel is each service's share of
    workers busy (with the 100 % line), its fifth each service's p99 under the clients' deadline, the values its
    records carry; titled as the console's charts, in the page's language."""
    from oncallsim.debrief.charts import debrief_figure
    from oncallsim.debrief.html import localize_figure, translate_text

    sim = Simulation("cascade", seed=3, minutes=4)
    sim.run()
    assert sim.plan.graph is not None
    fig = debrief_figure(sim.timeline, sim.params, deadline_ms=sim.plan.graph.deadline_s * 1000.0)
    titles = [a.text for a in fig.layout.annotations[:6]]
    assert titles[0] == "Each service's utilization: workers busy (%)"
    assert titles[4] == "Each service's p99 vs the clients' deadline (ms)"
    panel = {t.name: t for t in fig.data if t.legend == "legend"}
    services = list(sim.timeline[0].extras["graph"]["services"])
    assert set(panel) == {*services, "all workers busy"} and set(panel["all workers busy"].y) == {100.0}
    for name in services:
        expected = [100.0 * r.extras["graph"]["services"][name]["utilization"] for r in sim.timeline]
        assert list(panel[name].y) == pytest.approx(expected, rel=1e-12)
    fifth = {t.name: t for t in fig.data if t.legend == "legend5"}
    assert set(fifth) == {*services, "deadline"} and set(fifth["deadline"].y) == {1000.0}
    assert list(fifth["recs"].y) == [r.extras["graph"]["services"]["recs"]["p99_ms"] for r in sim.timeline]
    assert fig.layout.yaxis5.type == "log"
    second = {t.name: t for t in fig.data if t.legend == "legend2"}
    assert "timeout" not in second and set(second["deadline"].y) == {1000.0}  # the graph's, not params.timeout_s
    danish = localize_figure(json.loads(fig.to_json()), "da")
    title = danish["layout"]["annotations"][0]["text"]
    assert title == translate_text("Each service's utilization: workers busy (%)", "da") and "utilization" not in title
    # one service's debrief keeps its panels
    one = Simulation("surge", seed=3, minutes=2)
    one.run()
    assert debrief_figure(one.timeline, one.params).layout.annotations[0].text == "Requests vs capacity (req/s)"


def test_a_run_judged_on_its_p99_is_told_how_its_p99_went_first() -> None:
    """The fan-out is judged on its p99 alone (its error budget never moves): its debrief's headline begins with
    the share of minutes within the target against the objective, and what hands-off and the playbook reached
    (a newcomer's debrief said 0.0 % of the budget three times and never why the objective failed); a scenario
    judged on its budget keeps its budget first, the p99 after the cost. In the page's language."""
    from oncallsim.debrief.html import sentence
    from oncallsim.policies.counterfactual import counterfactuals
    from oncallsim.simulation import Action

    sim = Simulation("fan-out", seed=4)
    sim.run([Action(4, "page.hedge_after_quantile", 0.95)])
    report = make_report(sim, counterfactuals(sim), effects=False)
    within = sum(r.p99_ms <= 120.0 for r in sim.timeline) / len(sim.timeline)  # counted apart from the debrief
    assert report.headline[0] == (
        f"Your p99 was within 120 ms in {within:.1%} of the minutes (the objective: at least 90%); "
        f"hands-off 0.0%, the playbook {report.counterfactuals['textbook'].p99_within_share['120']:.1%}."
    )
    assert "Din p99 var inden for 120 ms" in sentence(*report.headline_parts[0], "da")
    flush = Simulation("cache-flush", seed=3, minutes=60)
    flush.run()
    parts = make_report(flush, effects=False).headline
    assert parts[0].startswith("You spent") and any(p.startswith("Your p99 was within 1000 ms") for p in parts[2:])

"""The arena (docs/arena.md): the same table twice, the playbook over hands-off, its JSON and offline HTML, an
agent over JSON lines, bad input refused in one line, and a real Dask cluster giving the local rows."""

from __future__ import annotations

import json
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oncallsim import Simulation
from oncallsim.arena import parse_contestant, plan_arena, play_run, run_arena
from oncallsim.cli import app
from oncallsim.debrief import make_report
from oncallsim.policies import load_policy
from oncallsim.policies.person import Person

runner = CliRunner()

BASE = ["arena", "--scenario", "bad-deploy", "--scenario", "surge", "--seeds", "3000-3001", "--workers", "1"]
THREE = ["--contestant", "hands-off=hands-off", "--contestant", "playbook=textbook", "--contestant", "person=person"]


def ranking(stdout: str) -> str:
    """The ranking table: everything before the decisions' wall-clock (which varies run to run)."""
    return stdout.split("Decisions (wall-clock")[0]


class Cells(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.cells: list[str] = []
        self.tags: set[str] = set()
        self.inside = False

    def handle_starttag(self, tag: str, attrs: object) -> None:
        self.tags.add(tag)
        self.inside = tag == "td"

    def handle_endtag(self, tag: str) -> None:
        self.inside = False

    def handle_data(self, data: str) -> None:
        if self.inside:
            self.cells.append(data)


def test_the_table_is_the_same_twice_and_the_playbook_beats_hands_off(tmp_path: Path) -> None:
    out, page = tmp_path / "a.json", tmp_path / "a.html"
    first = runner.invoke(app, [*BASE, *THREE, "--json", str(out), "--html", str(page)])
    assert first.exit_code == 0, first.output
    second = runner.invoke(app, [*BASE, *THREE])
    assert second.exit_code == 0, second.output
    assert ranking(first.stdout) == ranking(second.stdout)
    document = json.loads(out.read_text())
    table = document["contestants"]
    assert [line["contestant"] for line in table][-1] == "hands-off"  # sorted by score: hands-off last
    by = {line["contestant"]: line for line in table}
    assert by["playbook"]["score_mean"] > by["hands-off"]["score_mean"]
    assert by["playbook"]["budget_spent_mean"] < by["hands-off"]["budget_spent_mean"]
    assert len(document["runs"]) == 3 * 2 * 2 and {r["seed"] for r in document["runs"]} == {3000, 3001}
    assert {(d["scenario"], d["contestant"]) for d in document["by_scenario"]} == {
        (s, c) for s in ("bad-deploy", "surge") for c in by
    }
    # each run's numbers are those of the same run played by Simulation.run and its debrief (the arena's own
    # loop, its checks and its timing, change nothing)
    for row in document["runs"]:
        policy = {"hands-off": load_policy("hands-off"), "playbook": load_policy("textbook"), "person": Person(0)}
        sim = Simulation(row["scenario"], seed=row["seed"])
        sim.run(policy=policy[row["contestant"]])
        report = make_report(sim, effects=False)
        assert (row["score"], row["budget_spent"], row["time_to_mitigate_min"]) == (
            report.score,
            report.budget_spent,
            report.time_to_recovery_min,
        )
        assert row["decisions"] == len(sim.timeline) and row["decision_ms_max"] >= row["decision_ms_mean"] > 0
        assert row["gap"] == row["best_counterfactual_score"] - row["score"]
    # the playbook is a counterfactual of every run: no best counterfactual scores below the playbook's own run
    playbook = {(r["scenario"], r["seed"]): r["score"] for r in document["runs"] if r["contestant"] == "playbook"}
    assert all(r["best_counterfactual_score"] >= playbook[r["scenario"], r["seed"]] for r in document["runs"])
    parsed = Cells()
    parsed.feed(page.read_text())
    assert {"hands-off", "playbook", "person"} <= set(parsed.cells)
    assert "script" not in parsed.tags and "link" not in parsed.tags and "http" not in page.read_text()


def test_html_escapes_a_contestants_name_and_text(tmp_path: Path) -> None:
    from oncallsim.arena.output import arena_html

    plan = plan_arena([parse_contestant("a+b=textbook")], ["bad-deploy"], [3000], with_counterfactuals=False)
    rows = run_arena(plan)
    rows[0]["failure"] = "<script>alert(1)</script>"
    page = arena_html(plan, rows)
    assert "<script>" not in page and "&lt;script&gt;" in page


AGENT = """
import json, sys
rolled = False
for line in sys.stdin:
    message = json.loads(line)
    if message["type"] != "observe":
        continue
    last = message["last"]
    actions = []
    if last and last["page_firing"] and not rolled:
        actions, rolled = [{"control": "rollback"}, {"control": "floor", "value": 999}], True
    print(json.dumps({"actions": actions}), flush=True)
"""


def test_an_agent_plays_over_json_lines_and_a_refused_action_is_counted(tmp_path: Path) -> None:
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    agent = parse_contestant(f"bot=agent:{sys.executable} {script}")
    row = play_run(agent, "bad-deploy", 3000, with_counterfactuals=False)
    nothing = play_run(parse_contestant("x=hands-off"), "bad-deploy", 3000, with_counterfactuals=False)
    assert row["failure"] is None and row["refused"] == 1 and row["actions"] == 1  # floor 999: out of range
    assert row["decisions"] == 120 and row["score"] > nothing["score"]


@pytest.mark.parametrize(
    ("code", "why"),
    [
        ("import sys; sys.exit(0)", "the agent's process ended"),
        ("import sys\nfor line in sys.stdin: print('not json', flush=True)", "an answer that is not JSON"),
        ("import sys\nfor line in sys.stdin: pass", "no answer within 0.5 s"),
    ],
)
def test_an_agent_that_breaks_the_rules_plays_the_rest_hands_off(tmp_path: Path, code: str, why: str) -> None:
    from oncallsim.arena import Settings

    script = tmp_path / "agent.py"
    script.write_text(code)
    row = play_run(
        parse_contestant(f"bot=agent:{sys.executable} {script}"),
        "bad-deploy",
        3000,
        settings=Settings("normal", 0.5),
        with_counterfactuals=False,
    )
    nothing = play_run(parse_contestant("x=hands-off"), "bad-deploy", 3000, with_counterfactuals=False)
    assert why in row["failure"] and row["decisions"] == 1
    assert row["score"] == nothing["score"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--contestant", "playbook"], "--contestant: expects NAME=SPEC"),
        (["--contestant", "x=wizard:3"], "--contestant: unknown kind 'wizard'"),
        (["--contestant", "x=wizard"], "--contestant: unknown contestant 'wizard'"),
        (["--contestant", "x=policy:nonesuch"], "--contestant: unknown policy 'nonesuch'"),
        (["--contestant", "x=policy:no_such_module_xyz:P"], "policy: cannot import"),
        (["--contestant", "x=person:-3"], "--contestant: person: seconds must be from 0"),
        (["--contestant", "x=controls:floor"], "--contestant: controls: expects NAME=VALUE"),
        (["--contestant", "x=controls:nonesuch=3"], "--contestant: controls: nonesuch: unknown parameter"),
        (["--contestant", "x=controls:limiter=bbr"], "--contestant: x on bad-deploy: limiter"),
        (["--contestant", "x=textbook", "--contestant", "x=hands-off"], "--contestant: the name 'x' is given twice"),
        (["--scenario", "nonesuch"], "--scenario: unknown scenario 'nonesuch'"),
        (["--seeds", "3000-"], "--seeds: expects LOW-HIGH"),
        (["--seeds", "5000-4000"], "--seeds: must be seeds from 0 to 4294967295"),
        (["--seeds", "4294967296"], "--seeds: must be seeds from 0 to 4294967295"),
        (["--seeds", "150"], "--seeds: 150 is among the seeds the scenarios were tuned on (0–199)"),
        (["--seeds", "3000,3000"], "--seeds: names a seed twice"),
        (["--engine", "quantum"], "--engine: unknown engine 'quantum'"),
        (["--difficulty", "easy"], "--difficulty: must be one of guided, normal, hard"),
        (["--time-limit", "0"], "--time-limit: must be above 0"),
        (["--workers", "0"], "--workers: must be from 1 to 256"),
    ],
)
def test_bad_input_is_one_line_naming_the_field(tmp_path: Path, args: list[str], needle: str) -> None:
    out = tmp_path / "a.json"
    done = runner.invoke(app, ["arena", "--scenario", "bad-deploy", "--seeds", "3000", "--json", str(out), *args])
    assert done.exit_code == 2, done.output
    message = done.stderr.strip()
    assert needle in message and "Traceback" not in done.output and len(message.splitlines()) == 1, message
    assert not out.exists()


def test_a_dask_cluster_gives_the_local_rows() -> None:
    """A real scheduler and one worker (in this process's threads): the rows are the local ones."""
    from distributed import LocalCluster

    from oncallsim.batch.executors import DaskExecutor

    plan = plan_arena(
        [parse_contestant("playbook=textbook"), parse_contestant("hands-off=hands-off")],
        ["bad-deploy"],
        [3000],
        with_counterfactuals=False,
    )
    with LocalCluster(  # type: ignore[no-untyped-call]
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        executor = DaskExecutor(cluster.scheduler_address)
        try:
            remote = run_arena(plan, executor)
        finally:
            executor.close()
    local = run_arena(plan)
    timing = ("decision_ms_mean", "decision_ms_max")
    assert [{k: v for k, v in r.items() if k not in timing} for r in remote] == [
        {k: v for k, v in r.items() if k not in timing} for r in local
    ]


def test_local_worker_processes_give_the_rows_of_one_process() -> None:
    plan = plan_arena(
        [parse_contestant("playbook=textbook"), parse_contestant("late=person:20")],
        ["bad-deploy"],
        "3000-3001",
        with_counterfactuals=False,
    )
    from oncallsim.batch.executors import LocalExecutor

    timing = ("decision_ms_mean", "decision_ms_max")
    here = [{k: v for k, v in r.items() if k not in timing} for r in run_arena(plan)]
    there = [{k: v for k, v in r.items() if k not in timing} for r in run_arena(plan, LocalExecutor(2))]
    assert there == here


@pytest.mark.parametrize(("difficulty", "told"), [("guided", "stop"), ("normal", "page"), ("hard", "page")])
def test_a_persons_pace_is_the_person_policy_told_as_the_difficulty_says(difficulty: str, told: str) -> None:
    """``person:20@0.5``: 20 s at half a minute a second is 10 minutes (policies/person.py reaction_minutes)."""
    from oncallsim.arena import Settings

    row = play_run(
        parse_contestant("p=person:20@0.5"),
        "surge",
        3001,
        settings=Settings(difficulty, 30.0),
        with_counterfactuals=False,
    )
    sim = Simulation("surge", seed=3001)
    sim.run(policy=Person(10, told))  # type: ignore[arg-type]
    assert (row["score"], row["budget_spent"], row["actions"]) == (
        make_report(sim, effects=False).score,
        make_report(sim, effects=False).budget_spent,
        len(sim.actions),
    )


def test_the_docs_agent_plays_from_the_command_line(tmp_path: Path) -> None:
    """docs/arena.md's example agent, as written there, through ``oncallsim arena``: it rolls back at the page."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "arena.md").read_text()
    script = tmp_path / "agent.py"
    script.write_text(text.split("```python\n")[1].split("```")[0])
    out = tmp_path / "a.json"
    done = runner.invoke(
        app,
        [
            "arena",
            "--scenario",
            "bad-deploy",
            "--seeds",
            "3000",
            "--workers",
            "1",
            "--contestant",
            f"bot=agent:{sys.executable} {script}",
            "--contestant",
            "hands-off=hands-off",
            "--json",
            str(out),
        ],
    )
    assert done.exit_code == 0, done.output
    runs = {r["contestant"]: r for r in json.loads(out.read_text())["runs"]}
    assert runs["bot"]["failure"] is None and runs["bot"]["actions"] == 1 and runs["bot"]["refused"] == 0
    assert runs["bot"]["score"] > runs["hands-off"]["score"]


def test_the_overload_controllers_play_beside_bbr_and_the_playbook(tmp_path: Path) -> None:
    """Issue 28's "done when": the two shipped controllers (Gradient2, the PID shedder) in one table with BBR,
    hands-off and the playbook, on a held-out seed of the flash crowd (request engine), the same table twice;
    each controller keeps more of the budget than hands-off (which has no limiter: its queue grows past the
    clients' timeout)."""
    args = ["arena", "--engine", "request", "--scenario", "flash-crowd", "--seeds", "3000", "--workers", "2"]
    args += ["--no-counterfactuals"]
    out = tmp_path / "controllers.json"
    first = runner.invoke(app, [*args, "--json", str(out)])  # the request engine's line-up by default
    assert first.exit_code == 0, first.output
    second = runner.invoke(app, args)
    assert second.exit_code == 0, second.output
    assert ranking(first.stdout) == ranking(second.stdout)
    by = {line["contestant"]: line for line in json.loads(out.read_text())["contestants"]}
    assert set(by) == {"hands-off", "playbook", "person", "bbr", "gradient2", "pid-shedder"}
    for controller in ("bbr", "gradient2", "pid-shedder"):
        assert by[controller]["budget_spent_mean"] < by["hands-off"]["budget_spent_mean"], controller

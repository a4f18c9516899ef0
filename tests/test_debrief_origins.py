"""The debrief's "Where the failures began" for a chain of services (issue 24; docs/graphs.md): the lessons' burn
attributed to the service where it began, not the entry where every failure is seen, and the graph's
contradictions — in the report, the Markdown, the offline HTML, the terminal and the console's debrief page, in
every language."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from rich.console import Console

from oncallsim import Simulation
from oncallsim.cli_debrief import print_debrief_in
from oncallsim.debrief.html import render_html
from oncallsim.debrief.markdown import render_markdown
from oncallsim.debrief.report import Report, make_report
from oncallsim.scenarios.graph import contradictions
from oncallsim.scenarios.registry import scenario_from_text
from tests.test_web import console


def lesson(name: str, seed: int) -> tuple[Simulation, Report]:
    sim = Simulation(name, seed=seed)
    sim.run()
    return sim, make_report(sim, {}, effects=False)


def shares(report: Report) -> dict[str, float]:
    assert report.failure_origins is not None
    return {row.service: row.share for row in report.failure_origins.services}


def test_the_cascades_burn_began_at_the_slow_leaf_though_it_was_seen_at_the_api() -> None:
    """Recommendations turn slow and fill the api's workers: the api answers every failure (all seen there), but
    most began at recs — including the pages that never call it, whose requests waited behind its callers."""
    sim, report = lesson("cascade", 201)
    origins = report.failure_origins
    assert origins is not None and origins.entry == "api"
    share = shares(report)
    assert share["recs"] > 0.8 and share["api"] < 0.15 and sum(share.values()) == pytest.approx(1.0)
    seen = {row.service: row.seen_share for row in origins.services}
    assert seen == {"api": 1.0, "catalog": 0.0, "recs": 0.0}
    # every failed client request counted once: the records' timeouts and errors, summed, are the origins' total
    failed = sum(
        (r.error_rate * r.extras["graph"]["services"]["api"]["attempts_per_s"] * 60.0)
        for r in sim.timeline
        if r.extras is not None
    )
    assert origins.failed == pytest.approx(failed, rel=0.01)
    # the budget they burned: each service's share of what the failed requests burned
    recs = next(row for row in origins.services if row.service == "recs")
    assert recs.budget_spent == pytest.approx(share["recs"] * report.budget_spent_by_cause["timeout"])
    sentence = next(line for line in report.headline if "began at" in line)
    assert "began at recs, though every failed request was seen at api" in sentence
    markdown = render_markdown(report)
    assert "## Where the failures began" in markdown and "| recs |" in markdown
    assert "None: no timeout works against another's" in markdown  # the cascade declares no timeout


def test_the_retry_layers_burn_began_at_the_database() -> None:
    _, report = lesson("retry-layers", 201)
    share = shares(report)
    assert share["db"] > 0.8 and share["api"] < 0.05
    assert any("began at db, though every failed request was seen at api" in line for line in report.headline)


CONTRADICTING = """
id = "contradicting"
version = 1
title = "A callee allowed longer than its caller"
summary = "The database's timeout is longer than the api's."
briefing = "The api gives up on the database first."
start = "09:00"
minutes = 3

[graph]
entry = "api"
deadline_ms = 1000

[graph.services.api]
workers_per_instance = 20
service_ms = 5
timeout_ms = 300
calls = [{ to = "db", network_ms = 1 }]

[graph.services.db]
workers_per_instance = 20
service_ms = 4
timeout_ms = 500
"""


@pytest.fixture(scope="module")
def contradicting() -> tuple[Simulation, Report]:
    scenario = scenario_from_text(CONTRADICTING, "contradicting.toml")
    sim = Simulation(scenario, seed=1)
    sim.run()
    return sim, make_report(sim, {}, effects=False)


def test_the_graphs_contradictions_are_listed_on_every_surface(contradicting: tuple[Simulation, Report]) -> None:
    sim, report = contradicting
    assert sim.scenario.graph is not None
    origins = report.failure_origins
    assert origins is not None
    lines = [template % args for template, args in origins.contradictions]
    assert lines == contradictions(sim.scenario.graph) and len(lines) == 1
    assert "api gives up first and db works on for nobody" in lines[0]
    assert f"- {lines[0]}" in render_markdown(report)
    english = render_html(report, sim.timeline, sim.plan, sim.params, sim.actions)
    assert "Where the failures began" in english and "db works on for nobody" in english
    danish = render_html(report, sim.timeline, sim.plan, sim.params, sim.actions, language="da")
    assert "Hvor fejlene begyndte" in danish and "Modsigelser i grafen" in danish
    assert "api giver op først, og db arbejder videre for ingen" in danish
    out = io.StringIO()
    print_debrief_in(report, sim.scenario.title, "ar", Console(file=out, width=200))
    assert "أين بدأت حالات الفشل" in out.getvalue() and "يستسلم api أولًا" in out.getvalue()


def test_a_run_without_a_graph_has_no_such_section() -> None:
    sim = Simulation("bad-deploy", seed=1, minutes=5)
    sim.run()
    report = make_report(sim, {}, effects=False)
    assert report.failure_origins is None and "failures began" not in render_markdown(report)


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with console(tmp_path / "runs.db") as c:
        yield c


def test_the_consoles_debrief_page_shows_where_the_failures_began(client: TestClient) -> None:
    run = Simulation("cascade", seed=3, minutes=30)
    run.run()
    file = ("r.json", run.run_file().model_dump_json(), "application/json")
    response = client.post("/api/runs/import", files={"file": file})
    assert response.status_code == 201, response.text
    run_id = response.json()["id"]
    page = client.get(f"/runs/{run_id}/debrief").text
    assert 'id="failure-origins"' in page and "Where the failures began" in page
    assert 'data-service="recs"' in page and 'id="contradictions"' in page
    for language, title in [("zu", "Lapho ukwehluleka kwaqala khona"), ("hy", "Որտեղ սկսվեցին ձախողումները")]:
        assert title in client.get(f"/runs/{run_id}/debrief?lang={language}").text


def test_the_origins_are_the_same_run_after_run() -> None:
    """The same scenario and seed count the same failures at the same services, minute by minute."""

    def begun(seed: int) -> list[dict[str, float]]:
        sim = Simulation("cascade", seed=seed, minutes=20)
        return [
            {name: s["failures_begun_per_s"] for name, s in r.extras["graph"]["services"].items()}
            for r in sim.run()
            if r.extras is not None
        ]

    first = begun(7)
    assert first == begun(7) and sum(m["recs"] for m in first) > 0

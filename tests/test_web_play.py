"""Playing the console as a person does (issue 12), in process: pacing and difficulty, the run's lifecycle, the
engine choice, the postmortem debrief and its exports, the leaderboard and the daily seed, one-click what-ifs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from markupsafe import escape

from oncallsim import Simulation
from oncallsim.scenarios.texts import scenario_text
from oncallsim.web.pacing import incident_kind, pause_reason, stop_for
from tests.test_web import console, new_run, receive_until


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "runs.sqlite3"


@pytest.fixture
def client(db: Path) -> Iterator[TestClient]:
    with console(db) as c:
        yield c


def test_the_card_opens_a_run_paused_with_its_difficulty(client: TestClient) -> None:
    response = client.post(
        "/runs",
        data={"scenario": "bad-deploy", "seed": "7", "speed": "2", "difficulty": "guided"},
        follow_redirects=False,
    )
    run_id = response.headers["location"].rsplit("/", 1)[1]
    state = client.get(f"/api/runs/{run_id}").json()["state"]
    assert state["paused"] and state["minute"] == 0 and state["difficulty"] == "guided"
    page = client.get(f"/runs/{run_id}").text
    assert 'id="briefing"' in page and "Start the run" in page and "error budget left ≥ 15%" in page
    assert client.get(f"/api/runs/{run_id}/runfile").json()["difficulty"] == "guided"
    assert "guided" in client.get("/runs").text
    # guided plays at 1× or 2×: faster is refused with the reason, not clamped
    fast = client.post("/runs", data={"scenario": "bad-deploy", "seed": "7", "speed": "8", "difficulty": "guided"})
    assert fast.status_code == 422 and "speed: the guided difficulty plays at most 2×" in fast.text
    bad = client.post("/runs", data={"scenario": "bad-deploy", "seed": "7", "difficulty": "easy"})
    assert bad.status_code == 422 and "difficulty: must be one of guided, normal, hard" in bad.text
    refused = client.post("/api/runs", json={"scenario": "surge", "difficulty": "easy"})
    assert refused.status_code == 422 and refused.json()["field"] == "difficulty"
    with client.websocket_connect(f"/api/runs/{run_id}/ws") as ws:
        receive_until(ws, lambda m: m["type"] == "snapshot")
        ws.send_json({"type": "speed", "value": 4})
        error = receive_until(ws, lambda m: m["type"] == "error")
        assert error["field"] == "speed"


def test_guided_stops_at_the_incident_and_at_the_page(client: TestClient) -> None:
    run_id = new_run(client, difficulty="guided", speed=2, minutes=40, paused=True)
    client.post(f"/api/runs/{run_id}/control", json={"type": "resume"})
    with client.websocket_connect(f"/api/runs/{run_id}/ws") as ws:
        stop = receive_until(ws, lambda m: m["type"] == "minute" and m["state"]["paused"])
        assert stop["record"]["clock"] == "09:10" and stop["state"]["pause_reason"] == "incident"
        assert stop["state"]["incident"] == "deploy"
        ws.send_json({"type": "resume"})
        stop = receive_until(ws, lambda m: m["type"] == "minute" and m["state"]["paused"])
        assert any(e["code"] == "page_fired" for e in stop["record"]["events"])
        assert stop["state"]["pause_reason"] == "page"
        ws.send_json({"type": "resume"})
        resumed = receive_until(ws, lambda m: m["type"] == "state")
        assert resumed["pause_reason"] is None and not resumed["paused"]


def test_normal_stops_at_the_page_and_goes_on_at_1x_and_hard_does_not(client: TestClient) -> None:
    for difficulty in ("normal", "hard"):
        run_id = new_run(client, difficulty=difficulty, minutes=40)
        with client.websocket_connect(f"/api/runs/{run_id}/ws") as ws:
            paged = receive_until(
                ws, lambda m: m["type"] == "minute" and any(e["code"] == "page_fired" for e in m["record"]["events"])
            )
            if difficulty == "hard":  # nothing waits
                assert paged["state"]["speed"] == 16 and not paged["state"]["paused"]
                ws.send_json({"type": "pause"})
                continue
            # normal: no stop at the deploy (09:10), a stop at the page, without the guided difficulty's hint
            assert paged["state"]["paused"] and paged["state"]["pause_reason"] == "page"
            assert paged["state"]["speed"] == 1 and paged["record"]["clock"] == "09:28"
            ws.send_json({"type": "resume"})
            resumed = receive_until(ws, lambda m: m["type"] == "state" and not m["paused"])
            assert resumed["speed"] == 1 and resumed["pause_reason"] is None
            ws.send_json({"type": "pause"})


def test_normal_stops_once_for_a_lesson_whose_trouble_is_there_from_the_start() -> None:
    """The fan-out's slow tail is there from 09:00 and never pages (latency, not errors): normal stops after its
    first minute, as guided does (without the hint), else nothing stops it and a person at 1× meets the
    objective's minutes running out before reading the page (a newcomer's play-through lost it so); only then.
    A scenario with an event stops on normal at its page alone, as before; hard never."""
    fan_out = Simulation("fan-out", seed=4, minutes=4)
    hinted = bool(fan_out.scenario.incident_hint.strip())
    records = [fan_out.step() for _ in range(4)]
    for difficulty, first in (("guided", "incident"), ("normal", "incident"), ("hard", None)):
        stops = [stop_for(difficulty, fan_out.plan, r, hinted) for r in records]
        assert stops == [first, None, None, None], difficulty
    deploy = Simulation("bad-deploy", seed=3)
    start = deploy.plan.first_event(deploy.length)
    assert start is not None
    for _ in range(start + 1):
        record = deploy.step()
    assert pause_reason(deploy.plan, record) == "incident"
    assert stop_for("guided", deploy.plan, record, True) == "incident"
    assert stop_for("normal", deploy.plan, record, True) is None


@pytest.mark.parametrize(
    ("scenario", "seed", "incident", "clock"),
    [("slow-instance", 3, "instance", "10:24"), ("retry-storm", 3, "brownout", "10:20")],
)
def test_guided_stops_at_every_scenarios_incident_with_its_own_hint(
    client: TestClient, scenario: str, seed: int, incident: str, clock: str
) -> None:
    """Every built-in scenario's incident is a guided stop (its plan's first event), and the note's hints are the
    scenario's own (its file's incident_hint and page_hint), in the page's language."""
    run_id = new_run(client, scenario=scenario, seed=seed, difficulty="guided", speed=2, paused=True)
    page = client.get(f"/runs/{run_id}").text
    sim = Simulation(scenario, seed=seed)
    assert f'data-incident-hint="{escape(sim.scenario.incident_hint.strip()[:40])}' in page
    danish = client.get(f"/runs/{run_id}?lang=da").text
    assert escape(scenario_text(sim.scenario, "page_hint", "da")[:30]) in danish
    client.post(f"/api/runs/{run_id}/control", json={"type": "resume"})
    with client.websocket_connect(f"/api/runs/{run_id}/ws") as ws:
        stop = receive_until(ws, lambda m: m["type"] == "minute" and m["state"]["paused"])
        assert stop["record"]["clock"] == clock and stop["state"]["incident"] == incident
        assert stop["state"]["pause_reason"] in ("incident", "page")  # a page in the incident's minute is one stop
        ws.send_json({"type": "pause"})


@pytest.mark.parametrize("scenario", ["bad-deploy", "surge", "cache-flush", "zone-outage"])
def test_every_scenarios_incident_is_a_stop(scenario: str) -> None:
    """The guided stops of each built-in scenario, from its real records: its first event's minute, then the page
    (the web tests above play two of them through the console's clock)."""
    sim = Simulation(scenario, seed=3)
    start = sim.plan.first_event(sim.length)
    assert start is not None and incident_kind(sim.plan) != ""
    reasons = {}
    while not sim.done and len(reasons) < 2 and sim.minute <= start + 40:
        record = sim.step()
        reason = pause_reason(sim.plan, record)
        if reason is not None:
            reasons[reason] = record.minute
    assert reasons.get("incident", reasons.get("page")) == start  # the page in the incident's minute is one stop
    if "page" in reasons:
        assert any(e.code == "page_fired" for e in sim.timeline[reasons["page"]].events)


def test_play_again_keeps_the_difficulty_engine_and_speed(client: TestClient) -> None:
    page = client.get("/play?scenario=surge&seed=5&difficulty=hard&engine=request&speed=8").text
    assert '<option value="hard" data-max-speed="16" selected>' in page
    assert '<option value="request" selected>' in page and '<option value="8" selected>' in page
    # the speed list offers what the difficulty allows: guided's 4× and faster are disabled (start.js follows)
    guided = client.get("/play?scenario=surge&seed=5").text
    assert '<option value="4" disabled>' in guided and '<option value="2" selected>' in guided
    refused = client.get("/play?scenario=surge&seed=5&difficulty=guided&speed=16")
    assert refused.status_code == 422 and "speed: the guided difficulty plays at most 2×" in refused.text
    assert client.get("/play?scenario=surge&seed=5&engine=warp").status_code == 422


def test_an_imported_run_keeps_its_difficulty_and_is_marked(client: TestClient) -> None:
    run = Simulation("bad-deploy", seed=3, minutes=20)
    run.run()
    data = json.loads(run.run_file().model_dump_json())
    data["difficulty"] = "hard"
    response = client.post("/api/runs/import", files={"file": ("r.json", json.dumps(data), "application/json")})
    assert response.status_code == 201, response.text
    run_id = response.json()["id"]
    assert client.get(f"/api/runs/{run_id}/runfile").json()["difficulty"] == "hard"
    assert ">hard<" in client.get(f"/runs/{run_id}/debrief").text.replace('id="difficulty">', ">")
    listed = client.get("/runs").text
    assert "imported" in listed
    data["difficulty"] = "easy"
    bad = client.post("/api/runs/import", files={"file": ("r.json", json.dumps(data), "application/json")})
    assert (
        bad.status_code == 422
        and "difficulty" in bad.json()["error"]
        and "'guided', 'normal' or 'hard'" in bad.json()["error"]
    )


def test_end_a_run_early_and_read_its_debrief(client: TestClient) -> None:
    run_id = new_run(client, paused=True)
    for _ in range(12):
        client.post(f"/api/runs/{run_id}/control", json={"type": "step"})
    state = client.post(f"/api/runs/{run_id}/control", json={"type": "end"}).json()
    assert state["done"] and state["ended"] == "ended" and state["minute"] == 12
    with client.websocket_connect(f"/api/runs/{run_id}/ws") as ws:
        receive_until(ws, lambda m: m["type"] == "snapshot")
    report = client.get(f"/api/runs/{run_id}/debrief").json()
    assert report["minutes"] == 12
    for control in ({"type": "resume"}, {"type": "pause"}, {"type": "speed", "value": 4}):  # one check for all
        refused = client.post(f"/api/runs/{run_id}/control", json=control)
        assert refused.status_code == 422 and refused.json()["error"] == "run: the run is over", control
    assert client.post(f"/api/runs/{run_id}/actions", json={"control": "rollback"}).status_code == 422


def test_abandon_filter_and_delete_runs(db: Path) -> None:
    with console(db) as client:
        kept = new_run(client, paused=True)
        gone = new_run(client, paused=True)
        client.post(f"/api/runs/{gone}/control", json={"type": "step"})
        state = client.post(f"/api/runs/{gone}/control", json={"type": "abandon"}).json()
        assert state["done"] and state["ended"] == "abandoned"
        refused = client.get(f"/api/runs/{gone}/debrief")
        assert refused.status_code == 422 and "not over" in refused.json()["error"]
        run = Simulation("bad-deploy", seed=3, minutes=20)
        run.run()
        file = ("r.json", run.run_file().model_dump_json(), "application/json")
        imported = client.post("/api/runs/import", files={"file": file}).json()["id"]
    with console(db) as client:  # after a restart: still abandoned, still listed as such
        listed = {r["id"]: r for r in client.get("/api/runs").json()}
        assert listed[gone]["status"] == "abandoned" and listed[imported]["imported"]
        assert client.get(f"/api/runs/{gone}").json()["state"]["ended"] == "abandoned"
        shown = {f: client.get(f"/runs?show={f}").text for f in ("live", "abandoned", "imported", "finished")}
        assert f"/runs/{kept}" in shown["live"] and f"/runs/{gone}/delete" not in shown["live"]
        assert f"/runs/{gone}/delete" in shown["abandoned"] and f"/runs/{kept}/delete" not in shown["abandoned"]
        assert f"/runs/{imported}/debrief" in shown["imported"] and f"/runs/{imported}/" not in shown["finished"]
        assert client.get("/runs?show=nonsense").status_code == 422
        deleted = client.post(f"/runs/{gone}/delete", follow_redirects=False)
        assert deleted.status_code == 303
        assert gone not in {r["id"] for r in client.get("/api/runs").json()}
        assert client.get(f"/api/runs/{gone}").status_code == 422
        response = client.request("DELETE", f"/api/runs/{kept}", json={})
        assert response.status_code == 200 and response.json() == {"deleted": kept}
        assert client.request("DELETE", f"/api/runs/{kept}", json={}).status_code == 422


def test_the_engine_is_chosen_on_the_card_and_validated(client: TestClient) -> None:
    from oncallsim.model.engine import ENGINES

    home = client.get("/").text
    for name in ENGINES:  # the choice is filled from the registry of engines
        assert f'<option value="{name}"' in home
    response = client.post(
        "/runs", data={"scenario": "surge", "seed": "2", "speed": "2", "engine": "request"}, follow_redirects=False
    )
    run_id = response.headers["location"].rsplit("/", 1)[1]
    assert client.get(f"/api/runs/{run_id}/runfile").json()["engine"] == "request"
    bad = client.post("/api/runs", json={"scenario": "surge", "engine": "quantum"})
    allowed = ", ".join(ENGINES)
    assert bad.status_code == 422 and bad.json() == {
        "error": f"engine: must be one of {allowed}, got 'quantum'",
        "field": "engine",
    }
    page = client.post("/runs", data={"scenario": "surge", "seed": "2", "engine": "quantum"})
    assert page.status_code == 422 and "engine: must be one of" in page.text
    assert client.get(f"/api/runs/{new_run(client, minutes=3)}/runfile").json()["engine"] == "minute"


def test_a_scenario_file_may_name_its_engine(client: TestClient) -> None:
    toml = 'id = "mine"\nversion = 1\ntitle = "t"\nsummary = "s"\nbriefing = "b"\nstart = "10:00"\nminutes = 5\n'
    made = client.post("/api/runs", json={"scenario": "mine", "scenario_toml": toml + 'engine = "request"\n'})
    assert made.status_code == 201, made.text
    assert client.get(f"/api/runs/{made.json()['id']}/runfile").json()["engine"] == "request"
    bad = client.post("/api/runs", json={"scenario": "mine", "scenario_toml": toml + 'engine = "quantum"\n'})
    assert bad.status_code == 422 and "engine" in bad.json()["error"] and "minute" in bad.json()["error"]


def test_the_debrief_page_offers_the_postmortem_and_the_offline_report(client: TestClient) -> None:
    run_id = new_run(client, minutes=45, paused=True)
    for _ in range(12):  # 09:12: the bad build is rolling out, the errors still climbing
        client.post(f"/api/runs/{run_id}/control", json={"type": "step"})
    client.post(f"/api/runs/{run_id}/actions", json={"control": "rollback"})
    client.post(f"/api/runs/{run_id}/control", json={"type": "resume"})
    with client.websocket_connect(f"/api/runs/{run_id}/ws") as ws:
        receive_until(ws, lambda m: m["type"] == "finished")
    page = client.get(f"/runs/{run_id}/debrief").text
    assert 'id="incident-timeline"' in page and "you: Roll back" in page and "objectives met" in page
    assert "<td>Roll back</td>" in page  # a button's decision: its label alone, no dangling value
    # the rollback's effect against the same run without it (not before/after in time: the bad build was still
    # rolling out, so the errors kept climbing for the five minutes the rollback takes)
    assert "first with it (your run), then without it" in page
    report = client.get(f"/api/runs/{run_id}/debrief").json()
    (rollback,) = report["decisions"]
    assert rollback["after"]["error_rate"] < rollback["without"]["error_rate"]
    assert rollback["after"]["error_rate"] > rollback["before"]["error_rate"]  # what before → after read as harm
    markdown = client.get(f"/runs/{run_id}/report.md")
    assert markdown.headers["content-type"].startswith("text/markdown")
    assert "attachment" in markdown.headers["content-disposition"] and "# Postmortem — Bad deploy" in markdown.text
    offline = client.get(f"/runs/{run_id}/report.html")
    assert "attachment" in offline.headers["content-disposition"]
    assert 'id="debrief-chart"' in offline.text and "Plotly" in offline.text and "<script src=" not in offline.text
    unfinished = new_run(client, paused=True)
    assert client.get(f"/runs/{unfinished}/report.md").status_code == 409


def test_leaderboard_per_scenario_and_seed_and_the_daily_seed(client: TestClient) -> None:
    from datetime import date

    from oncallsim.web.pages import daily_seed

    assert daily_seed(date(2026, 11, 30)) == daily_seed(date(2026, 11, 30)) != daily_seed(date(2026, 12, 1))
    home = client.get("/").text
    assert f"Today&#39;s seed, the same for everyone: {daily_seed()}." in home
    assert f"/leaderboard?scenario=bad-deploy&amp;seed={daily_seed()}" in home
    ids = {}
    for player, rollback_at in (("ada", 20), (None, None)):
        run_id = new_run(client, minutes=40, paused=True, seed=5, **({"player": player} if player else {}))
        for minute in range(40):
            if minute == rollback_at:
                client.post(f"/api/runs/{run_id}/actions", json={"control": "rollback"})
            client.post(f"/api/runs/{run_id}/control", json={"type": "step"})
        ids[player] = run_id
        client.get(f"/runs/{run_id}/debrief")  # waits for the debrief
    new_run(client, minutes=40, seed=6, player="bob")  # another seed: not on this board
    page = client.get("/leaderboard?scenario=bad-deploy&seed=5").text
    board = page[page.index('id="leaderboard"') :]
    assert board.index("ada") < board.index("anonymous") and "bob" not in board
    assert client.get("/leaderboard?scenario=bad-deploy&seed=x").status_code == 422
    bad = client.post("/api/runs", json={"scenario": "surge", "player": "<script>"})
    assert bad.status_code == 422 and bad.json()["field"] == "player"


def test_what_ifs_are_one_click_from_the_debrief(client: TestClient) -> None:
    run_id = new_run(client, minutes=45, paused=True)
    for minute in range(45):
        if minute == 35:
            client.post(f"/api/runs/{run_id}/actions", json={"control": "rollback"})
        client.post(f"/api/runs/{run_id}/control", json={"type": "step"})
    page = client.get(f"/runs/{run_id}/debrief").text
    assert f"/runs/{run_id}/whatif?kind=rollback_at_page" in page
    assert f"/runs/{run_id}/whatif?kind=earlier&amp;index=0&amp;minutes=5" in page
    answer = client.get(f"/runs/{run_id}/whatif?kind=rollback_at_page")
    assert answer.status_code == 200 and 'id="what-if-table"' in answer.text
    assert "You had rolled back the minute after the page fired" in answer.text
    assert client.get(f"/runs/{run_id}/whatif?kind=without&index=7").status_code == 422
    assert client.get(f"/runs/{run_id}/whatif?kind=nope").status_code == 422


def test_sliders_move_in_round_steps_with_their_units(client: TestClient) -> None:
    """The backoff's sliders start at the first multiple of their step (a minimum of 1 ms once offered 101 and
    20,001), and the retry budget, a share, speaks in % in its help and on its slider."""
    import re

    response = client.post(
        "/runs",
        data={"scenario": "retry-storm", "seed": "2", "speed": "2", "engine": "request"},
        follow_redirects=False,
    )
    page = client.get(response.headers["location"] + "?lang=en").text
    for name, low, step in (("retry_base_ms", 10, 10), ("retry_cap_ms", 100, 100)):
        tag = re.search(rf'<input id="c-{name}"[^>]*>', page)
        assert tag is not None, name
        assert f'min="{low}"' in tag.group() and f'step="{step}"' in tag.group() and 'data-unit="ms"' in tag.group()
    budget = re.search(r'<input id="c-retry_budget"[^>]*>', page)
    assert budget is not None and 'data-kind="fraction"' in budget.group() and 'max="100"' in budget.group()
    help_text = re.search(r'<p class="help" id="h-retry_budget">([^<]*)', page)
    assert help_text is not None and "10 %" in help_text.group(1) and "0.1" not in help_text.group(1)


def test_a_scenario_file_of_ones_own_plays_from_the_home_page(client: TestClient) -> None:
    """The home page takes a scenario file (its content, a multipart upload): a chain written as docs/graphs.md says
    opens paused on its briefing, as a card's scenario; a file that is not one is refused on a page naming the
    field, and one too large before it is read."""
    graphs = Path(__file__).resolve().parent.parent / "oncallsim" / "scenarios" / "data" / "graphs"
    text = (graphs / "cascade.toml").read_text().replace('id = "cascade"', 'id = "my-cascade"')
    home = client.get("/").text
    assert 'action="/runs/scenario-file"' in home and "Play a scenario file" in home
    assert '<option value="" selected>the file&#39;s own' in home  # a chain's file is not sent to the minute engine
    response = client.post(
        "/runs/scenario-file",
        files={"file": ("my.toml", text.encode(), "text/plain")},
        data={"difficulty": "normal", "speed": "1"},
        follow_redirects=False,
    )
    assert response.status_code == 303, response.text
    run_id = response.headers["location"].rsplit("/", 1)[1]
    state = client.get(f"/api/runs/{run_id}").json()["state"]
    assert state["paused"] and state["difficulty"] == "normal" and state["services"]["recs"]["instances"] == 40
    assert 'id="briefing"' in client.get(f"/runs/{run_id}").text
    bad = client.post("/runs/scenario-file", files={"file": ("x.toml", b'id = "x"\nversion = 1\nnope = 1\n')})
    assert bad.status_code == 422 and "x.toml: title: Field required" in bad.text
    binary = client.post("/runs/scenario-file", files={"file": ("x.toml", b"\xff\xfe\x00")})
    assert binary.status_code == 422 and "file: must be a scenario file in TOML" in binary.text
    huge = client.post("/runs/scenario-file", files={"file": ("x.toml", b"#" * (64 * 1024 + 1))})
    assert huge.status_code == 413  # the console's cap on a body, before the form is read

"""The web console's HTTP and WebSocket API, in process (Starlette's TestClient runs the app's event loop)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.testclient import WebSocketTestSession

from oncallsim import Simulation
from oncallsim.web.app import create_app

# Starlette's test client says Host: testserver (also on its WebSockets): served by --allow-host, as a proxy's
# name would be. Every request says it comes from the console's own origin (tests/test_security.py: others).
BASE = "http://testserver"


def console(db: Path) -> TestClient:
    return TestClient(create_app(db, allow_hosts=["testserver"]), base_url=BASE, headers={"Origin": BASE})


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "runs.sqlite3"


@pytest.fixture
def client(db: Path) -> Iterator[TestClient]:
    # the console's own origin: the Host allow-list and the form check (tests/test_security.py) accept it
    with console(db) as c:
        yield c


def new_run(client: TestClient, **body: Any) -> str:
    response = client.post("/api/runs", json={"scenario": "bad-deploy", "seed": 7, "speed": 16, **body})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def receive_until(ws: WebSocketTestSession, predicate: Any, limit: int = 5000) -> dict[str, Any]:
    """Read messages until one satisfies ``predicate`` (a condition, never a sleep)."""
    for _ in range(limit):
        message = ws.receive_json()
        if predicate(message):
            return message
    raise AssertionError("condition not reached")


def test_pages_render(client: TestClient) -> None:
    home = client.get("/")
    assert home.status_code == 200
    for title in ("Bad deploy", "Traffic surge", "Cache flush", "Free play", "Start"):
        assert title in home.text
    model = client.get("/model")
    assert model.status_code == 200 and "<math" in model.text and "Erlang C" in model.text
    assert "workers_per_instance" in model.text and "assumption" in model.text
    assert client.get("/runs").status_code == 200
    plotly = client.get("/vendor/plotly.min.js")
    assert plotly.status_code == 200 and len(plotly.content) > 1_000_000


def test_form_start_redirects_to_the_console(client: TestClient) -> None:
    response = client.post("/runs", data={"scenario": "cache-flush", "seed": "3", "speed": "4"}, follow_redirects=False)
    assert response.status_code == 303
    console = client.get(response.headers["location"])
    assert console.status_code == 200 and "Roll back" in console.text and "Warm up cache" in console.text


def test_free_play_form_with_clock_and_overrides(client: TestClient) -> None:
    response = client.post(
        "/runs",
        data={
            "scenario": "free-play",
            "seed": "1",
            "speed": "1",
            "clock": "12:00",
            "param.boot_delay_min": "5",
            "param.hot_objects": "",
        },
        follow_redirects=False,
    )
    assert response.status_code == 303
    run_id = response.headers["location"].rsplit("/", 1)[1]
    snap = client.get(f"/api/runs/{run_id}").json()
    assert snap["run"]["start"] == "12:00"


def test_bad_form_input_shows_an_error_and_stores_nothing(client: TestClient) -> None:
    response = client.post("/runs", data={"scenario": "free-play", "seed": "1", "param.workers_per_instance": "0"})
    assert response.status_code == 422 and "workers_per_instance" in response.text and "out of range" in response.text
    assert client.get("/api/runs").json() == []


def test_api_validation_errors(client: TestClient) -> None:
    bad = client.post("/api/runs", json={"scenario": "nope"})
    assert bad.status_code == 422 and "unknown scenario" in bad.json()["error"]
    bad = client.post("/api/runs", json={"scenario": "surge", "speed": 3})
    assert bad.status_code == 422 and bad.json()["field"] == "speed"
    bad = client.post("/api/runs", json={"scenario": "surge", "seed": -1})
    assert bad.status_code == 422 and "seed" in bad.json()["field"]


def test_act_pause_step_over_the_socket(client: TestClient) -> None:
    run_id = new_run(client, paused=True)
    with client.websocket_connect(f"/api/runs/{run_id}/ws") as ws:
        snap = ws.receive_json()
        assert snap["type"] == "snapshot" and snap["records"] == [] and snap["state"]["paused"]
        ws.send_json({"type": "action", "control": "floor", "value": 14})
        ack = receive_until(ws, lambda m: m["type"] == "ack")
        assert ack["action"] == {"minute": 0, "control": "floor", "value": 14}
        ws.send_json({"type": "step"})
        minute = receive_until(ws, lambda m: m["type"] == "minute")
        assert minute["record"]["floor"] == 14 and minute["record"]["booting"] == 4
        assert minute["state"]["minute"] == 1 and minute["state"]["paused"]
        ws.send_json({"type": "speed", "value": 8})
        state = receive_until(ws, lambda m: m["type"] == "state")
        assert state["speed"] == 8


def test_invalid_actions_get_an_error_and_change_nothing(client: TestClient, db: Path) -> None:
    run_id = new_run(client, paused=True)
    with client.websocket_connect(f"/api/runs/{run_id}/ws") as ws:
        ws.receive_json()
        for message, needle in [
            ({"type": "action", "control": "floor", "value": 41}, "floor: 41 is out of range"),
            ({"type": "action", "control": "ttl_s", "value": "long"}, "message"),
            ({"type": "action", "control": "warp"}, "unknown control"),
            ({"type": "speed", "value": 3}, "speed: must be one of 1, 2, 4, 8, 16"),
            ({"type": "dance"}, "message"),
        ]:
            ws.send_json(message)
            error = receive_until(ws, lambda m: m["type"] == "error")
            assert needle in error["message"]
        ws.send_text("not json")
        assert receive_until(ws, lambda m: m["type"] == "error")["field"] == "message"
    snap = client.get(f"/api/runs/{run_id}").json()
    assert snap["actions"] == [] and snap["state"]["controls"]["floor"] == 10 and snap["state"]["speed"] == 16


def test_http_action_endpoint_validates_too(client: TestClient) -> None:
    run_id = new_run(client, paused=True)
    assert client.post(f"/api/runs/{run_id}/actions", json={"control": "shed_share", "value": 2}).status_code == 422
    ok = client.post(f"/api/runs/{run_id}/actions", json={"control": "shed_share", "value": 0.5})
    assert ok.status_code == 200 and ok.json()["accepted"]["value"] == 0.5


def test_a_live_run_plays_to_its_debrief(client: TestClient) -> None:
    run_id = new_run(client)
    with client.websocket_connect(f"/api/runs/{run_id}/ws") as ws:
        ws.receive_json()
        page = receive_until(ws, lambda m: m["type"] == "minute" and m["record"]["page_firing"])
        ws.send_json({"type": "action", "control": "rollback"})
        pressed = receive_until(ws, lambda m: m["type"] == "ack")["action"]["minute"]
        ready = receive_until(
            ws,
            lambda m: (
                m["type"] == "minute"
                and m["record"]["bad_build_share"] == 0.0
                and m["record"]["minute"] > page["record"]["minute"]
            ),
        )
        assert ready["record"]["minute"] == pressed + 5
        done = receive_until(ws, lambda m: m["type"] == "finished")
    report = client.get(f"/api/runs/{run_id}/debrief").json()
    assert report["passed"] is True and set(report["counterfactuals"]) == {"hands-off", "textbook"}
    page_html = client.get(done["debrief_url"])
    assert page_html.status_code == 200 and "Score card" in page_html.text and "hands-off" in page_html.text
    listing = client.get("/api/runs").json()
    assert listing[0]["id"] == run_id and listing[0]["status"] == "finished" and listing[0]["passed"] is True
    assert "all objectives met" in client.get("/runs").text


def test_reconnect_gets_the_run_back_where_it_is(client: TestClient) -> None:
    run_id = new_run(client, paused=True)
    with client.websocket_connect(f"/api/runs/{run_id}/ws") as ws:
        ws.receive_json()
        ws.send_json({"type": "action", "control": "ttl_s", "value": 120})
        receive_until(ws, lambda m: m["type"] == "ack")
        for _ in range(3):
            ws.send_json({"type": "step"})
            receive_until(ws, lambda m: m["type"] == "minute")
    with client.websocket_connect(f"/api/runs/{run_id}/ws") as ws:
        snap = ws.receive_json()
        assert [r["minute"] for r in snap["records"]] == [0, 1, 2]
        assert snap["records"][0]["ttl_s"] == 120.0 and snap["state"]["minute"] == 3


def test_restart_resumes_from_the_log(db: Path) -> None:
    with console(db) as first:
        run_id = new_run(first, scenario="cache-flush", seed=5, paused=True)
        with first.websocket_connect(f"/api/runs/{run_id}/ws") as ws:
            ws.receive_json()
            for minute in range(33):
                if minute == 31:
                    ws.send_json({"type": "action", "control": "recommendations", "value": False})
                    receive_until(ws, lambda m: m["type"] == "ack")
                ws.send_json({"type": "step"})
                receive_until(ws, lambda m: m["type"] == "minute")
        before = first.get(f"/api/runs/{run_id}").json()
    with console(db) as second:  # a fresh app on the same database file
        after = second.get(f"/api/runs/{run_id}").json()
    assert after["records"] == before["records"] and len(after["records"]) == 33
    expected = Simulation("cache-flush", seed=5)
    expected.run(until=33, actions=[])  # the same run, replayed by hand, differs only by the logged action
    assert after["records"][31]["recommendations"] is False and expected.timeline[31].recommendations is True


def test_a_paused_run_stays_paused_across_a_restart(db: Path) -> None:
    with console(db) as first:
        held = new_run(first, paused=True)
        running = new_run(first, scenario="surge")
    with console(db) as second:
        with second.websocket_connect(f"/api/runs/{held}/ws") as ws:
            assert ws.receive_json()["state"]["paused"] is True
        with second.websocket_connect(f"/api/runs/{running}/ws") as ws:
            assert ws.receive_json()["state"]["paused"] is False  # nobody was watching: it resumes for a viewer


def test_an_action_logged_before_a_restart_is_applied_after_it(db: Path) -> None:
    with console(db) as first:
        run_id = new_run(first, paused=True)
        with first.websocket_connect(f"/api/runs/{run_id}/ws") as ws:
            ws.receive_json()
            for _ in range(4):
                ws.send_json({"type": "step"})
                receive_until(ws, lambda m: m["type"] == "minute")
            ws.send_json({"type": "action", "control": "floor", "value": 17})
            receive_until(ws, lambda m: m["type"] == "ack")
    with console(db) as second:
        snap = second.get(f"/api/runs/{run_id}").json()
        assert len(snap["records"]) == 4 and snap["state"]["pending"] == [
            {"minute": 4, "control": "floor", "value": 17}
        ]
        second.post(f"/api/runs/{run_id}/control", json={"type": "pause"})
        state = second.post(f"/api/runs/{run_id}/control", json={"type": "step"}).json()
        assert state["minute"] == 5 and state["controls"]["floor"] == 17


def test_run_file_download_and_upload_replay(client: TestClient) -> None:
    run_id = new_run(client, paused=True)
    client.post(f"/api/runs/{run_id}/actions", json={"control": "rollback"})
    with client.websocket_connect(f"/api/runs/{run_id}/ws") as ws:
        ws.receive_json()
        ws.send_json({"type": "step"})
        receive_until(ws, lambda m: m["type"] == "minute")
    download = client.get(f"/api/runs/{run_id}/runfile")
    assert "attachment" in download.headers["content-disposition"]
    run = download.json()
    assert run["actions"] == [{"minute": 0, "control": "rollback"}] and run["played"] == 1
    run["played"] = None  # replay the whole run
    upload = client.post(
        "/runs/import", files={"file": ("run.json", json.dumps(run), "application/json")}, follow_redirects=False
    )
    assert upload.status_code == 303
    page = client.get(upload.headers["location"])
    assert page.status_code == 200 and "Debrief" in page.text
    bad = client.post("/runs/import", files={"file": ("x.json", '{"format": 1}', "application/json")})
    assert bad.status_code == 422 and "x.json" in bad.text


def test_share_link_page(client: TestClient) -> None:
    page = client.get("/play?scenario=surge&seed=42")
    assert page.status_code == 200 and 'value="42"' in page.text and "Traffic surge" in page.text
    assert client.get("/play?scenario=nope&seed=1").status_code == 404
    # a link cut short or edited by hand: the error page with a sentence, not the parser's JSON
    for link in ("/play?scenario=surge&seed=abc", "/play?scenario=surge", "/play?scenario=surge&seed=-1"):
        page = client.get(link)
        assert page.status_code == 422 and page.headers["content-type"].startswith("text/html"), link
        assert "seed: a share link needs a seed, a whole number from 0 to 4294967295" in page.text
    assert "known: free-play, bad-deploy" in client.get("/play?seed=1").text


def test_every_state_is_numbered_so_the_newest_wins(client: TestClient) -> None:
    run_id = new_run(client, paused=True)
    with client.websocket_connect(f"/api/runs/{run_id}/ws") as ws:
        seqs = [ws.receive_json()["state"]["seq"]]
        for message in ({"type": "step"}, {"type": "speed", "value": 2}, {"type": "step"}):
            ws.send_json(message)
            reply = receive_until(ws, lambda m: m["type"] in ("state", "minute"))
            seqs.append((reply.get("state") or reply)["seq"])
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)


def test_the_debrief_names_decisions_by_label_and_unit(client: TestClient) -> None:
    run_id = new_run(client, scenario="cache-flush", seed=3, minutes=20, paused=True)
    client.post(f"/api/runs/{run_id}/actions", json={"control": "shed_share", "value": 0.3})
    client.post(f"/api/runs/{run_id}/actions", json={"control": "recommendations", "value": False})
    client.post(f"/api/runs/{run_id}/control", json={"type": "resume"})
    with client.websocket_connect(f"/api/runs/{run_id}/ws") as ws:
        receive_until(ws, lambda m: m["type"] == "finished")
    page = client.get(f"/runs/{run_id}/debrief").text
    assert "Load shedding: 30 %, Recommendations feature: off" in page
    # the score, its parts, and the same score in the past runs
    report = client.get(f"/api/runs/{run_id}/debrief").json()
    assert f'<span id="score">{report["score"]}</span> / 100' in page and "users turned away (shed)" in page
    assert [p["name"] for p in report["score_parts"]] == ["errors", "turned_away", "stale", "slow", "money"]
    assert f'<td class="num">{report["score"]}</td>' in client.get("/runs").text
    decisions = page[page.index('id="decisions"') :]
    assert "shed_share" not in decisions[: decisions.index("</table>")]


def test_actions_are_rate_limited_per_run(client: TestClient) -> None:
    from oncallsim.web.live import ACTIONS_PER_MINUTE

    run_id = new_run(client, paused=True)
    for i in range(ACTIONS_PER_MINUTE):
        assert (
            client.post(f"/api/runs/{run_id}/actions", json={"control": "floor", "value": 1 + i % 40}).status_code
            == 200
        )
    refused = client.post(f"/api/runs/{run_id}/actions", json={"control": "floor", "value": 5})
    assert (
        refused.status_code == 422 and refused.json()["field"] == "action" and "per minute" in refused.json()["error"]
    )
    assert len(client.get(f"/api/runs/{run_id}").json()["state"]["pending"]) == ACTIONS_PER_MINUTE


def test_a_flood_of_socket_messages_is_cut_and_the_socket_stays_open(client: TestClient) -> None:
    from oncallsim.web.api import MESSAGES_PER_SECOND

    run_id = new_run(client, paused=True)
    with client.websocket_connect(f"/api/runs/{run_id}/ws") as ws:
        ws.receive_json()
        for _ in range(MESSAGES_PER_SECOND * 4):
            ws.send_json({"type": "speed", "value": 8})
        flood = receive_until(ws, lambda m: m["type"] == "error")
        assert flood["field"] == "message" and "per second" in flood["message"]
        ws.send_bytes(b"\x00\x01")  # still open (an error answers, once the window has passed or not)
        ws.send_text("{")
    state = client.get(f"/api/runs/{run_id}").json()["state"]
    assert state["speed"] == 8


def test_the_debrief_charts_are_computed_once_and_kept(client: TestClient, db: Path) -> None:
    import sqlite3

    run_id = new_run(client, minutes=20)
    with client.websocket_connect(f"/api/runs/{run_id}/ws") as ws:
        receive_until(ws, lambda m: m["type"] == "finished")
    with sqlite3.connect(db) as con:
        stored = con.execute("SELECT debrief_figure FROM runs WHERE id = ?", (run_id,)).fetchone()[0]
    assert stored and "hands-off" in stored
    page = client.get(f"/runs/{run_id}/debrief")
    assert page.status_code == 200 and stored[:200] in page.text


def test_a_viewer_that_does_not_read_is_dropped_not_buffered(tmp_path: Path) -> None:
    import asyncio

    from oncallsim.store import RunStore
    from oncallsim.web.live import MAX_BACKLOG, LiveRun

    async def scenario() -> None:
        store = RunStore(tmp_path / "runs.sqlite3")
        live = LiveRun("x", Simulation("surge", seed=1), store, 16, paused=True)
        queue = live.subscribe()
        for _ in range(MAX_BACKLOG + 10):
            live.broadcast({"type": "state"})
        assert queue not in live.subscribers and queue.qsize() == MAX_BACKLOG + 1
        items = [queue.get_nowait() for _ in range(queue.qsize())]
        assert items[-1] is None  # the sender closes the socket (1013): the browser reconnects for a snapshot
        store.close()

    asyncio.run(scenario())


def test_console_controls_come_from_the_registry_with_the_run_s_constants(client: TestClient) -> None:
    from oncallsim.model import CONTROL_SPECS

    response = client.post(
        "/runs",
        data={"scenario": "free-play", "seed": "1", "speed": "1", "param.warmup_minutes": "9"},
        follow_redirects=False,
    )
    page = client.get(response.headers["location"]).text
    for name, spec in CONTROL_SPECS.items():
        assert f'id="c-{name}"' in page and f'id="h-{name}"' in page, name
        if spec.kind in ("int", "fraction", "seconds"):
            assert f'data-kind="{spec.kind}"' in page
    assert "⟪" not in page
    assert "Loads hot keys for 9 minutes" in page  # the help says what this run's --set made of the constant
    assert 'id="c-rollback" data-button="rollback" data-label="Roll back" class="danger"' in page


def test_records_on_the_wire_carry_their_axis_label(client: TestClient) -> None:
    run_id = new_run(client, scenario="free-play", seed=1, minutes=2000)
    with client.websocket_connect(f"/api/runs/{run_id}/ws") as ws:
        snapshot = receive_until(ws, lambda m: m["type"] == "snapshot")
        ws.send_json({"type": "pause"})
        ws.send_json({"type": "step"})
        minute = receive_until(ws, lambda m: m["type"] == "minute")
    assert minute["record"]["label"].startswith("d1 ") and snapshot["run"]["start"] == minute["record"]["clock"]


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


def test_normal_slows_to_1x_on_the_page_and_hard_does_not(client: TestClient) -> None:
    for difficulty, speed_after in (("normal", 1), ("hard", 16)):
        run_id = new_run(client, difficulty=difficulty, minutes=40)
        with client.websocket_connect(f"/api/runs/{run_id}/ws") as ws:
            paged = receive_until(
                ws, lambda m: m["type"] == "minute" and any(e["code"] == "page_fired" for e in m["record"]["events"])
            )
            assert paged["state"]["speed"] == speed_after and not paged["state"]["paused"], difficulty
            ws.send_json({"type": "pause"})


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
    assert client.post(f"/api/runs/{run_id}/control", json={"type": "resume"}).status_code == 422
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
    run_id = new_run(client, minutes=35, paused=True)
    for _ in range(30):
        client.post(f"/api/runs/{run_id}/control", json={"type": "step"})
    client.post(f"/api/runs/{run_id}/actions", json={"control": "rollback"})
    client.post(f"/api/runs/{run_id}/control", json={"type": "resume"})
    with client.websocket_connect(f"/api/runs/{run_id}/ws") as ws:
        receive_until(ws, lambda m: m["type"] == "finished")
    page = client.get(f"/runs/{run_id}/debrief").text
    assert 'id="incident-timeline"' in page and "you: Roll back" in page and "objectives met" in page
    assert "<td>Roll back</td>" in page  # a button's decision: its label alone, no dangling value
    assert "Before: the mean over the 5 minutes before the decision." in page
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

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
            ({"type": "speed", "value": 3}, "speed: must be one of 0, 1, 2, 4, 8, 16"),
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


def test_a_run_nobody_watches_is_held_until_the_api_starts_it(client: TestClient) -> None:
    """docs/web.md, POST /api/runs: a run created without ``paused`` but with no viewer waits at minute 0 (held,
    not lost); the API alone drives it: ``step`` plays a minute, ``resume`` starts its clock with nobody
    watching."""
    run_id = new_run(client, scenario="surge")
    state = client.get(f"/api/runs/{run_id}").json()["state"]
    assert state["paused"] is True and state["minute"] == 0
    stepped = client.post(f"/api/runs/{run_id}/control", json={"type": "step"})
    assert stepped.status_code == 200, stepped.text
    assert client.get(f"/api/runs/{run_id}").json()["state"]["minute"] == 1
    resumed = client.post(f"/api/runs/{run_id}/control", json={"type": "resume"}).json()
    assert resumed["paused"] is False


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
    assert "known: tutorial, free-play, bad-deploy" in client.get("/play?seed=1").text


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
    assert "Load shedding: 30%, Recommendations feature: off" in page
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
    from oncallsim.web.sockets import MESSAGES_PER_SECOND

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
        if spec.kind == "instance":  # actions on one instance live on the fleet view's tiles
            continue
        shown = f'id="c-{name}"' in page and f'id="h-{name}"' in page
        assert shown is ("minute" in spec.engines), name  # a minute-engine run shows the minute engine's controls
        if shown and spec.kind in ("int", "fraction", "seconds"):
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


def test_one_run_s_failure_never_stops_the_clock_of_the_others(tmp_path: Path) -> None:
    """A run whose minute raises (a bug, an action its state cannot take) is paused and told why; the ticker of
    its speed and every other run on it go on."""
    import asyncio

    from oncallsim.store import RunStore
    from oncallsim.web.clock import Clock
    from oncallsim.web.live import LiveRun

    async def scenario() -> None:
        store = RunStore(tmp_path / "runs.sqlite3")
        clock = Clock(store)
        runs = {}
        for name in ("good", "bad"):
            run_id = await store.write(store.create_run, Simulation("surge", seed=1).run_file(), 16)
            runs[name] = LiveRun(run_id, Simulation("surge", seed=1), store, 16, paused=False, clock=clock)
        bad, good = runs["bad"], runs["good"]

        def broken(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("a bug in one run")

        bad.sim.step = broken  # type: ignore[method-assign]
        told, seen = bad.subscribe(), good.subscribe()
        for live in runs.values():
            live.start()
        error = None
        while error is None:  # the bad run's viewer is told, once
            message = json.loads(await asyncio.wait_for(told.get(), 30))  # type: ignore[arg-type]
            error = message if message["type"] == "error" else None
        assert "stopped at 08:00" in error["message"] and "paused" in error["message"]
        assert bad.paused and bad.sim.minute == 0 and "clock-16x" in {t.get_name() for t in clock.tickers.values()}
        minute = good.sim.minute
        while good.sim.minute < minute + 3:  # the good run's minutes keep coming on the same ticker
            message = json.loads(await asyncio.wait_for(seen.get(), 30))  # type: ignore[arg-type]
        assert message["type"] == "minute" and not good.paused
        await clock.stop()
        store.close()

    asyncio.run(scenario())


def test_a_bad_action_in_an_older_log_is_skipped_on_restore(db: Path, caplog: pytest.LogCaptureFixture) -> None:
    from oncallsim.simulation import Action
    from oncallsim.store import RunStore

    with console(db) as first:
        run_id = new_run(first, paused=True)
    store = RunStore(db)  # what an older server wrote unchecked: a request-engine control on a minute run
    store.append_actions(run_id, [Action(0, "queue_limit", 10), Action(0, "floor", 17)])
    store.close()
    with console(db) as second, caplog.at_level("WARNING", logger="oncallsim.web"):
        snap = second.get(f"/api/runs/{run_id}").json()
        assert snap["state"]["pending"] == [{"minute": 0, "control": "floor", "value": 17}]
        state = second.post(f"/api/runs/{run_id}/control", json={"type": "step"}).json()
        assert state["minute"] == 1 and state["controls"]["floor"] == 17
    assert any("skipped on restore: queue_limit at minute 0: queue_limit: belongs to the request" in r.getMessage()
               for r in caplog.records)  # fmt: skip


def test_an_action_checked_before_a_minute_passed_is_checked_again_against_the_next(tmp_path: Path) -> None:
    """Two ejects of one instance, the second waiting for the write of the first while the clock steps the
    minute: it is refused (the instance is out of rotation now), never queued for the clock to raise on."""
    import asyncio

    from oncallsim.model import InvalidInput
    from oncallsim.store import RunStore
    from oncallsim.web.live import LiveRun

    async def scenario() -> None:
        store = RunStore(tmp_path / "runs.sqlite3")
        sim = Simulation("free-play", seed=1, engine="request", minutes=10)
        run_id = await store.write(store.create_run, sim.run_file(), 16)
        live = LiveRun(run_id, sim, store, 16, paused=True)
        await live.act("eject", 3)
        async with live._writing:  # the clock holds the run: the second eject passes its first check and waits
            second = asyncio.create_task(live.act("eject", 3))
            while not live._writing._waiters:
                await asyncio.sleep(0)
            assert live.tick()  # minute 0, instance 3 ejected
        with pytest.raises(InvalidInput, match="already out of rotation"):
            await second
        assert live.pending == [] and live.tick() and live.sim.minute == 2
        store.close()

    asyncio.run(scenario())


def test_the_end_is_said_at_once_and_the_debrief_when_it_is_ready(client: TestClient) -> None:
    run_id = new_run(client, scenario="surge", minutes=3)
    with client.websocket_connect(f"/api/runs/{run_id}/ws") as ws:
        kinds = []
        progress = []
        while not kinds or kinds[-1]["type"] != "finished":
            message = ws.receive_json()
            if message["type"] in ("over", "finished"):
                kinds.append(message)
            elif message["type"] == "debrief_progress":  # after each of the debrief's replays
                assert [m["type"] for m in kinds] == ["over"]
                progress.append((message["done"], message["total"]))
    over, finished = kinds
    assert over["type"] == "over" and over["state"]["done"] is True and over["debrief"] == "computing"
    assert finished["debrief_url"] == f"/runs/{run_id}/debrief"
    assert progress and progress[-1][0] == progress[-1][1]  # every replay done before the debrief is

"""Game-day rooms in process: join with the room's tokens, roles, attribution, injected faults (hidden from the
players, their symptoms not), reconnect, restart with the store reopened, refusals, the exports."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.testclient import WebSocketTestSession
from typer.testing import CliRunner

from oncallsim.cli import app as cli_app
from oncallsim.gameday.faults import build_event, fault_menu
from oncallsim.gameday.postmortem import RoomFile
from oncallsim.model import InvalidInput
from oncallsim.simulation import RunFile, Simulation
from oncallsim.web.app import create_app

BASE = "http://testserver"


def console(db: Path) -> TestClient:
    return TestClient(create_app(db, allow_hosts=["testserver"]), base_url=BASE, headers={"Origin": BASE})


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "runs.sqlite3"


@pytest.fixture
def client(db: Path) -> Iterator[TestClient]:
    with console(db) as c:
        yield c


def new_room(client: TestClient, **body: Any) -> dict[str, Any]:
    response = client.post("/api/gameday/rooms", json={"scenario": "free-play", "seed": 5, "minutes": 90, **body})
    assert response.status_code == 201, response.text
    return dict(response.json())


def key(url: str) -> str:
    return url.split("#key=", 1)[1]


def until(ws: WebSocketTestSession, predicate: Any, limit: int = 2000) -> dict[str, Any]:
    """Read messages until one satisfies ``predicate`` (a condition, never a sleep)."""
    for _ in range(limit):
        message = ws.receive_json()
        if predicate(message):
            return message
    raise AssertionError("condition not reached")


def join(ws: WebSocketTestSession, token: str, name: str | None = None, role: str | None = None) -> dict[str, Any]:
    ws.send_json({"type": "join", "token": token, **({"name": name, "role": role} if name else {})})
    return until(ws, lambda m: m["type"] in ("snapshot", "refused"))


def minute_of(ws: WebSocketTestSession, minute: int) -> dict[str, Any]:
    return until(ws, lambda m: m["type"] == "minute" and m["record"]["minute"] == minute)


def log_of(ws: WebSocketTestSession, kind: str) -> dict[str, Any]:
    return until(ws, lambda m: m["type"] == "log" and m["entry"]["kind"] == kind)["entry"]


def test_fault_menu_comes_from_the_scenario_schema() -> None:
    kinds = {f["kind"]: f for f in fault_menu("minute")}
    assert {"deploy", "flush", "surge"} <= set(kinds)
    surge = {f["name"]: f for f in kinds["surge"]["fields"]}
    assert surge["onset_between"]["type"] == "clocks" and surge["peak"]["ranged"]
    event = build_event("surge", "10:20", {"peak": 3, "rise_min": 5, "decay_min": 10}, "minute")
    assert event["onset_between"] == ["10:20", "10:20"] and event["peak"] == {"low": 3, "high": 3}
    with pytest.raises(InvalidInput, match=r"fault.kind.*must be one of"):
        build_event("meteor", "10:20", {}, "minute")
    with pytest.raises(InvalidInput, match=r"peak multiplier must be >= 1"):
        build_event("surge", "10:20", {"peak": 0.5, "rise_min": 5, "decay_min": 10}, "minute")
    with pytest.raises(InvalidInput, match=r"fault.size.*not a field of flush"):
        build_event("flush", "10:20", {"size": 3}, "minute")


def test_tokens_roles_attribution_and_refusals(client: TestClient) -> None:
    room = new_room(client)
    path = f"/gameday/{room['id']}/ws"
    facilitator, player = key(room["facilitator_url"]), key(room["player_url"])
    assert facilitator != player and len(player) >= 32
    assert client.get(f"/gameday/{room['id']}").status_code == 200
    with client.websocket_connect(path) as ws:  # the room's id is not enough
        refused = join(ws, "not-the-token", "Ann", "operations")
        assert refused["type"] == "refused" and refused["field"] == "token"
    with client.websocket_connect(path) as ws:
        assert join(ws, player, "Ann", "chief")["message"].startswith("role: must be one of commander")
    with (
        client.websocket_connect(path) as fac,
        client.websocket_connect(path) as ann,
        client.websocket_connect(path) as bob,
        client.websocket_connect(path) as obs,
    ):
        snap = join(fac, facilitator)
        assert snap["you"]["role"] == "facilitator" and snap["player_token"] == player and snap["faults"]
        assert join(ann, player, "Ann", "operations")["you"] == {"name": "Ann", "role": "operations"}
        assert "faults" not in join(bob, player, "Bob", "commander") and "player_token" not in bob.receive_json()
        join(obs, player, "Olu", "observer")
        with client.websocket_connect(path) as dup:  # a name is one person's
            assert "taken by the operations" in join(dup, player, "Ann", "observer")["message"]
        ann.send_json({"type": "action", "control": "ttl_s", "value": 120})
        seen = log_of(bob, "action")
        assert (seen["name"], seen["role"], seen["data"]["control"], seen["data"]["value"]) == (
            "Ann",
            "operations",
            "ttl_s",
            120,
        )
        assert log_of(fac, "action")["name"] == "Ann"  # the facilitator sees it as it happens
        obs.send_json({"type": "action", "control": "rollback"})  # an observer cannot act
        error = until(obs, lambda m: m["type"] == "error")
        assert error["field"] == "role" and "observer cannot" in error["message"]
        ann.send_json({"type": "pause"})  # only the facilitator paces
        assert until(ann, lambda m: m["type"] == "error")["field"] == "role"
        ann.send_json({"type": "message", "text": "x" * 281})
        assert "at most 280" in until(ann, lambda m: m["type"] == "error")["message"]
        ann.send_json({"type": "status", "text": "investigating"})  # the communications role's
        assert until(ann, lambda m: m["type"] == "error")["field"] == "role"
        fac.send_json({"type": "inject", "kind": "meteor", "at": ""})  # an unknown fault
        assert "must be one of deploy, flush, surge" in until(fac, lambda m: m["type"] == "error")["message"]
        surge = {"peak": 0.5, "rise_min": 5, "decay_min": 10}  # a fault size out of range
        fac.send_json({"type": "inject", "kind": "surge", "at": "", "values": surge})
        assert "peak multiplier must be >= 1" in until(fac, lambda m: m["type"] == "error")["message"]
        fac.send_json({"type": "inject", "kind": "flush", "at": "08:00"})
        assert "too early" in until(fac, lambda m: m["type"] == "error")["message"]
        bob.send_json({"type": "message", "text": "<b>looking</b> at the cache"})
        said = log_of(ann, "message")
        assert said["data"]["text"] == "<b>looking</b> at the cache" and said["name"] == "Bob"
        # a refusal is for its sender: the room goes on (the facilitator steps a minute, everyone sees it)
        fac.send_json({"type": "step"})
        for ws in (fac, ann, bob, obs):
            record = minute_of(ws, 0)["record"]
            assert record["minute"] == 0


def test_hidden_flush_players_see_symptoms_not_the_fault(client: TestClient, db: Path) -> None:
    room = new_room(client, seed=3)
    path = f"/gameday/{room['id']}/ws"
    facilitator, player = key(room["facilitator_url"]), key(room["player_url"])
    with client.websocket_connect(path) as fac, client.websocket_connect(path) as ann:
        join(fac, facilitator)
        join(ann, player, "Ann", "operations")
        fac.send_json({"type": "inject", "kind": "flush", "at": "08:02", "hidden": True})
        injected = log_of(fac, "inject")
        assert injected["data"]["at_minute"] == 2 and injected["data"]["hidden"] is True
        fac.send_json({"type": "message", "text": "all quiet?"})
        assert log_of(ann, "message")["data"]["text"] == "all quiet?"  # the player got no inject line before it
        for _ in range(6):
            fac.send_json({"type": "step"})
            until(fac, lambda m: m["type"] == "minute")
        codes = [e["code"] for m in range(6) for e in minute_of(ann, m)["record"]["events"]]
        assert "cache_flushed" not in codes
        ann.send_json({"type": "action", "control": "warmup"})
        assert log_of(ann, "action")["data"]["text"] == "Warm up cache"
    with client.websocket_connect(path) as fac2, client.websocket_connect(path) as ann2:
        snap = join(fac2, facilitator)
        assert any("cache_flushed" in [e["code"] for e in r["events"]] for r in snap["records"])
        player_snap = join(ann2, player, "Ann", "operations")  # a reconnect: where the run is
        assert len(player_snap["records"]) == 6 and player_snap["you"]["name"] == "Ann"
        assert not any(e["code"] == "cache_flushed" for r in player_snap["records"] for e in r["events"])
        # the symptom is there: the cache's hit ratio dropped at the flush
        hits = [r["cache_hit"] for r in player_snap["records"]]
        assert hits[2] < hits[1]
        assert [e["kind"] for e in player_snap["log"]].count("inject") == 0
        fac2.send_json({"type": "reveal", "seq": injected["seq"]})
        revealed = until(ann2, lambda m: m["type"] == "snapshot")
        assert any(e["code"] == "cache_flushed" for r in revealed["records"] for e in r["events"])


def test_restart_brings_the_room_back_and_the_run_replays(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite3"
    with console(db) as client:
        room = new_room(client, scenario="bad-deploy", seed=11, minutes=None)
        path = f"/gameday/{room['id']}/ws"
        facilitator, player = key(room["facilitator_url"]), key(room["player_url"])
        with client.websocket_connect(path) as fac, client.websocket_connect(path) as ann:
            join(fac, facilitator)
            join(ann, player, "Ann", "commander")
            fac.send_json({"type": "inject", "kind": "surge", "at": "09:03", "values": {"peak": 2, "rise_min": 3,
                           "decay_min": 15}, "hidden": False})  # fmt: skip
            assert log_of(ann, "inject")["data"]["kind"] == "surge"  # a visible fault reaches the players
            for _ in range(4):
                fac.send_json({"type": "step"})
                until(fac, lambda m: m["type"] == "minute")
            ann.send_json({"type": "action", "control": "floor", "value": 14})
            log_of(fac, "action")
            fac.send_json({"type": "step"})
            minute_of(fac, 4)
            exported = client.post(
                f"/api/gameday/rooms/{room['id']}/export", json={"token": facilitator, "what": "run"}
            )
            assert exported.status_code == 200
            refused = client.post(f"/api/gameday/rooms/{room['id']}/export", json={"token": player, "what": "run"})
            assert refused.status_code == 422 and "over" in refused.json()["error"]
    with console(db) as client:  # the store reopened: the room, its players and its log come back
        path = f"/gameday/{room['id']}/ws"
        with client.websocket_connect(path) as ann:
            snap = join(ann, player, "Ann", "commander")
            assert len(snap["records"]) == 5 and [p["name"] for p in snap["players"]] == ["Ann"]
            assert [e["kind"] for e in snap["log"] if e["kind"] in ("inject", "action")] == ["inject", "action"]
        run = RunFile.model_validate(exported.json())
        replayed = Simulation.replay(run)
        assert [r["error_rate"] for r in snap["records"]] == [r.error_rate for r in replayed.timeline]
        assert [r["requests_per_s"] for r in snap["records"]] == [r.requests_per_s for r in replayed.timeline]
        assert run.actions == [{"minute": 4, "control": "floor", "value": 14}]
        assert any(e["kind"] == "surge" for e in (run.scenario_spec or {})["events"])


def test_close_debrief_postmortem_and_offline_export(client: TestClient, tmp_path: Path) -> None:
    room = new_room(client, scenario="free-play", seed=2, minutes=30)
    path = f"/gameday/{room['id']}/ws"
    facilitator, player = key(room["facilitator_url"]), key(room["player_url"])
    with (
        client.websocket_connect(path) as fac,
        client.websocket_connect(path) as cat,
        client.websocket_connect(path) as ann,
    ):
        join(fac, facilitator)
        join(cat, player, "Cat", "communications")
        join(ann, player, "Ann", "operations")
        fac.send_json({"type": "inject", "kind": "flush", "at": "08:03", "hidden": True})
        log_of(fac, "inject")
        fac.send_json({"type": "note", "text": "watch whether they look at the cache"})
        log_of(fac, "note")
        for _ in range(5):
            fac.send_json({"type": "step"})
            until(fac, lambda m: m["type"] == "minute")
        cat.send_json({"type": "status", "text": "Investigating slow pages | degraded"})
        log_of(ann, "status")
        ann.send_json({"type": "action", "control": "warmup"})
        log_of(cat, "action")
        fac.send_json({"type": "step"})
        minute_of(fac, 5)
        fac.send_json({"type": "close"})
        debrief = until(ann, lambda m: m["type"] == "debrief")["debrief"]
        ann.send_json({"type": "action", "control": "rollback"})
        assert "over" in until(ann, lambda m: m["type"] == "error")["message"]
        for message in ({"type": "pause"}, {"type": "speed", "value": 4}, {"type": "resume"}, {"type": "step"}):
            fac.send_json(message)  # a closed room's clock is still: nothing to pause, speed up or log
            assert "over" in until(fac, lambda m: m["type"] == "error")["message"], message
    kinds = [(r["kind"], r["who"]) for r in debrief["timeline"]]
    assert ("inject", "facilitator") in kinds and ("status", "Cat") in kinds and ("action", "Ann") in kinds
    assert ("note", "facilitator") in kinds
    order = [r["kind"] for r in debrief["timeline"]]
    assert order.index("inject") < order.index("status") < order.index("action")
    # the fault as data beside its English words: the page says it in its reader's language (gameday.js faultText)
    inject = next(r for r in debrief["timeline"] if r["kind"] == "inject")
    assert inject["fault"]["kind"] and inject["fault"]["at"] == "08:03" and inject["args"]["fault"].endswith("08:03")
    assert all(r["fault"] is None for r in debrief["timeline"] if r["kind"] != "inject")
    assert debrief["intervals"]["fault_clock"] == "08:03" and debrief["intervals"]["detect_min"] == 2
    markdown = client.post(f"/api/gameday/rooms/{room['id']}/export", json={"token": player, "what": "markdown"})
    assert markdown.status_code == 200
    text = markdown.text
    for heading in ("## Summary", "## Impact", "## Key intervals", "## Timeline", "## What went well",
                    "## What went wrong", "## Action items"):  # fmt: skip
        assert heading in text
    assert "Investigating slow pages \\| degraded" in text and "Ann (operations): Warm up cache" in text
    assert text.index("hidden from the players: cache flush at 08:03") < text.index("status page (Cat)")
    room_file = client.post(f"/api/gameday/rooms/{room['id']}/export", json={"token": player, "what": "room"})
    assert [e["kind"] for e in room_file.json()["log"]][-1] == "close"  # the refused controls were not logged
    path_file = tmp_path / "room.json"
    path_file.write_text(room_file.text)
    RoomFile.load(path_file)
    out = tmp_path / "postmortem.md"
    result = CliRunner().invoke(cli_app, ["gameday", "export", str(path_file), "--markdown", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text() == text  # offline, the same postmortem
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "oncallsim-room", "id": 1}))
    result = CliRunner().invoke(cli_app, ["gameday", "export", str(bad), "--markdown", str(out)])
    assert result.exit_code != 0 and "Traceback" not in result.output


def test_labels_are_in_the_catalog() -> None:
    """The room's labels are written out in its template (so the catalog script extracts them): none is missing."""
    from babel.messages.pofile import read_po

    from oncallsim.debrief.postmortem import TIMELINE_TEXTS
    from oncallsim.gameday.faults import CHOICE_LABELS, FAULT_LABELS, FIELD_LABELS
    from oncallsim.gameday.postmortem import ROW_TEXTS
    from oncallsim.gameday.roles import ROLE_LABELS

    po = Path(__file__).parent.parent / "oncallsim" / "locales" / "en" / "LC_MESSAGES" / "messages.po"
    with po.open("rb") as fh:
        ids = {m.id for m in read_po(fh) if m.id}
    for table in (ROLE_LABELS, FAULT_LABELS, FIELD_LABELS, CHOICE_LABELS, ROW_TEXTS):
        assert not set(table.values()) - ids, set(table.values()) - ids
    assert not {t for k, t in TIMELINE_TEXTS.items() if k != "scenario"} - ids


def test_request_engine_faults_only_on_request_rooms(client: TestClient) -> None:
    minute_kinds = {f["kind"] for f in fault_menu("minute")}
    request_kinds = {f["kind"] for f in fault_menu("request")}
    assert minute_kinds <= request_kinds
    only = request_kinds - minute_kinds
    if not only:
        pytest.skip("the scenario schema has no request-engine-only kind yet")
    room = new_room(client, engine="minute")
    with client.websocket_connect(f"/gameday/{room['id']}/ws") as fac:
        snap = join(fac, key(room["facilitator_url"]))
        assert not only & {f["kind"] for f in snap["faults"]}
        fac.send_json({"type": "inject", "kind": sorted(only)[0], "at": "08:05"})
        assert "request engine only" in until(fac, lambda m: m["type"] == "error")["message"]


def test_a_hidden_instance_crash_on_the_request_engine_replays(client: TestClient) -> None:
    if "instance" not in {f["kind"] for f in fault_menu("request")}:
        pytest.skip("the scenario schema has no instance fault")
    room = new_room(client, engine="request", minutes=20)
    path = f"/gameday/{room['id']}/ws"
    facilitator, player = key(room["facilitator_url"]), key(room["player_url"])
    with client.websocket_connect(path) as fac, client.websocket_connect(path) as ann:
        snap = join(fac, facilitator)
        assert {"instance", "zone_outage"} <= {f["kind"] for f in snap["faults"]}
        join(ann, player, "Ann", "operations")
        fac.send_json({"type": "inject", "kind": "instance", "at": "08:02", "values": {"what": "crash", "instance": 0}})
        log_of(fac, "inject")
        fac.send_json({"type": "inject", "kind": "instance", "at": "08:03", "values": {"what": "melt"}})
        assert "fault.what: must be one of" in until(fac, lambda m: m["type"] == "error")["message"]
        for _ in range(4):
            fac.send_json({"type": "step"})
        codes = [e["code"] for m in range(4) for e in minute_of(fac, m)["record"]["events"]]
        assert "instance_crashed" in codes
        seen = [e["code"] for m in range(4) for e in minute_of(ann, m)["record"]["events"]]
        assert "instance_crashed" not in seen
        run = client.post(f"/api/gameday/rooms/{room['id']}/export", json={"token": facilitator, "what": "run"})
    replayed = Simulation.replay(RunFile.model_validate(run.json()))
    assert any(e.code == "instance_crashed" for r in replayed.timeline for e in r.events if hasattr(e, "code"))


def test_pages_and_bad_requests(client: TestClient) -> None:
    assert 'href="/gameday"' in client.get("/").text
    page = client.get("/gameday")
    assert page.status_code == 200 and "Create the room" in page.text
    assert client.get("/gameday/0123456789ab").status_code == 404
    bad = client.post("/api/gameday/rooms", json={"scenario": "nope"})
    assert bad.status_code == 422 and "scenario" in bad.json()["error"]
    bad = client.post("/api/gameday/rooms", json={"scenario": "free-play", "speed": 3})
    assert bad.status_code == 422 and bad.json()["field"] == "speed"
    room = new_room(client)
    wrong = client.post(f"/api/gameday/rooms/{room['id']}/export", json={"token": "x" * 30, "what": "room"})
    assert wrong.status_code == 422 and wrong.json()["field"] == "token"
    with client.websocket_connect(f"/gameday/{room['id']}/ws") as ws:
        ws.send_json({"type": "action", "control": "rollback"})  # acting before joining
        assert until(ws, lambda m: m["type"] == "refused")["message"].startswith("message: join first")


def test_a_hidden_database_brownout_from_the_menu(client: TestClient) -> None:
    """A kind the schema gained later is in the menu with no change here: its fields and bounds from the schema."""
    menu = {f["kind"]: f for f in fault_menu("minute")}
    if "brownout" not in menu:
        pytest.skip("the scenario schema has no brownout")
    fields = {f["name"]: f for f in menu["brownout"]["fields"]}
    assert fields["slowdown"]["maximum"] == 20.0 and fields["minutes"]["type"] == "integer"
    room = new_room(client, minutes=30)
    path = f"/gameday/{room['id']}/ws"
    with client.websocket_connect(path) as fac, client.websocket_connect(path) as ann:
        join(fac, key(room["facilitator_url"]))
        join(ann, key(room["player_url"]), "Ann", "operations")
        fac.send_json({"type": "inject", "kind": "brownout", "at": "08:02", "values": {"minutes": 5, "slowdown": 40}})
        assert "slowdown" in until(fac, lambda m: m["type"] == "error")["message"]
        fac.send_json({"type": "inject", "kind": "brownout", "at": "08:02", "values": {"minutes": 5, "slowdown": 4}})
        log_of(fac, "inject")
        for _ in range(4):
            fac.send_json({"type": "step"})
        facilitator_view = [minute_of(fac, m)["record"] for m in range(4)]
        player_view = [minute_of(ann, m)["record"] for m in range(4)]
    assert "brownout_started" in [e["code"] for r in facilitator_view for e in r["events"]]
    assert "brownout_started" not in [e["code"] for r in player_view for e in r["events"]]
    assert player_view[2]["db_utilization"] > 2 * player_view[1]["db_utilization"]  # the symptom


def test_a_player_cannot_freeze_the_rooms(client: TestClient) -> None:
    """A request-engine control sent in a minute-engine room is refused to its sender and never logged; the
    clock of that speed, and every room on it, goes on."""
    one, other = new_room(client, speed=16), new_room(client, speed=16)
    with (
        client.websocket_connect(f"/gameday/{one['id']}/ws") as fac,
        client.websocket_connect(f"/gameday/{one['id']}/ws") as ann,
        client.websocket_connect(f"/gameday/{other['id']}/ws") as fac2,
    ):
        join(fac, key(one["facilitator_url"]))
        join(ann, key(one["player_url"]), "Ann", "operations")
        join(fac2, key(other["facilitator_url"]))
        for ws in (fac, fac2):
            ws.send_json({"type": "resume"})
        minute_of(fac2, 1)
        ann.send_json({"type": "action", "control": "queue_limit", "value": 10})
        error = until(ann, lambda m: m["type"] == "error")
        assert error["field"] == "queue_limit" and "belongs to the request engine" in error["message"]
        ann.send_json({"type": "action", "control": "floor", "value": 14})
        assert log_of(fac, "action")["data"]["control"] == "floor"  # the first log line an action made
        later = until(fac, lambda m: m["type"] == "minute")["record"]["minute"] + 5
        minute_of(fac, later)  # both rooms go on at 16x
        until(fac2, lambda m: m["type"] == "minute" and m["record"]["minute"] >= later)
        fac.send_json({"type": "pause"})
        fac2.send_json({"type": "pause"})
    snap = client.get(f"/gameday/{one['id']}")  # the page still answers
    assert snap.status_code == 200


def test_a_restored_room_waits_for_its_facilitator_and_skips_a_bad_logged_action(
    db: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from oncallsim.store.rooms import RoomStore
    from oncallsim.store.sqlite import RunStore

    with console(db) as client:
        room = new_room(client, speed=4)
        with client.websocket_connect(f"/gameday/{room['id']}/ws") as fac:
            join(fac, key(room["facilitator_url"]))
            fac.send_json({"type": "resume"})  # running when the server went away
            minute_of(fac, 2)
    base = RunStore(db)  # what an older server logged unchecked, then the next player's good action
    rooms = RoomStore(base)
    played = rooms.get_room(room["id"]).played  # type: ignore[union-attr]
    rooms.append_log(room["id"], played, "action", "Ann", "operations", {"control": "queue_limit", "value": 10})
    rooms.append_log(room["id"], played, "action", "Ann", "operations", {"control": "floor", "value": 14})
    base.close()
    with console(db) as client, caplog.at_level("WARNING", logger="oncallsim.web"):
        path = f"/gameday/{room['id']}/ws"
        with client.websocket_connect(path) as ann:
            snap = join(ann, key(room["player_url"]), "Ann", "operations")  # a player's reconnect starts nothing
            state = snap["state"]
            assert state["paused"] is True and state["pause_reason"] == "restored" and state["epoch"]
            assert state["pending"] == [{"minute": played, "control": "floor", "value": 14}]
            with client.websocket_connect(path) as fac:
                join(fac, key(room["facilitator_url"]))
                fac.send_json({"type": "step"})
                record = minute_of(ann, played)["record"]
                assert record["floor"] == 14
                fac.send_json({"type": "resume"})
                resumed = until(ann, lambda m: m["type"] == "state" and not m["paused"])
                assert resumed["pause_reason"] is None
                fac.send_json({"type": "pause"})
    assert any("skipped on restore: queue_limit" in r.getMessage() for r in caplog.records)


def test_chat_refuses_invisible_reordering_and_limits_per_link_not_per_name(client: TestClient) -> None:
    from oncallsim.gameday.room import LINK_MESSAGES_PER_MINUTE, MESSAGES_PER_MINUTE, PLAYERS_PER_LINK

    room = new_room(client)
    path, player = f"/gameday/{room['id']}/ws", key(room["player_url"])
    with client.websocket_connect(path) as ann:
        join(ann, player, "Ann", "operations")
        for bad in ("ok \u202eevil\u202c", "pay\u200bment", "\u2067isolated\u2069", "mark\u200f"):
            ann.send_json({"type": "message", "text": bad})
            error = until(ann, lambda m: m["type"] == "error")
            assert error["field"] == "text" and "invisible direction or zero-width characters (U+" in error["message"]
        ann.send_json({"type": "message", "text": "👩\u200d💻 on it"})  # a joiner in an emoji is text
        assert log_of(ann, "message")["data"]["text"] == "👩\u200d💻 on it"
    # one link, many names: the link's budget is shared, and the link holds at most PLAYERS_PER_LINK players
    sockets = [client.websocket_connect(path) for _ in range(PLAYERS_PER_LINK)]
    try:
        names = [f"P{i}" for i in range(PLAYERS_PER_LINK - 1)]
        for ws, name in zip(sockets, names, strict=False):
            assert join(ws.__enter__(), player, name, "operations")["type"] == "snapshot"
        extra = sockets[-1].__enter__()
        refused = join(extra, player, "One too many", "operations")
        assert refused["type"] == "refused" and f"has its {PLAYERS_PER_LINK} players already" in refused["message"]
        written, refusal = 1, None  # Ann's line above counts for the link
        for i in range(LINK_MESSAGES_PER_MINUTE):
            ws = sockets[i // MESSAGES_PER_MINUTE]
            ws.send_json({"type": "message", "text": f"line {i}"})
            text = f"line {i}"
            reply = until(
                ws, lambda m, t=text: m["type"] == "error" or m.get("entry", {}).get("data", {}).get("text") == t
            )
            if reply["type"] == "error":
                refusal = reply
                break
            written += 1
        assert written == LINK_MESSAGES_PER_MINUTE and refusal is not None, refusal
        assert "messages a minute for a link" in refusal["message"]
    finally:
        for ws in sockets:
            ws.__exit__(None, None, None)


def test_a_room_closed_before_its_debrief_was_written_stays_closed_and_gets_it(db: Path) -> None:
    """The server killed between the close (logged) and the debrief (written when computed): the room comes
    back over, never open again, and its debrief is computed then."""
    from oncallsim.store.rooms import RoomStore
    from oncallsim.store.sqlite import RunStore

    with console(db) as client:
        room = new_room(client, minutes=30)
        with client.websocket_connect(f"/gameday/{room['id']}/ws") as fac:
            join(fac, key(room["facilitator_url"]))
            for minute in range(3):
                fac.send_json({"type": "step"})
                minute_of(fac, minute)
    base = RunStore(db)
    RoomStore(base).append_log(room["id"], 3, "close", "facilitator", "facilitator", {})
    base.close()
    with console(db) as client, client.websocket_connect(f"/gameday/{room['id']}/ws") as ann:
        snap = join(ann, key(room["player_url"]), "Ann", "operations")
        assert snap["state"]["done"] is True and snap["state"]["pause_reason"] is None
        debrief = until(ann, lambda m: m["type"] == "debrief")["debrief"]
        assert debrief["timeline"] is not None


def test_a_seat_that_never_reads_is_closed_not_buffered(client: TestClient) -> None:
    """A stalled tab (a socket nobody reads) holds at most the run's backlog of the room's messages, then is
    closed (a reconnect gets a snapshot); the other seats and the room go on."""
    from oncallsim.gameday.room import Seat

    room_id = new_room(client)["id"]
    room = client.app.state.rooms.rooms[room_id]  # type: ignore[attr-defined]
    stalled = room.subscribe(Seat("Ann", "operations", "player"))
    reader = room.subscribe(Seat("Bob", "operations", "player"))
    for _ in range(room.live.max_backlog + 1):
        room.relay({"type": "players", "players": room.player_list()})
        while not reader.empty():
            reader.get_nowait()
    held = [stalled.get_nowait() for _ in range(stalled.qsize())]
    assert len(held) == room.live.max_backlog + 1 and held[-1] is None  # its socket ends here
    assert stalled not in room.seats and stalled not in room.live.subscribers
    assert reader in room.seats and reader in room.live.subscribers


def test_a_fault_without_a_time_goes_to_the_next_minute_of_a_fresh_room(client: TestClient) -> None:
    """The fault form's "empty = the next minute" on a room nobody has stepped yet: 08:01 (its plan holds minute
    0 already), not 08:00, which was refused as too early; a fault too early or past the run's end is refused in
    the page's language (its times as the run writes them)."""
    room = new_room(client, minutes=30)
    with client.websocket_connect(f"/gameday/{room['id']}/ws?lang=da") as fac:
        join(fac, key(room["facilitator_url"]))
        fac.send_json({"type": "inject", "kind": "flush", "at": ""})
        assert log_of(fac, "inject")["data"]["at"] == "08:01"
        fac.send_json({"type": "inject", "kind": "deploy", "at": "08:00"})
        early = until(fac, lambda m: m["type"] == "error")
        assert early["message"] == "event: is at 08:00, too early: the earliest minute to come is 08:01"
        assert early["localized"] == "Hændelse: er kl. 08:00, for tidligt: det tidligste kommende minut er 08:01"
        fac.send_json({"type": "inject", "kind": "deploy", "at": "08:30"})  # minute 30 of 30: after the end
        late = until(fac, lambda m: m["type"] == "error")
        assert late["localized"] == "Hændelse: er kl. 08:30, efter spillets slutning", late


def test_the_links_read_left_to_right_on_an_arabic_page(client: TestClient) -> None:
    """A URL is written left to right whatever the page's direction: on an Arabic (rtl) page a link's box
    showed its tail, the token, and not where it leads."""
    room = new_room(client)
    page = client.get(f"/gameday/{room['id']}?lang=ar").text
    assert 'dir="rtl"' in page and '<input id="player-link" dir="ltr"' in page
    made = client.get("/gameday?lang=ar").text
    assert '<input id="link-player" dir="ltr"' in made and '<input id="link-facilitator" dir="ltr"' in made

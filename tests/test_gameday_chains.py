"""A game-day room on a chain of services (issue 24): created on a shipped lesson and on a scenario file with a
[graph]; the team sets ``<service>.<setting>`` through the room (refused as the console refuses, in the same line);
the facilitator injects a service fault (the one service's faults refused, naming why); the room survives a server
restart (the store reopened, the run replayed from its log); its debrief says where the failures began."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from oncallsim.gameday.faults import CHAIN_REFUSED, build_event, fault_menu
from oncallsim.model import InvalidInput
from oncallsim.simulation import RunFile, Simulation
from tests.test_gameday import console, join, key, log_of, minute_of, until
from tests.test_graph_spec import doc_example

CASCADE = ("api", "catalog", "recs")


def error_of(ws: Any) -> dict[str, Any]:
    return until(ws, lambda m: m["type"] == "error")


def test_the_fault_menu_of_a_chain() -> None:
    """A chain is offered what acts on it: a traffic spike and a service fault naming one of its services; the one
    service's faults are refused in one line saying why, and a service fault off a chain."""
    kinds = {f["kind"]: f for f in fault_menu("request", CASCADE)}
    assert set(kinds) == {"surge", "service"}
    fields = {f["name"]: f for f in kinds["service"]["fields"]}
    assert fields["service"] == {"name": "service", "type": "choice", "choices": list(CASCADE), "default": "recs"}
    assert "service" not in {f["kind"] for f in fault_menu("request")}  # one service: nothing to name
    event = build_event("service", "09:05", {"service": "recs", "minutes": 3, "slowdown": 40}, "request", CASCADE)
    assert event == {"kind": "service", "service": "recs", "at": "09:05", "minutes": 3, "slowdown": 40}
    for kind, why in CHAIN_REFUSED.items():
        try:
            build_event(kind, "09:05", {}, "request", CASCADE)
        except InvalidInput as exc:
            assert str(exc) == f"fault.kind: {kind} is refused on a chain of services: {why}"
        else:
            raise AssertionError(kind)
    refusals = {  # every field out of its range, named with the range
        "fault.service: must be one of api, catalog, recs, got 'nope'": {"service": "nope", "minutes": 3},
        "fault.minutes: must be from 1 to 10080, got 0": {"service": "recs", "minutes": 0, "slowdown": 2},
        "fault.minutes: must be a whole number, got 2.5": {"service": "recs", "minutes": 2.5, "slowdown": 2},
        "fault.slowdown: must be from 1 to 1000, got 1001": {"service": "recs", "minutes": 3, "slowdown": 1001},
        "fault.errors: must be from 0 to 1, got 1.5": {"service": "recs", "minutes": 3, "errors": 1.5},
        "fault.errors: must be a number, got 'all'": {"service": "recs", "minutes": 3, "errors": "all"},
        "fault.size: not a field of service; fields: errors, minutes, service, slowdown": {"size": 1},
    }
    try:
        build_event("service", "9:5", {"service": "recs", "minutes": 3, "slowdown": 2}, "request", CASCADE)
    except InvalidInput as exc:
        assert str(exc) == "fault.at: must be a time of day, HH:MM from 00:00 to 23:59, got '9:5'"
    else:
        raise AssertionError("a time that is not one")
    for line, values in refusals.items():
        try:
            build_event("service", "09:05", values, "request", CASCADE)
        except InvalidInput as exc:
            assert str(exc) == line
        else:
            raise AssertionError(line)
    try:
        build_event("service", "09:05", {"service": "recs", "minutes": 3}, "request", CASCADE)
    except InvalidInput as exc:  # as written nothing happens: the scenario schema's own line
        assert "give a slowdown above 1 or errors above 0" in str(exc)
    else:
        raise AssertionError("a fault that does nothing")
    try:
        build_event("service", "09:05", {"service": "recs", "minutes": 3, "slowdown": 2}, "request")
    except InvalidInput as exc:
        assert str(exc) == "fault.kind: service acts on a service of a chain ([graph]); this room plays one service"
    else:
        raise AssertionError("a service fault on one service")


def test_a_chain_room_acts_injects_survives_a_restart_and_says_where_failures_began(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite3"
    with console(db) as client:
        home = client.get("/gameday").text
        assert 'value="cascade"' in home and 'value="retry-layers"' in home and 'value="fan-out"' in home
        room = client.post("/api/gameday/rooms", json={"scenario": "cascade", "seed": 7})
        assert room.status_code == 201, room.text
        room = room.json()
        assert room["engine"] == "request"
        page = client.get(f"/gameday/{room['id']}").text
        assert "data-graph=" in page and 'id="services-body"' in page and "/static/js/services.js" in page
        assert 'id="m-cache_hit"' not in page and 'id="m-db_utilization"' not in page
        shown = {c["name"] for c in json.loads(page.split('id="gameday-controls" type="application/json">')[1]
                                               .split("</script>")[0])}  # fmt: skip
        assert not shown & {"ttl_s", "recommendations", "warmup", "rollback"} and "floor" in shown
        # the console's refusal of the same values, for the same lines
        run = client.post("/api/runs", json={"scenario": "cascade", "seed": 7, "paused": True}).json()["id"]
        console_says = {}
        for control, value in (("recs.retries", 9), ("recs.timeout_ms", -5), ("api.instances", 3), ("ttl_s", 60),
                               ("nope.retries", 1), ("recs.hedge_after_quantile", 0.2)):  # fmt: skip
            refused = client.post(f"/api/runs/{run}/actions", json={"control": control, "value": value})
            assert refused.status_code == 422, refused.text
            console_says[(control, value)] = refused.json()["error"]

        path = f"/gameday/{room['id']}/ws"
        facilitator, player = key(room["facilitator_url"]), key(room["player_url"])
        with (
            client.websocket_connect(path) as fac,
            client.websocket_connect(path) as ann,
            client.websocket_connect(path) as obs,
        ):
            snap = join(fac, facilitator)
            assert {f["kind"] for f in snap["faults"]} == {"surge", "service"}
            assert snap["state"]["services"]["recs"]["timeout_ms"] == 0.0  # none declared
            join(ann, player, "Ann", "operations")
            join(obs, player, "Olu", "observer")
            ann.send_json({"type": "action", "control": "recs.timeout_ms", "value": 300})
            taken = log_of(fac, "action")
            assert (taken["name"], taken["role"], taken["data"]["control"], taken["data"]["value"]) == (
                "Ann", "operations", "recs.timeout_ms", 300,
            )  # fmt: skip
            obs.send_json({"type": "action", "control": "recs.retries", "value": 1})  # an observer cannot act
            assert "observer cannot" in error_of(obs)["message"]
            for (control, value), line in console_says.items():  # refused in the room as on the console
                ann.send_json({"type": "action", "control": control, "value": value})
                assert error_of(ann)["message"] == line, control
            # the one service's faults have nothing to act on in a chain: refused, saying why
            fac.send_json({"type": "inject", "kind": "flush", "at": "09:02"})
            refused = f"fault.kind: flush is refused on a chain of services: {CHAIN_REFUSED['flush']}"
            assert error_of(fac)["message"] == refused
            fac.send_json({"type": "inject", "kind": "service", "at": "09:02",
                           "values": {"service": "recs", "minutes": 0, "errors": 0.5}})  # fmt: skip
            assert error_of(fac)["message"] == "fault.minutes: must be from 1 to 10080, got 0"
            fac.send_json({"type": "inject", "kind": "service", "at": "09:02", "hidden": False,
                           "values": {"service": "recs", "minutes": 3, "errors": 0.5}})  # fmt: skip
            injected = log_of(ann, "inject")  # a visible fault reaches the players, naming its service
            assert injected["data"]["event"] == {"kind": "service", "service": "recs", "at": "09:02", "minutes": 3,
                                                 "errors": 0.5}  # fmt: skip
            for _ in range(4):
                fac.send_json({"type": "step"})
            records = [minute_of(ann, m) for m in range(4)]
            assert records[-1]["state"]["services"]["recs"]["timeout_ms"] == 300.0
        # recs fails half its attempts from 09:02: binomial bands on ~18,000 of them a minute, and the clients'
        # error rate is the 30 % of pages that call recs times one half
        for m in (2, 3):
            record = records[m]["record"]
            recs = record["extras"]["graph"]["services"]["recs"]
            attempts = recs["attempts_per_s"] * 60
            assert abs(recs["failed_per_s"] / recs["attempts_per_s"] - 0.5) < 5 * math.sqrt(0.25 / attempts)
            requests = record["requests_per_s"] * 60
            assert abs(record["error_rate"] - 0.15) < 5 * math.sqrt(0.15 * 0.85 / requests)
        assert records[1]["record"]["error_rate"] == 0.0

    with console(db) as client:  # the store reopened: the room, its state, its players and its log come back
        path = f"/gameday/{room['id']}/ws"
        with client.websocket_connect(path) as fac, client.websocket_connect(path) as ann:
            snap = join(ann, player, "Ann", "operations")
            assert len(snap["records"]) == 4 and [p["name"] for p in snap["players"]] == ["Ann", "Olu"]
            assert snap["state"]["services"]["recs"]["timeout_ms"] == 300.0
            assert snap["state"]["paused"] and snap["state"]["pause_reason"] == "restored"
            assert [e["kind"] for e in snap["log"] if e["kind"] in ("inject", "action")] == ["action", "inject"]
            assert [r["error_rate"] for r in snap["records"]] == [r["record"]["error_rate"] for r in records]
            join(fac, facilitator)
            ann.send_json({"type": "action", "control": "api.retries", "value": 1})  # after the restart too
            log_of(fac, "action")
            fac.send_json({"type": "step"})
            minute_of(ann, 4)
            fac.send_json({"type": "close"})
            debrief = until(ann, lambda m: m["type"] == "debrief")["debrief"]
            exported = client.post(f"/api/gameday/rooms/{room['id']}/export", json={"token": player, "what": "run"})
            markdown = client.post(
                f"/api/gameday/rooms/{room['id']}/export", json={"token": player, "what": "markdown"}
            ).text
    run_file = RunFile.model_validate(exported.json())
    assert run_file.actions == [
        {"minute": 0, "control": "recs.timeout_ms", "value": 300},
        {"minute": 4, "control": "api.retries", "value": 1},
    ]
    replayed = Simulation.replay(run_file)  # the room's run, bit for bit, from its file
    assert [r.error_rate for r in replayed.timeline] == [r["error_rate"] for r in snap["records"]] + [
        replayed.timeline[4].error_rate
    ]
    # where the failures began: recs alone fails (its own errors), and every failure is seen at the api
    origins = debrief["origins"]
    rows = {row["service"]: row for row in origins["services"]}
    assert list(rows) == list(CASCADE) and origins["entry"] == "api"
    assert rows["recs"]["share"] == 1.0 and rows["api"]["seen_share"] == 1.0 and rows["recs"]["seen_share"] == 0.0
    assert origins["headline"][0]["args"]["service"] == "recs"
    assert "\n## Where the failures began" not in markdown and "\n### Where the failures began" in markdown
    assert "\n#### Contradictions in the graph" in markdown  # under the origins, one level down
    assert "began at recs, though every failed request was seen at api" in markdown
    assert "slow or failing service recs at 09:02" in markdown


def test_a_room_on_a_scenario_file_with_a_graph(tmp_path: Path) -> None:
    with console(tmp_path / "runs.sqlite3") as client:
        body = {"scenario": "checkout-chain", "scenario_toml": doc_example(), "seed": 2, "minutes": 20}
        room = client.post("/api/gameday/rooms", json=body)
        assert room.status_code == 201, room.text
        room = room.json()
        with client.websocket_connect(f"/gameday/{room['id']}/ws") as fac:
            snap = join(fac, key(room["facilitator_url"]))
            service = next(f for f in snap["faults"] if f["kind"] == "service")
            assert next(f for f in service["fields"] if f["name"] == "service")["choices"] == ["api", "orders", "db"]
            assert set(snap["state"]["services"]) == {"api", "orders", "db"}
        minute_room = client.post("/api/gameday/rooms", json={**body, "engine": "minute"})
        assert minute_room.status_code == 422 and "plays on the request engine" in minute_room.json()["error"]

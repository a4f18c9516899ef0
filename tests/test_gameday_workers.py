"""Game-day rooms on the request engine computed in worker processes (web/workers.py, as the console's runs): the
room's run is held and stepped by a live worker, its records those of the same run computed in this process bit for
bit (the oracle: a ``Simulation`` stepped here, with the same scenario, seed, actions and injected fault); a fault
the facilitator injects reaches the run the worker holds; a worker that dies loses its room alone, which comes back
paused from its log, the other rooms' clocks going on. Minute-engine rooms stay in the server process."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from oncallsim.gameday import Seat
from oncallsim.gameday.faults import build_event
from oncallsim.model import InvalidInput
from oncallsim.simulation import Simulation
from tests.test_gameday import console, join, key, log_of, minute_of, new_room, until

ENGINE = {"scenario": "free-play", "seed": 5, "minutes": 20, "engine": "request"}
CRASH = {"kind": "instance", "at": "08:03", "values": {"what": "crash", "instance": 1}}


def _room(client: TestClient, room_id: str) -> Any:
    return client.app.state.rooms.rooms[room_id]  # type: ignore[attr-defined]


def _bytes(timeline: list[Any]) -> list[bytes]:
    """Each record pickled alone (a list pickled whole also encodes which records share an object)."""
    return [pickle.dumps(r) for r in timeline]


def _kill(worker: Any) -> None:
    """SIGKILL the worker process (as the kernel's OOM killer would), waited for."""
    worker._proc.kill()
    worker._proc.wait()


def test_a_request_engine_room_is_stepped_by_its_worker_bit_for_bit(tmp_path: Path) -> None:
    here = Simulation("free-play", seed=5, minutes=20, engine="request")
    with console(tmp_path / "runs.sqlite3") as client:
        room = new_room(client, **ENGINE)
        path = f"/gameday/{room['id']}/ws"
        with client.websocket_connect(path) as fac, client.websocket_connect(path) as ann:
            join(fac, key(room["facilitator_url"]))
            join(ann, key(room["player_url"]), "Ann", "operations")
            live = _room(client, room["id"]).live
            assert live.remote is not None and live.remote.worker.name.startswith("live-")
            assert client.get("/api/stats").json()["rooms_in_workers"] == 1
            assert not hasattr(live.sim.state.world, "queues")  # the server keeps a mirror: a view, no world
            fac.send_json({"type": "step"})
            minute_of(fac, 0)
            here.step([])
            ann.send_json({"type": "action", "control": "floor", "value": 5})
            log_of(fac, "action")
            fac.send_json({"type": "inject", **CRASH, "hidden": True})
            log_of(fac, "inject")
            here.inject(build_event(CRASH["kind"], CRASH["at"], CRASH["values"], "request"))
            here.step([("floor", 5)])
            fac.send_json({"type": "step"})
            minute_of(fac, 1)
            for minute in range(2, 6):
                if minute == 4:  # the crashed instance taken out of rotation, checked on the mirror's view
                    ann.send_json({"type": "action", "control": "eject", "value": 1})
                    log_of(fac, "action")
                fac.send_json({"type": "step"})
                shown = minute_of(fac, minute)
                here.step([("eject", 1)] if minute == 4 else [])
            assert "instance_crashed" in [e.code for r in here.timeline for e in r.events if hasattr(e, "code")]
            assert [e["code"] for e in minute_of(ann, 3)["record"]["events"]].count("instance_crashed") == 0
            assert shown["record"]["p99_ms"] == here.timeline[-1].p99_ms
            ann.send_json({"type": "action", "control": "eject", "value": 1})  # the mirror knows it is out
            assert "already out of rotation" in until(ann, lambda m: m["type"] == "error")["message"]
            assert _bytes(live.sim.timeline) == _bytes(here.timeline)  # every field, every extra, bit for bit
            assert live.sim.actions == here.actions and live.sim.rng.state == here.rng.state
            assert live.sim.scenario == here.scenario
            # a minute-engine room beside it is computed here, as before
            other = new_room(client, engine="minute")
            assert _room(client, other["id"]).live.remote is None
        # nobody in it: the room leaves memory, and its world its worker
        rooms = client.app.state.rooms  # type: ignore[attr-defined]
        worker = live.remote.worker
        assert f"room:{room['id']}" in worker.runs
        assert client.portal.call(rooms.sweep, 0.0) == 2  # type: ignore[union-attr]
        assert room["id"] not in rooms.rooms and f"room:{room['id']}" not in worker.runs and live.remote.released


def test_a_room_whose_worker_dies_comes_back_paused_while_the_other_rooms_go_on(tmp_path: Path) -> None:
    with console(tmp_path / "runs.sqlite3") as client:
        lost, kept = new_room(client, **ENGINE), new_room(client, **ENGINE)
        bystander = new_room(client, engine="minute", speed=16, minutes=600)
        ws = {name: f"/gameday/{r['id']}/ws" for name, r in (("lost", lost), ("kept", kept), ("by", bystander))}
        with (
            client.websocket_connect(ws["lost"]) as fac,
            client.websocket_connect(ws["lost"]) as ann,
            client.websocket_connect(ws["kept"]) as fac2,
            client.websocket_connect(ws["by"]) as fac3,
        ):
            join(fac, key(lost["facilitator_url"]))
            join(ann, key(lost["player_url"]), "Ann", "operations")
            join(fac2, key(kept["facilitator_url"]))
            join(fac3, key(bystander["facilitator_url"]))
            fac3.send_json({"type": "resume"})  # the bystander plays at 16x on the rooms' clock throughout
            for f in (fac, fac2):
                f.send_json({"type": "step"})
                minute_of(f, 0)
            ann.send_json({"type": "action", "control": "floor", "value": 7})  # logged, not yet applied
            log_of(fac, "action")
            fac.send_json({"type": "inject", **CRASH})
            log_of(fac, "inject")
            stale = _room(client, lost["id"])
            held = stale.live.remote
            if _room(client, kept["id"]).live.remote.worker is held.worker:
                pytest.skip("one live worker on this machine: both rooms share it")
            _kill(held.worker)
            fac.send_json({"type": "step"})  # finds its worker gone
            error = until(fac, lambda m: m["type"] == "error")
            assert error["field"] == "run" and "worker process stopped" in error["message"]
            assert error["code"] == "worker_lost"  # the page says it in its language (not "connection lost")
            for seat in (fac, ann):
                with pytest.raises(WebSocketDisconnect):  # the page reconnects
                    until(seat, lambda m: False)
            assert lost["id"] not in client.app.state.rooms.rooms  # type: ignore[attr-defined]
            # a frame a seat's socket still reads before it closes reaches the stale room: refused, never logged
            # behind the back of the room rebuilt from that log (nor its clock paced)
            ann_seat, fac_seat = Seat("Ann", "operations", "player"), Seat("facilitator", "facilitator", "facilitator")
            for call, args in (
                (stale.act, (ann_seat, "floor", 9)),
                (stale.say, (ann_seat, "message", "still there?")),
                (stale.inject, (fac_seat, "flush", "", {}, False)),
                (stale.control, (fac_seat, "resume")),
                (stale.control, (fac_seat, "step")),
                (stale.control, (fac_seat, "close")),
                (stale.reveal, (fac_seat, 1)),
            ):
                with pytest.raises(InvalidInput) as refused:
                    client.portal.call(call, *args)  # type: ignore[union-attr]
                assert refused.value.kind == "worker_lost", (call, refused.value)
            fac2.send_json({"type": "step"})  # the other request room's worker goes on
            minute_of(fac2, 1)
            seen = _room(client, bystander["id"]).live.sim.minute  # and the minute-engine room's clock
            assert minute_of(fac3, seen + 5)["record"]["minute"] == seen + 5
        with client.websocket_connect(ws["lost"]) as fac:  # back from its log, paused for its facilitator
            snap = join(fac, key(lost["facilitator_url"]))
            state = snap["state"]
            # why it is paused: its worker was lost, not "the server restarted" (it did not)
            assert state["paused"] and state["pause_reason"] == "worker_lost" and state["minute"] == 1
            assert state["pending"] == [{"minute": 1, "control": "floor", "value": 7}]
            assert [e["kind"] for e in snap["log"]].count("inject") == 1
            assert "message" not in [e["kind"] for e in snap["log"]] and not snap["state"]["done"]
            assert _room(client, lost["id"]).live.remote is not None  # held by a fresh worker
            for minute in range(1, 5):
                fac.send_json({"type": "step"})
                minute_of(fac, minute)
            live = _room(client, lost["id"]).live
            fac.send_json({"type": "resume"})
            assert until(fac, lambda m: m["type"] == "state" and not m["paused"])["pause_reason"] is None
            fac.send_json({"type": "pause"})
            until(fac, lambda m: m["type"] == "state" and m["paused"])
        # nobody in it (paused by its facilitator): it leaves memory, and comes back paused as it was, not as
        # after a restart (nor as after a lost worker: that was said once)
        rooms = client.app.state.rooms  # type: ignore[attr-defined]
        client.portal.call(rooms.sweep, 0.0)  # type: ignore[union-attr]
        assert lost["id"] not in rooms.rooms
        with client.websocket_connect(ws["lost"]) as fac:
            state = join(fac, key(lost["facilitator_url"]))["state"]
            assert state["paused"] and state["pause_reason"] is None
    here = Simulation("free-play", seed=5, minutes=20, engine="request")
    here.step([])
    here.inject(build_event(CRASH["kind"], CRASH["at"], CRASH["values"], "request"))
    here.step([("floor", 7)])
    for _ in range(3):
        here.step([])
    assert _bytes(live.sim.timeline[:5]) == _bytes(here.timeline)  # (then resumed for a while)


def test_a_fault_injected_while_the_rooms_worker_is_dead_is_refused_and_not_kept(tmp_path: Path) -> None:
    """The facilitator injects a fault after the room's worker died and before a minute found it: the worker
    cannot take it, so the room is lost (its seats told, as when a minute finds it) and the fault refused with
    "try again" in the page's language — not written: the room comes back from its log without it."""
    with console(tmp_path / "runs.sqlite3") as client:
        room = new_room(client, **ENGINE)
        path = f"/gameday/{room['id']}/ws"
        with client.websocket_connect(path + "?lang=da") as fac:
            join(fac, key(room["facilitator_url"]))
            fac.send_json({"type": "step"})
            minute_of(fac, 0)
            _kill(_room(client, room["id"]).live.remote.worker)
            fac.send_json({"type": "inject", **CRASH})
            refused, lost = (until(fac, lambda m: m["type"] == "error") for _ in range(2))
            assert refused["field"] == "run" and refused["message"].endswith("try again")  # first: then the lost
            assert (
                refused["localized"]
                == "Spil: dens arbejdsproces stoppede; spillet kommer tilbage fra sin log: prøv igen"
            )
            assert lost["code"] == "worker_lost"
            with pytest.raises(WebSocketDisconnect):
                until(fac, lambda m: False)
        with client.websocket_connect(path) as fac:
            snap = join(fac, key(room["facilitator_url"]))
            assert snap["state"]["pause_reason"] == "worker_lost" and snap["state"]["minute"] == 1
            assert "inject" not in [e["kind"] for e in snap["log"]]
            assert (
                _room(client, room["id"]).live.sim.scenario.events
                == Simulation("free-play", seed=5, minutes=20, engine="request").scenario.events
            )

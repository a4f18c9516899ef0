"""Durability (issue 13, finding 11): kill the real server with SIGKILL while actions arrive; after a restart every
acknowledged action is in the run's log, in order, and the database is intact.

``kill_trial`` (live runs) and ``room_kill_trial`` (a game-day room's players acting) are shared with
``scripts/fuzz_campaign.py``, which runs them a hundred times and more."""

from __future__ import annotations

import contextlib
import http.client
import json
import random
import signal
import sqlite3
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.server import start_server

# Wall-clock pacing (a browser at 16×, latency bounds): runs alone, after the parallel part of `make test`.
pytestmark = pytest.mark.serial

ORIGIN_HEADERS = {"Content-Type": "application/json"}


def post(base: str, path: str, body: dict[str, Any], timeout: float = 10.0) -> Any:
    request = urllib.request.Request(
        base + path, data=json.dumps(body).encode(), headers={**ORIGIN_HEADERS, "Origin": base}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())


def get(base: str, path: str) -> Any:
    with urllib.request.urlopen(base + path, timeout=10) as response:
        return json.loads(response.read())


def watch(base: str, run_id: str, stop: threading.Event) -> None:
    """A viewer, so that the run ticks (a run nobody watches holds still)."""
    from websockets.sync.client import connect

    url = base.replace("http://", "ws://") + f"/api/runs/{run_id}/ws"
    try:
        with connect(url, origin=base, open_timeout=10) as ws:  # type: ignore[arg-type]
            while not stop.is_set():
                ws.recv(timeout=5)
    except Exception:  # the server was killed: the viewer's end
        return


def act(
    base: str, run_id: str, acked: list[tuple[int, str, Any]], limit: int, seed: int, stop: threading.Event
) -> None:
    rng = random.Random(seed)
    for _ in range(limit):
        if stop.is_set():
            return
        control, value = rng.choice(
            [("floor", rng.randint(1, 40)), ("ttl_s", rng.randint(0, 600)), ("autoscaler", rng.random() < 0.5)]
        )
        try:
            answer = post(base, f"/api/runs/{run_id}/actions", {"control": control, "value": value})
        except (OSError, urllib.error.URLError, http.client.HTTPException):
            return  # killed mid-request or mid-answer: not acknowledged
        accepted = answer["accepted"]
        acked.append((accepted["minute"], accepted["control"], accepted.get("value")))


def kill_trial(tmp: Path, seed: int, runs: int = 2, per_run: int = 100) -> dict[str, int]:
    """One trial: start, play ``runs`` live runs with a viewer and a stream of actions each, SIGKILL the server
    after a random number of acknowledged actions, restart, compare. Returns the counts; raises on a loss."""
    rng = random.Random(seed)
    db = tmp / f"trial-{seed}.sqlite3"
    process, base, log = start_server(db)
    stop = threading.Event()
    threads: list[threading.Thread] = []
    acked: dict[str, list[tuple[int, str, Any]]] = {}
    try:
        for i in range(runs):
            run_id = post(base, "/api/runs", {"scenario": "free-play", "seed": seed + i, "speed": 16})["id"]
            acked[run_id] = []
            threads.append(threading.Thread(target=watch, args=(base, run_id, stop), daemon=True))
            threads.append(
                threading.Thread(
                    target=act, args=(base, run_id, acked[run_id], per_run, seed * 31 + i, stop), daemon=True
                )
            )
        for t in threads:
            t.start()
        target = rng.randint(5, runs * per_run - 5)
        done = threading.Event()

        def reached() -> None:
            while not done.is_set():
                if sum(len(a) for a in acked.values()) >= target:
                    done.set()
                    return
                if not any(t.is_alive() for t in threads[1::2]):
                    done.set()
                    return
                done.wait(0.002)

        waiter = threading.Thread(target=reached, daemon=True)
        waiter.start()
        done.wait(60)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    finally:
        stop.set()
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
        log.close()
    for t in threads:
        t.join(timeout=10)
    snapshot = {run_id: list(a) for run_id, a in acked.items()}  # what the clients saw acknowledged

    with sqlite3.connect(db) as check:
        assert check.execute("PRAGMA integrity_check").fetchone()[0] == "ok"

    process, base, log = start_server(db)
    try:
        extra = 0
        for run_id, seen in snapshot.items():
            stored = [(a["minute"], a["control"], a.get("value")) for a in get(base, f"/api/runs/{run_id}")["actions"]]
            stored += [
                (a["minute"], a["control"], a.get("value"))
                for a in get(base, f"/api/runs/{run_id}")["state"]["pending"]
            ]
            assert stored[: len(seen)] == seen, f"run {run_id}: an acknowledged action was lost (seed {seed})"
            assert len(stored) - len(seen) <= 1  # at most the one request in flight when the server died
            extra += len(stored) - len(seen)
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()
    return {"acknowledged": sum(len(a) for a in snapshot.values()), "unacknowledged_kept": extra}


def test_every_acknowledged_action_survives_sigkill(tmp_path: Path) -> None:
    total = 0
    for seed in (1, 2, 3):
        total += kill_trial(tmp_path, seed)["acknowledged"]
    assert total > 0


def room_player(
    base: str, room_id: str, token: str, acked: list[tuple[int, str, Any]], limit: int, seed: int, stop: threading.Event
) -> None:
    """A player of the operations role acting as fast as the room answers; an action is acknowledged when its log
    line comes back (the room sends it after the line is on disk)."""
    from websockets.sync.client import connect

    rng = random.Random(seed)
    url = base.replace("http://", "ws://") + f"/gameday/{room_id}/ws"
    try:
        with connect(url, origin=base, open_timeout=10, max_size=None) as ws:  # type: ignore[arg-type]
            ws.send(json.dumps({"type": "join", "token": token, "name": f"ops{seed}", "role": "operations"}))
            sent = 0
            while not stop.is_set() and len(acked) < limit:
                if sent == len(acked):
                    control, value = rng.choice([("floor", rng.randint(1, 40)), ("ttl_s", rng.randint(0, 600))])
                    ws.send(json.dumps({"type": "action", "control": control, "value": value}))
                    sent += 1
                message = json.loads(ws.recv(timeout=5))
                entry = message.get("entry") if message.get("type") == "log" else None
                if entry and entry["kind"] == "action" and entry["name"] == f"ops{seed}":
                    data = entry["data"]
                    acked.append((entry["minute"], data["control"], data.get("value")))
                elif message.get("type") == "error":
                    sent -= 1  # refused (the rate limit): not logged, sent again
    except Exception:  # the server was killed: the player's end
        return


def room_kill_trial(
    tmp: Path, seed: int, players: int = 2, per_player: int = 60, engine: str = "minute"
) -> dict[str, int]:
    """One trial with a game-day room: its facilitator starts it at 16x, ``players`` act through their sockets,
    SIGKILL after a random number of acknowledged actions, restart; every acknowledged action must be in the
    room's log, in order (the facilitator's export), and the database intact; the room comes back paused and
    steps (on the request engine: replayed and held by the new server's workers). Raises on a loss."""
    from websockets.sync.client import connect

    rng = random.Random(seed)
    db = tmp / f"room-trial-{seed}.sqlite3"
    process, base, log = start_server(db)
    stop = threading.Event()
    acked: list[list[tuple[int, str, Any]]] = [[] for _ in range(players)]
    threads: list[threading.Thread] = []
    try:
        # a day of free play at 16x: 90 s, longer than any trial (a room whose run is over takes no action)
        room = post(base, "/api/gameday/rooms", {"scenario": "free-play", "seed": seed, "speed": 16, "engine": engine})
        facilitator = room["facilitator_url"].split("#key=")[1]
        player = room["player_url"].split("#key=")[1]
        url = base.replace("http://", "ws://") + f"/gameday/{room['id']}/ws"
        with connect(url, origin=base, open_timeout=10, max_size=None) as ws:  # type: ignore[arg-type]
            ws.send(json.dumps({"type": "join", "token": facilitator}))
            ws.recv(timeout=10)  # the snapshot
            ws.send(json.dumps({"type": "resume"}))
            threads = [
                threading.Thread(
                    target=room_player, args=(base, room["id"], player, acked[k], per_player, seed * 31 + k, stop),
                    daemon=True,
                )
                for k in range(players)
            ]  # fmt: skip
            for t in threads:
                t.start()
            target = rng.randint(3, players * per_player - 3)
            deadline = time.monotonic() + 60
            while sum(map(len, acked)) < target and any(t.is_alive() for t in threads):
                if time.monotonic() > deadline:
                    break
                with contextlib.suppress(TimeoutError):
                    ws.recv(timeout=1)  # the facilitator watches (the room ticks while someone is in it)
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=10)
    finally:
        stop.set()
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
        log.close()
    for t in threads:
        t.join(timeout=10)
    seen = [list(a) for a in acked]

    with sqlite3.connect(db) as check:
        assert check.execute("PRAGMA integrity_check").fetchone()[0] == "ok"

    process, base, log = start_server(db)
    try:
        # the room's run replayed first (request engine: a minute of CPU a few hundred minutes, in a worker)
        body = {"token": facilitator, "what": "room"}
        exported = post(base, f"/api/gameday/rooms/{room['id']}/export", body, timeout=180)
        for k, mine in enumerate(seen):
            stored = [
                (e["minute"], e["data"]["control"], e["data"].get("value"))
                for e in exported["log"]
                if e["kind"] == "action" and e["name"] == f"ops{seed * 31 + k}"
            ]
            assert stored[: len(mine)] == mine, f"room {room['id']}: an acknowledged action was lost (seed {seed})"
            assert len(stored) - len(mine) <= 1  # at most the one in flight when the server died
        url = base.replace("http://", "ws://") + f"/gameday/{room['id']}/ws"
        with connect(url, origin=base, open_timeout=180, max_size=None) as ws:  # type: ignore[arg-type]
            ws.send(json.dumps({"type": "join", "token": facilitator}))
            state = json.loads(ws.recv(timeout=180))["state"]
            assert state["paused"] and state["pause_reason"] == "restored", state
            ws.send(json.dumps({"type": "step"}))
            while (message := json.loads(ws.recv(timeout=180)))["type"] != "minute":
                assert message["type"] != "error", message
            assert message["record"]["minute"] == state["minute"]
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()
    return {"acknowledged": sum(map(len, seen))}


def test_every_acknowledged_room_action_survives_sigkill(tmp_path: Path) -> None:
    assert room_kill_trial(tmp_path, 1)["acknowledged"] > 0


def test_every_acknowledged_request_engine_room_action_survives_sigkill(tmp_path: Path) -> None:
    """The room's run held by a worker process of the killed server: its log is the truth, as on the minute
    engine, and the new server's workers take the room back."""
    assert room_kill_trial(tmp_path, 2, engine="request")["acknowledged"] > 0

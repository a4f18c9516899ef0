"""Bounded memory (issue 29, item 5) against a real server: new runs and rooms past a limit get a 429 that says
what to do (in the page's language); what nobody uses leaves memory and comes back from SQLite, unchanged, when
it is asked for again."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.server import start_server

# Wall-clock pacing (a browser at 16×, latency bounds): runs alone, after the parallel part of `make test`.
pytestmark = pytest.mark.serial

LIMITS = [
    "runs_per_client=2",
    "new_runs_per_minute=3",
    "rooms_per_client=1",
    "idle_s=0.4",
    "finished_s=0.4",
    "room_idle_s=0.4",
]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db = tmp_path_factory.mktemp("memory") / "runs.sqlite3"
    process, url, log = start_server(db, extra=[arg for limit in LIMITS for arg in ("--limit", limit)])
    try:  # the runs below step at once: the minute engine first (a cold machine compiles it once)
        wait_for("ready", lambda: call(url, "GET", "/api/engines")[1][0][0]["ready"], timeout_s=300)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()


def call(base: str, method: str, path: str, body: Any = None, form: dict[str, str] | None = None) -> tuple[int, Any]:
    """(status, (parsed JSON or text, headers)) of one request; an HTTP error is an answer like any other."""
    headers = {"Origin": base}
    data = None
    if body is not None:
        data, headers["Content-Type"] = json.dumps(body).encode(), "application/json"
    if form is not None:
        data, headers["Content-Type"] = urllib.parse.urlencode(form).encode(), "application/x-www-form-urlencoded"
    request = urllib.request.Request(base + path, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, text, got = response.status, response.read().decode(), response.headers
    except urllib.error.HTTPError as error:
        status, text, got = error.code, error.read().decode(), error.headers
    try:
        return status, (json.loads(text), got)
    except ValueError:
        return status, (text, got)


def wait_for(what: str, condition: Callable[[], bool], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"still not {what} after {timeout_s} s"
        time.sleep(0.05)


def stats(base: str) -> dict[str, Any]:
    return call(base, "GET", "/api/stats")[1][0]  # type: ignore[no-any-return]


def new_run(base: str, **extra: Any) -> tuple[int, Any]:
    status, (answer, _headers) = call(base, "POST", "/api/runs", {"scenario": "free-play", "speed": 16,
                                                                  "paused": True, "seed": 7, **extra})  # fmt: skip
    return status, answer


def test_runs_are_limited_per_client_evicted_when_idle_and_restored_unchanged(base: str) -> None:
    from websockets.sync.client import connect

    first, second = new_run(base)[1]["id"], new_run(base, minutes=3)[1]["id"]
    ws = base.replace("http://", "ws://")
    # watched (paused by their player): they stay in memory while the limit is checked
    with connect(f"{ws}/api/runs/{first}/ws", origin=base), connect(f"{ws}/api/runs/{second}/ws", origin=base):
        status, (answer, headers) = call(base, "POST", "/api/runs", {"scenario": "free-play", "speed": 16})
        assert status == 429 and answer["field"] == "limit"
        assert "you have 2 live runs, the limit for one player: end or delete one" in answer["error"]
        assert int(headers["Retry-After"]) >= 1
        # the page says so too, in the page's language (the card's form)
        status, (page, _h) = call(base, "POST", "/runs?lang=da", form={"scenario": "free-play", "speed": "4"})
        assert status == 429 and "grænsen for én spiller" in page

    status, (accepted, _h) = call(base, "POST", f"/api/runs/{first}/actions", {"control": "floor", "value": 14})
    assert status == 200
    for _ in range(3):  # the second run played to its end: finished, debriefed
        assert call(base, "POST", f"/api/runs/{second}/control", {"type": "step"})[0] == 200
    before = call(base, "GET", f"/api/runs/{first}")[1][0]

    wait_for("evicted", lambda: stats(base)["runs_in_memory"] == 0)  # nobody watches either: both leave memory
    assert stats(base)["runs_evicted"] >= 2
    after = call(base, "GET", f"/api/runs/{first}")[1][0]  # rebuilt from its log, as after a restart
    assert after["state"]["pending"] == before["state"]["pending"] == [accepted["accepted"]]
    assert after["records"] == before["records"] and after["state"]["minute"] == before["state"]["minute"]
    status, (debrief, _h) = call(base, "GET", f"/api/runs/{second}/debrief")
    assert status == 200 and "score" in debrief
    assert call(base, "GET", f"/api/runs/{second}/zoom?minute=1")[0] == 200

    # the evicted runs no longer count as the client's: a new one fits, then the rate per minute says no
    assert new_run(base)[0] == 201
    status, answer = new_run(base)
    assert status == 429 and "at most 3 new runs a minute from one player: wait" in answer["error"]


def test_rooms_are_limited_per_client_evicted_when_empty_and_restored(base: str) -> None:
    status, (room, _h) = call(base, "POST", "/api/gameday/rooms", {"scenario": "bad-deploy", "seed": 3})
    assert status == 201
    status, (answer, _h) = call(base, "POST", "/api/gameday/rooms", {"scenario": "bad-deploy", "seed": 4})
    assert status == 429 and "open rooms, the limit for one facilitator" in answer["error"]

    wait_for("evicted", lambda: stats(base)["rooms_in_memory"] == 0)
    assert stats(base)["rooms_evicted"] >= 1
    key = room["facilitator_url"].split("#key=")[1]
    status, (run, _h) = call(base, "POST", f"/api/gameday/rooms/{room['id']}/export", {"token": key, "what": "run"})
    assert status == 200 and run["seed"] == 3  # back from the store for its facilitator
    assert stats(base)["rooms_in_memory"] == 1

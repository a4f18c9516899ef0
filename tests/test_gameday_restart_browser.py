"""A game-day room in real headless Chromium through what a running exercise meets: a value typed at 16x while
the states stream in, and the server killed (kill -9) and restarted on the same database while the pages stay
open. The pages follow the restarted server at once (its states are numbered afresh, under another epoch), the
room comes back paused until its facilitator resumes it, and a page on a closed room never enables its controls
again; a single-player console open meanwhile follows the restarted server too. Minute engine only (no
request-engine compile)."""

from __future__ import annotations

import json
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from tests.browser import chromium
from tests.server import free_port, start_server

# Wall-clock pacing (a browser at 16×, latency bounds): runs alone, after the parallel part of `make test`.
pytestmark = pytest.mark.serial

RESTORED = "paused: the server restarted; the facilitator resumes"


class Server:
    """`oncallsim serve` on one port and one database, killed and started again at will."""

    def __init__(self, db: Path) -> None:
        self.db, self.port = db, free_port()
        self.process: subprocess.Popen[str] | None = None
        self.log: IO[str] | None = None
        self.base = ""

    def start(self) -> None:
        self.process, self.base, self.log = start_server(self.db, port=self.port)

    def kill(self) -> None:
        """kill -9: no shutdown, nothing written on the way out."""
        assert self.process is not None and self.log is not None
        self.process.kill()
        self.process.wait(timeout=10)
        self.log.close()
        self.process = None

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
            assert self.log is not None
            self.log.close()
            self.process = None


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    s = Server(tmp_path / "runs.sqlite3")
    s.start()
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture
def browser() -> Iterator[Any]:
    with chromium() as browser:
        yield browser


def new_room(base: str, **body: Any) -> dict[str, Any]:
    data = json.dumps({"scenario": "free-play", "seed": 4, "minutes": 240, "speed": 16, **body}).encode()
    request = urllib.request.Request(base + "/api/gameday/rooms", data, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return dict(json.loads(response.read()))


def open_page(browser: Any) -> tuple[Any, list[dict[str, Any]]]:
    """A page of its own, and the frames it sends on its sockets (decoded)."""
    page = browser.new_context(viewport={"width": 1366, "height": 900}).new_page()
    sent: list[dict[str, Any]] = []
    page.on("websocket", lambda ws: ws.on("framesent", lambda payload: sent.append(json.loads(payload))))
    return page, sent


def open_console(browser: Any, base: str) -> Any:
    """A single-player run at 16x (minute engine, long enough for the test), its console open and running."""
    body = {"scenario": "free-play", "seed": 4, "minutes": 1440, "speed": 16, "difficulty": "hard"}
    request = urllib.request.Request(
        base + "/api/runs", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        run_id = json.loads(response.read())["id"]
    page, _ = open_page(browser)
    page.goto(f"{base}/runs/{run_id}")
    page.wait_for_function("() => Number(document.querySelector('main.console').dataset.minute) > 2")
    return page


def state_is(page: Any, text: str, timeout: float = 30_000) -> None:
    page.wait_for_function("(t) => document.getElementById('run-state').textContent === t", arg=text, timeout=timeout)


def clock_moves(page: Any) -> None:
    shown = page.locator("#clock").inner_text()
    page.wait_for_function("(c) => document.getElementById('clock').textContent !== c", arg=shown)


def test_typed_values_survive_16x_and_pages_follow_a_restarted_server(
    server: Server, browser: Any, tmp_path: Path
) -> None:
    room = new_room(server.base)
    facilitator, _ = open_page(browser)
    facilitator.goto(server.base + room["facilitator_url"])
    facilitator.locator("#facilitator").wait_for()
    ann, sent = open_page(browser)
    ann.goto(server.base + room["player_url"])
    ann.locator("#join-name").fill("Ann")
    ann.locator("#join-role").select_option("operations")
    ann.get_by_role("button", name="Join").click()
    ann.locator("#you", has_text="You are Ann").wait_for()

    facilitator.locator("#f-pause").click()  # resume, at 16x
    state_is(ann, "running")
    solo = open_console(browser, server.base)  # a single-player run's console, open across the restarts too

    # a floor typed while states stream in (one every 60 ms) stays typed, focused or not, until Apply
    floor = ann.locator('#controls input[data-value="floor"]')
    floor.fill("13")
    clock_moves(ann)
    ann.locator("#say-text").focus()  # the focus elsewhere, as pressing Apply does before its click lands
    clock_moves(ann)
    clock_moves(ann)
    assert floor.input_value() == "13"
    ann.locator('#controls button[data-control="floor"]').click()
    ann.locator("#channel li", has_text="Ann (operations): Fleet floor = 13").wait_for()
    actions = [m for m in sent if m.get("type") == "action" and m.get("control") == "floor"]
    assert actions == [{"type": "action", "control": "floor", "value": 13}]
    clock_moves(ann)
    assert floor.input_value() == "13"  # the server's value now, shown again by the states
    floor.fill("21")
    floor.press("Escape")  # abandoned: the setting in force comes back
    assert floor.input_value() == "13"

    # kill -9 while the room runs; the pages say the connection is lost, then follow the restarted server
    clock_moves(ann)
    server.kill()
    state_is(ann, "connection lost; reconnecting…")
    before = ann.locator("#clock").inner_text()
    solo.wait_for_function("() => document.querySelector('main.console').dataset.connected === 'false'")
    solo_before = int(solo.evaluate("document.querySelector('main.console').dataset.minute"))
    server.start()
    state_is(ann, RESTORED)
    state_is(facilitator, RESTORED)
    # the console follows the restarted server's states (numbered from 1 again): its run goes on from where it was
    # written (every 15 minutes between actions), past the minute the page showed before the kill
    solo.wait_for_function(
        "(m) => Number(document.querySelector('main.console').dataset.minute) > m", arg=solo_before + 1
    )
    assert solo.evaluate("document.querySelector('main.console').dataset.paused") == "false"
    ann.screenshot(path=str(tmp_path / "restored-player.png"), full_page=True)
    after = ann.locator("#clock").inner_text()
    minutes = [int(c[:2]) * 60 + int(c[3:]) for c in (before, after)]
    # the room's position is written every minute, off the loop: at 16x the last few writes may be in flight
    assert 0 <= minutes[0] - minutes[1] <= 16
    assert not ann.locator('#controls button[data-control="floor"]').is_disabled()
    facilitator.locator("#f-pause").click()  # only the facilitator starts it again
    state_is(ann, "running")
    clock_moves(ann)

    # closed: said at once, the debrief announced when ready; after another kill -9 the page stays closed
    facilitator.on("dialog", lambda dialog: dialog.accept())
    facilitator.locator("#f-close").click()
    ann.wait_for_function(
        "() => document.getElementById('run-state').textContent.startsWith('the run is over')", timeout=60_000
    )
    server.kill()
    state_is(ann, "connection lost; reconnecting…")
    server.start()
    ann.wait_for_function(
        "() => document.getElementById('run-state').textContent.startsWith('the run is over')", timeout=60_000
    )
    ann.locator("#debrief").wait_for(timeout=120_000)
    state_is(ann, "the run is over")
    controls = ann.locator("#controls [data-control]")
    assert controls.count() > 0
    assert all(controls.nth(i).is_disabled() for i in range(controls.count()))
    assert facilitator.locator("#f-pause").is_disabled()
    ann.screenshot(path=str(tmp_path / "closed-player.png"), full_page=True)

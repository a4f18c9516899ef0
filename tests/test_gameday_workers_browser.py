"""A request-engine game-day room in real headless Chromium while its worker process misbehaves, driven through
the seams the server itself uses (no load, no timing): the worker stopped (SIGSTOP) misses every tick of the
room's clock, so the server's pacer (``workers.Pacer``) finds the room slower than its speed and the page says it
plays slower ("plays at about N× instead of 16×"); the worker killed (SIGKILL, as the OOM killer would) loses the
room, whose page says so in its language (not "the server restarted": it did not) and comes back paused from its
log until the facilitator resumes it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from oncallsim.i18n import translations
from tests.browser import chromium
from tests.server import start_server
from tests.test_console_browser import Watch

# Wall-clock pacing (a browser at 16×): runs alone, after the parallel part of `make test`.
pytestmark = pytest.mark.serial

RESTORED = "paused: the server restarted; the facilitator resumes"
WORKER = "from oncallsim.web.workers import serve"  # a worker process's command line (web/workers.py _CHILD)


class Server:
    def __init__(self, process: subprocess.Popen[str], base: str) -> None:
        self.process, self.base = process, base

    def workers(self) -> list[int]:
        """The server's worker processes (its children running the workers' loop; not the engine preparer)."""
        pids = []
        for task in Path(f"/proc/{self.process.pid}/task").iterdir():
            for pid in (task / "children").read_text().split():
                try:
                    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
                except FileNotFoundError:  # it ended meanwhile
                    continue
                if WORKER in cmdline:
                    pids.append(int(pid))
        return pids

    def signal_workers(self, sig: int) -> list[int]:
        pids = self.workers()
        for pid in pids:
            os.kill(pid, sig)
        return pids


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    process, base, log = start_server(tmp_path_factory.mktemp("roomworkers") / "runs.sqlite3")
    try:
        yield Server(process, base)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as browser:
        yield browser


def new_room(base: str) -> dict[str, Any]:
    body = {"scenario": "free-play", "seed": 4, "minutes": 600, "speed": 16, "engine": "request"}
    request = urllib.request.Request(
        base + "/api/gameday/rooms", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return dict(json.loads(response.read()))


def facilitator_page(browser: Any, url: str) -> Any:
    page = browser.new_context(viewport={"width": 1366, "height": 768}).new_page()
    page.goto(url)
    page.locator("#facilitator").wait_for()
    return page


def run_state(page: Any) -> str:
    return str(page.locator("#run-state").inner_text())


def clock_moves(page: Any) -> None:
    shown = page.locator("#clock").inner_text()
    page.wait_for_function("(c) => document.getElementById('clock').textContent !== c", arg=shown, timeout=120_000)


def test_a_room_whose_worker_cannot_keep_its_speed_says_it_plays_slower(server: Server, browser: Any) -> None:
    room = new_room(server.base)
    page = facilitator_page(browser, server.base + room["facilitator_url"])
    watch = Watch(page)
    page.locator("#f-pause").click()  # resume, at 16x
    clock_moves(page)  # a minute computed by the room's worker (the first loads the engine: not counted)
    clock_moves(page)
    stopped = server.signal_workers(signal.SIGSTOP)
    assert stopped, "no worker process holds the room"
    try:
        # every tick of the room's clock now finds its minute unfinished: the pacer's share falls under 80 %
        page.wait_for_function(
            "() => document.getElementById('run-state').textContent.includes('instead of 16×')", timeout=60_000
        )
    finally:
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)
    line = run_state(page)
    assert line.startswith("running · The server is busy: this run plays at about ")
    actual = float(line.split("about ", 1)[1].split("×", 1)[0])
    assert 0 <= actual < 16 * 0.8  # what the pacer says: under 80 % of the room's speed
    page.locator("#f-pause").click()  # paused: nothing to keep up with, the line goes
    page.wait_for_function("() => document.getElementById('run-state').textContent === 'paused'")
    watch.check()


def test_a_room_whose_worker_is_lost_says_so_in_its_language(server: Server, browser: Any) -> None:
    room = new_room(server.base)
    da = translations("da").gettext
    lost_now = da(
        "this room's worker process was lost (the server goes on); reconnecting: the room comes back paused from its "
        "log…"
    )
    back = da(
        "paused: this room's worker process was lost (the server goes on); the room came back from its log, and the "
        "facilitator resumes"
    )
    assert lost_now.startswith("dette rums") and back.startswith("pause: dette rums")  # translated (an oracle)
    page = facilitator_page(browser, server.base + room["facilitator_url"].replace("#", "?lang=da#"))
    assert page.locator("html").get_attribute("lang") == "da"
    page.locator("#f-step").click()  # a minute computed: the room's worker holds its run
    page.wait_for_function("() => document.getElementById('clock').textContent !== ''")
    clock_moves(page)
    # every text the run's state shows from here on (the lost worker's lines are brief: the page reconnects)
    page.evaluate(
        """() => {
            window.shown = [];
            const box = document.getElementById('run-state');
            new MutationObserver(() => window.shown.push(box.textContent)).observe(
                box, {childList: true, characterData: true, subtree: true});
        }"""
    )
    assert server.signal_workers(signal.SIGKILL)
    page.locator("#f-step").click()  # the next minute finds the worker gone
    page.wait_for_function("(t) => document.getElementById('run-state').textContent === t", arg=back, timeout=120_000)
    shown = page.evaluate("window.shown")
    assert lost_now in shown and da(RESTORED) not in shown  # not "the server restarted": it did not
    assert page.locator("#gd-error").is_hidden()  # not a refusal ("Ikke udført: …")
    page.locator("#f-pause").click()  # the facilitator resumes it
    page.wait_for_function("(t) => document.getElementById('run-state').textContent.startsWith(t)", arg=da("running"))
    clock_moves(page)

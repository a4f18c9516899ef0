"""A game day in real headless Chromium against a real server: one browser, a context per person (the
facilitator, two players, an observer) in one room. The facilitator injects a hidden cache flush; a player sees
only its symptoms and acts; the other player sees the action attributed; the observer cannot act; the exported
postmortem holds it all, in order."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser import chromium
from tests.server import running_server
from tests.test_console_browser import SCREENSHOTS, Watch

# Wall-clock pacing (a browser at 16×, latency bounds): runs alone, after the parallel part of `make test`.
pytestmark = pytest.mark.serial


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_server(tmp_path_factory.mktemp("gameday") / "runs.sqlite3") as base:
        yield base


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One browser for the module; each person gets a context of their own (cookies, storage, a window)."""
    with chromium() as browser:
        yield browser


def person(browser: Any, width: int = 1366, height: int = 768) -> tuple[Any, Watch]:
    context = browser.new_context(viewport={"width": width, "height": height}, accept_downloads=True)
    page = context.new_page()
    return page, Watch(page)


def join(page: Any, url: str, name: str, role: str) -> None:
    page.goto(url)
    page.locator("#join-name").fill(name)
    page.locator("#join-role").select_option(role)
    page.get_by_role("button", name="Join").click()
    page.locator("#you", has_text=f"You are {name}").wait_for()


def step_to(page: Any, clock: str) -> None:
    """The facilitator steps the run, one minute a click, until the clock shows ``clock``."""
    for _ in range(30):
        if page.locator("#clock").inner_text() == clock:
            return
        shown = page.locator("#clock").inner_text()
        page.locator("#f-step").click()
        page.wait_for_function("(c) => document.getElementById('clock').textContent !== c", arg=shown)
    raise AssertionError(f"the clock never showed {clock}")


def test_a_game_day_from_the_hidden_fault_to_the_postmortem(server: str, browser: Any, tmp_path: Path) -> None:
    facilitator, fw = person(browser)
    facilitator.goto(server + "/gameday")
    facilitator.locator("#room-title").fill("Tuesday game day")
    facilitator.locator("#room-scenario").select_option("free-play")
    facilitator.locator("#room-seed").fill("4")
    facilitator.get_by_role("button", name="Create the room").click()
    facilitator.locator("#links").wait_for()
    player_url = facilitator.locator("#link-player").input_value()
    facilitator_url = facilitator.locator("#link-facilitator").input_value()
    assert "#key=" in player_url and player_url != facilitator_url
    facilitator.locator("#open-facilitator").click()
    facilitator.locator("#facilitator").wait_for()
    assert facilitator.locator("#player-link").input_value() == player_url

    ann, aw = person(browser)
    bob, bw = person(browser, 390, 844)  # one of the team on a phone
    olu, ow = person(browser)
    join(ann, player_url, "Ann", "operations")
    join(bob, player_url, "Bob", "commander")
    join(olu, player_url, "Olu", "observer")
    stranger, _ = person(browser)
    stranger.goto(player_url.split("#")[0] + "#key=wrong")  # the room's id is not enough
    stranger.locator("#no-key", has_text="wrong or missing token").wait_for()

    # the facilitator prepares a hidden cache flush for 08:02 (players see only its symptoms)
    facilitator.locator("#fault-kind").select_option("flush")
    facilitator.locator("#fault-at").fill("08:02")
    assert facilitator.locator("#fault-hidden").is_checked()
    facilitator.get_by_role("button", name="Inject").click()
    facilitator.locator("#fault-list li", has_text="cache flush at 08:02 · hidden").wait_for()
    step_to(facilitator, "08:06")
    for page in (ann, bob, olu):
        page.locator("#clock", has_text="08:06").wait_for()
    facilitator.locator("#events", has_text="cache flushed").wait_for()
    for page in (ann, bob, olu):
        assert "cache flushed" not in page.locator("#events").inner_text()
        assert "fault" not in page.locator("#channel").inner_text()
    hit = float(ann.locator("#m-cache_hit").inner_text().split("%")[0].replace(",", "."))
    assert hit < 90  # the symptom: the cache's hit ratio fell

    # the observer cannot act; Ann acts; Bob (and the facilitator) see it attributed
    assert olu.get_by_role("button", name="Warm up cache").is_disabled()
    assert olu.locator("#say-form").is_hidden()
    ann.get_by_role("button", name="Warm up cache").click()
    bob.locator("#channel li", has_text="Ann (operations): Warm up cache").wait_for()
    facilitator.locator("#channel li", has_text="Ann (operations): Warm up cache").wait_for()
    bob.locator("#say-text").fill("Ann, watch the database while the cache warms")
    bob.get_by_role("button", name="Send").click()
    ann.locator("#channel li", has_text="Bob (incident commander): Ann, watch the database").wait_for()
    step_to(facilitator, "08:08")

    shots = {}
    for name, page in (("gameday-facilitator", facilitator), ("gameday-player", ann), ("gameday-phone", bob)):
        shots[name] = tmp_path / f"{name}.png"
        page.screenshot(path=str(shots[name]), full_page=True)
        assert page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth") <= 0, name
    if os.environ.get("ONCALLSIM_UPDATE_SCREENSHOTS") == "1":
        facilitator.screenshot(path=str(SCREENSHOTS / "gameday.png"))

    facilitator.on("dialog", lambda dialog: dialog.accept())
    facilitator.locator("#f-close").click()
    for page in (facilitator, ann, bob, olu):
        page.locator("#debrief").wait_for(
            timeout=180_000
        )  # the debrief computes the counterfactuals (a compile on a fresh machine)
        page.locator("#d-timeline tr").first.wait_for()
    rows = [r.strip() for r in ann.locator("#d-timeline tr").all_inner_texts()]
    fault = next(i for i, r in enumerate(rows) if "hidden from the players: cache flush at 08:02" in r)
    action = next(i for i, r in enumerate(rows) if "Ann (operations): Warm up cache" in r)
    message = next(i for i, r in enumerate(rows) if "Bob (incident commander) in the channel" in r)
    assert fault < action < message
    assert "cache flushed" in ann.locator("#events").inner_text()  # revealed once the run is over
    ann.locator("#channel li", has_text="Ann (operations): Warm up cache").wait_for()  # the log redrawn whole
    ann.screenshot(path=str(tmp_path / "gameday-debrief.png"), full_page=True)

    with ann.expect_download() as download:
        ann.get_by_role("button", name="Download the postmortem draft (Markdown)").click()
    markdown = Path(download.value.path()).read_text()
    for heading in ("## Summary", "## Impact", "## Key intervals", "## Timeline", "## Action items"):
        assert heading in markdown
    assert (
        markdown.index("hidden from the players: cache flush at 08:02")
        < markdown.index("Ann (operations): Warm up cache")
        < markdown.index("Bob (incident commander) in the channel")
    )
    for watch in (fw, aw, bw, ow):
        watch.check()
    for page in (facilitator, ann, bob, olu, stranger):
        page.context.close()


def test_a_request_engine_room_folds_its_overload_controls_under_resilience(server: str, browser: Any) -> None:
    """As on the console: the retry storm's room shows its Resilience group folded; a player opens it from the
    keyboard, switches CoDel on and the room sees it attributed; the rest of the controls stay outside."""
    import json
    import urllib.request

    from oncallsim.web.labels import resilience_controls

    body = json.dumps({"scenario": "retry-storm", "seed": 3, "title": "Storm drill"}).encode()
    request = urllib.request.Request(
        server + "/api/gameday/rooms", body, {"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=300) as response:
        room = json.loads(response.read())
    assert room["engine"] == "request"
    ann, aw = person(browser)
    join(ann, server + room["player_url"], "Ann", "operations")
    group = ann.locator("details.gd-resilience")
    group.wait_for(state="attached")
    assert group.get_attribute("open") is None
    inside = group.locator("[data-control]").evaluate_all("(els) => [...new Set(els.map((e) => e.dataset.control))]")
    assert inside == resilience_controls("request")
    outside = ann.locator("#controls > .gd-control [data-control]").evaluate_all(
        "(els) => [...new Set(els.map((e) => e.dataset.control))]"
    )
    assert "floor" in outside and not set(outside) & set(inside)
    group.locator("summary").focus()
    ann.keyboard.press("Enter")
    ann.wait_for_function("() => document.querySelector('details.gd-resilience').open")
    group.locator('select[data-control="queue_discipline"]').select_option("codel")
    group.locator('button[data-control="queue_discipline"]').click()
    ann.locator("#channel li", has_text="Ann (operations): Queue discipline").wait_for()
    aw.check()
    ann.context.close()

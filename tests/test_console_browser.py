"""The console in real headless Chromium against a real uvicorn server on loopback."""

from __future__ import annotations

import json
import os
import re
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from tests.browser import chromium_page
from tests.server import running_server

# Wall-clock pacing (a browser at 16×, latency bounds): runs alone, after the parallel part of `make test`.
pytestmark = pytest.mark.serial

SCREENSHOTS = Path(__file__).resolve().parent.parent / "docs" / "images"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    with running_server(tmp_path / "runs.sqlite3") as base:
        yield base


class Watch:
    """Collects what the page did: errors and every request's URL."""

    def __init__(self, page: Any) -> None:
        self.errors: list[str] = []
        self.requests: list[str] = []
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("request", lambda r: self.requests.append(r.url))

    def check(self) -> None:
        assert self.errors == []
        for url in self.requests:
            host = urlparse(url).hostname
            assert urlparse(url).scheme == "data" or host in {"127.0.0.1", "localhost"}, url


def start(page: Any, base: str, title: str, seed: int, speed: int, difficulty: str = "hard") -> str:
    """Start from the scenario's card; the run opens paused on its briefing, and starts from there."""
    page.goto(base + "/")
    card = page.locator("form.card", has=page.get_by_role("heading", name=title))
    card.get_by_label("Seed").fill(str(seed))
    card.get_by_label("Difficulty").select_option(difficulty)
    card.get_by_label("Speed").select_option(str(speed))
    card.get_by_role("button", name="Start").click()
    page.wait_for_url(re.compile(r"/runs/[0-9a-f]+$"))
    page.get_by_role("dialog", name=title).get_by_role("button", name="Start the run").click()
    page.wait_for_function("() => document.querySelector('main.console').dataset.paused === 'false'")
    return page.url.rsplit("/", 1)[1]


def api(base: str, path: str) -> Any:
    with urllib.request.urlopen(base + path, timeout=10) as response:
        return json.loads(response.read())


def start_short(page: Any, base: str, scenario: str, seed: int, minutes: int) -> str:
    """A run made through the API (as short as the test needs: nothing waits on minutes it does not use)."""
    body = {"scenario": scenario, "seed": seed, "speed": 16, "minutes": minutes, "difficulty": "hard"}
    body = json.dumps(body).encode()
    request = urllib.request.Request(base + "/api/runs", body, {"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        run_id = str(json.loads(response.read())["id"])
    page.goto(f"{base}/runs/{run_id}")
    return run_id


def charts_drew(page: Any) -> None:
    page.wait_for_function(
        "() => document.querySelectorAll('.chart .main-svg').length >= 12 && "
        "[...document.querySelectorAll('.chart .scatterlayer .trace path.js-line')]"
        ".some(p => (p.getAttribute('d') || '').length > 50)"
    )


def test_bad_deploy_page_rollback_and_debrief(server: str) -> None:
    with chromium_page() as page:
        watch = Watch(page)
        # the page fires at 09:28 and the rollback is clean five minutes after it is pressed: 100 minutes leave
        # ~4 s of wall clock at 16x for the click (a busy machine needs them), and nothing waits for the other 20
        run_id = start_short(page, server, "bad-deploy", seed=7, minutes=100)
        # the end is said at once ("over": the debrief is being computed), then the debrief when it is ready
        page.evaluate(
            """() => { const root = document.querySelector('main.console'); window.debriefStates = [];
            new MutationObserver(() => window.debriefStates.push(root.dataset.debrief))
              .observe(root, {attributes: true, attributeFilter: ['data-debrief']}); }"""
        )
        page.get_by_role("alert").filter(has_text="PAGE").wait_for()
        charts_drew(page)
        if os.environ.get("ONCALLSIM_UPDATE_SCREENSHOTS") == "1":
            page.get_by_role("button", name="Pause").click()
            page.wait_for_function("() => document.querySelector('main.console').dataset.paused === 'true'")
            page.wait_for_function(
                "() => document.querySelector('main.console').dataset.charted === "
                "document.querySelector('main.console').dataset.records"
            )
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / "console-bad-deploy.png"))
            page.get_by_role("button", name="Resume").click()
        page.get_by_role("button", name="Roll back").click()
        started = page.locator("#events li", has_text="rollback started")
        started.wait_for()
        pressed_clock = started.locator("time").inner_text()
        page.locator("#s-bad_build_share", has_text=re.compile(r"^0%$")).wait_for()
        ready_clock = page.locator("#events li", has_text="rollback ready").locator("time").inner_text()
        minutes = lambda hhmm: int(hhmm[:2]) * 60 + int(hhmm[3:])  # noqa: E731
        assert minutes(ready_clock) - minutes(pressed_clock) == 4  # prepared minutes m … m+4, clean from m+5
        records = api(server, f"/api/runs/{run_id}")["records"]
        pressed = next(r["minute"] for r in records if any(e["code"] == "rollback_started" for e in r["events"]))
        clean = next(r["minute"] for r in records if r["minute"] > pressed and r["bad_build_share"] == 0.0)
        assert clean == pressed + 5
        page.get_by_role("link", name="Debrief").wait_for()
        page.wait_for_function("() => document.querySelector('main.console').dataset.debrief === 'ready'")
        assert page.evaluate("window.debriefStates") == ["computing", "ready"]
        with page.expect_navigation(timeout=120_000):  # the debrief computes its counterfactuals first
            page.get_by_role("link", name="Debrief").click()
        page.get_by_role("heading", name="Score card").wait_for()
        page.locator("#debrief-chart .main-svg").first.wait_for()
        assert "hands-off" in page.locator("#counterfactuals").inner_text()
        watch.check()


def step_once(page: Any) -> None:
    """Press "Step one minute" and wait for that minute to arrive and render."""
    count = int(page.locator("main.console").get_attribute("data-records") or "0")
    page.get_by_role("button", name="Step one minute").click()
    page.wait_for_function("(n) => Number(document.querySelector('main.console').dataset.records) > n", arg=count)


def test_cache_flush_feature_off_lowers_db_utilization(server: str) -> None:
    with chromium_page() as page:
        watch = Watch(page)
        start(page, server, "Cache flush", seed=3, speed=4)  # 11:30 start, flush at 12:00: pause well before
        page.wait_for_function("() => document.getElementById('clock').textContent >= '11:36'")
        page.get_by_role("button", name="Pause").click()
        page.wait_for_function("() => document.querySelector('main.console').dataset.paused === 'true'")
        flushed = page.locator("#events li", has_text="cache flushed")
        while flushed.count() == 0:
            step_once(page)
        before = float(page.locator("#s-db_utilization").inner_text().rstrip("%"))
        assert before > 80
        page.get_by_role("switch", name="Recommendations feature").uncheck()
        page.locator("#error", has_text="recommendations").wait_for()  # the server logged the action
        step_once(page)
        page.locator("#events li", has_text="recommendations feature off").wait_for()
        after = float(page.locator("#s-db_utilization").inner_text().rstrip("%"))
        assert after < before - 15
        assert (
            page.locator("#s-recommendations_available").inner_text() == "0%"
        )  # English writes a percent without a space (CLDR)
        charts_drew(page)
        watch.check()


def test_keyboard_space_pauses_and_s_steps(server: str) -> None:
    with chromium_page() as page:
        watch = Watch(page)
        run_id = start(page, server, "Free play", seed=2, speed=2)
        page.wait_for_function("() => Number(document.querySelector('main.console').dataset.records) >= 1")
        page.locator("body").click(position={"x": 5, "y": 300})
        page.keyboard.press("Space")
        page.wait_for_function("() => document.querySelector('main.console').dataset.paused === 'true'")
        # the page shows "paused" as soon as it is asked; a minute already on its way may still arrive: count
        # once the page holds every minute the paused server computed
        snapshot = api(server, f"/api/runs/{run_id}")
        deadline = time.monotonic() + 30
        while not snapshot["state"]["paused"]:  # a condition with a deadline: the server applied the pause
            assert time.monotonic() < deadline, "the server never paused"
            snapshot = api(server, f"/api/runs/{run_id}")
        count = len(snapshot["records"])
        page.wait_for_function("(n) => Number(document.querySelector('main.console').dataset.records) === n", arg=count)
        # "S" clicks the step button, which is enabled once the page has the server's paused state (under load
        # that message can come after the API already says paused)
        page.wait_for_function("() => !document.getElementById('step').disabled")
        page.keyboard.press("s")
        page.wait_for_function(
            "(n) => Number(document.querySelector('main.console').dataset.records) === n + 1", arg=count
        )
        page.keyboard.press("Space")
        page.wait_for_function("() => document.querySelector('main.console').dataset.paused === 'false'")
        watch.check()


def test_a_switch_stays_where_the_operator_put_it_while_minutes_run(server: str) -> None:
    """At 16× a minute arrives every 60 ms; the switch must not flip back before its action applies."""
    with chromium_page() as page:
        watch = Watch(page)
        start(page, server, "Free play", seed=4, speed=16)
        page.wait_for_function("() => Number(document.querySelector('main.console').dataset.records) >= 3")
        cdp = page.context.new_cdp_session(page)
        cdp.send("Emulation.setCPUThrottlingRate", {"rate": 8})  # a slow laptop: minutes queue up behind the click
        switch = page.get_by_role("switch", name="Recommendations feature")
        # Playwright checks that the click changed the state and that it stays changed. Its wait for a still
        # element is skipped (force): under an 8× slower CPU the growing event log keeps moving the page, and
        # what the test is about is the state after the click, not whether the layout holds still.
        switch.uncheck(force=True)
        page.locator("#events li", has_text="recommendations feature off").wait_for()
        assert not switch.is_checked()
        watch.check()


def test_console_fits_a_laptop_screen(server: str) -> None:
    with chromium_page(width=1366, height=768) as page:
        watch = Watch(page)
        start(page, server, "Traffic surge", seed=1, speed=1)
        charts_drew(page)
        overflow = page.evaluate("() => document.documentElement.scrollHeight - window.innerHeight")
        assert overflow <= 0
        for name in ("Fleet floor", "Target utilization", "Cache TTL", "Load shedding"):
            assert page.get_by_label(name).count() == 1
        for name in ("Autoscaler", "Recommendations feature"):
            assert page.get_by_role("switch", name=name).count() == 1
        watch.check()


def test_pages_fit_a_phone_width(server: str) -> None:
    """At 390 px nothing is wider than the screen (a wide formula scrolls inside its card)."""
    with chromium_page(width=390, height=844) as page:
        watch = Watch(page)
        for path in ("/", "/model", "/runs"):
            page.goto(server + path)
            wider = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
            assert wider <= 0, f"{path} is {wider} px wider than a phone"
        start(page, server, "Free play", seed=1, speed=1)
        charts_drew(page)
        assert page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth") <= 0
        watch.check()


def test_no_page_makes_an_outside_request_or_breaks_its_policy(server: str) -> None:
    """Every page in Chromium with request interception: anything not on the server is aborted and counted; the
    CSP (no inline script) must not block anything the page needs (a violation is a console error)."""
    outside: list[str] = []
    with chromium_page() as page:
        watch = Watch(page)

        def route(r: Any) -> None:
            if urlparse(r.request.url).hostname in {"127.0.0.1"}:
                r.continue_()
            else:
                outside.append(r.request.url)
                r.abort()

        page.route("**/*", route)
        run_id = start(page, server, "Cache flush", seed=2, speed=16)
        charts_drew(page)
        for path in ("/", "/model", "/runs", "/play?scenario=surge&seed=5", f"/runs/{run_id}"):
            page.goto(server + path)
            page.wait_for_load_state("load")
        page.get_by_role("link", name="Debrief").wait_for(timeout=120_000)
        with page.expect_navigation(timeout=120_000):  # the debrief computes its counterfactuals first
            page.get_by_role("link", name="Debrief").click()
        page.locator("#debrief-chart .main-svg").first.wait_for()
        watch.errors = [e for e in watch.errors if "favicon" not in e and "404" not in e]
        watch.check()
    assert outside == []


def test_with_an_access_token_the_console_works_once_the_link_is_opened(tmp_path: Path) -> None:
    from tests.server import start_server

    token = "k" * 32
    process, base, log = start_server(tmp_path / "runs.sqlite3", extra=["--token", token], expect_status=401)
    try:
        with chromium_page() as page:
            refused = page.goto(base + "/")
            assert refused is not None and refused.status == 401
            page.goto(base + f"/?token={token}")  # sets the cookie, then shows the page without the token
            assert page.url == base + "/"
            run_id = start(page, base, "Bad deploy", seed=3, speed=16)
            charts_drew(page)  # the WebSocket carried the cookie
            assert run_id
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()


def start_paused(page: Any, base: str, scenario: str, seed: int, minutes: int) -> str:
    body = json.dumps({"scenario": scenario, "seed": seed, "speed": 1, "minutes": minutes, "paused": True}).encode()
    request = urllib.request.Request(base + "/api/runs", body, {"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        run_id = str(json.loads(response.read())["id"])
    page.goto(f"{base}/runs/{run_id}")
    page.wait_for_function("() => document.querySelector('main.console').dataset.paused === 'true'")
    page.get_by_role("dialog").wait_for()  # the briefing of a run at its first minute; Escape closes it, paused
    page.keyboard.press("Escape")
    page.get_by_role("dialog").wait_for(state="hidden")
    return run_id


def test_a_needless_rollback_asks_first_and_space_never_presses_it_again(server: str) -> None:
    with chromium_page() as page:
        watch = Watch(page)
        run_id = start_paused(page, server, "bad-deploy", seed=7, minutes=30)
        step_once(page)  # 09:01: no bad build is live
        rollback = page.get_by_role("button", name="Roll back")
        rollback.click()
        dialog = page.get_by_role("dialog")
        assert "No bad build is live" in dialog.inner_text()
        dialog.get_by_role("button", name="Cancel").click()
        rollback.click()
        page.get_by_role("button", name="Roll back anyway").click()
        page.locator("#error", has_text="Roll back — logged").wait_for()
        # asked with the mouse, the dialog leaves no focus on "Roll back": Space resumes the run instead of pressing
        # it again (from the keyboard the focus returns to the button, which keeps its keys: a second press asks)
        page.wait_for_function("() => document.activeElement.id !== 'c-rollback'")
        page.keyboard.press("Space")
        page.wait_for_function("() => document.querySelector('main.console').dataset.paused === 'false'")
        page.keyboard.press("Space")
        page.wait_for_function("() => document.querySelector('main.console').dataset.paused === 'true'")
        snapshot = api(server, f"/api/runs/{run_id}")
        logged = snapshot["actions"] + snapshot["state"]["pending"]  # applied, and logged for the next minute
        assert [a["control"] for a in logged] == ["rollback"]
        watch.check()


def test_paging_follows_the_alert_not_the_burn_rate(server: str) -> None:
    with chromium_page() as page:
        page.goto(server + "/")
        page.add_script_tag(url="/static/js/format.js")
        flag = "(r) => window.fmt.flag('burn_1h', r, 14.4)"
        assert page.evaluate(flag, {"burn_1h": 20.0, "page_firing": True}) == ["bad", "paging"]
        assert page.evaluate(flag, {"burn_1h": 20.0, "page_firing": False}) == ["warn", "burning"]
        assert page.evaluate(flag, {"burn_1h": 0.5, "page_firing": False}) == ["", ""]


def test_guided_run_briefs_stops_at_the_incident_and_the_page_and_alerts(server: str) -> None:
    """A first-time player's run: the briefing, the clock waiting at the incident and at the page with a hint,
    the tab's title and the banner saying PAGE, a rollback, and the debrief saying "guided"."""
    with chromium_page() as page:
        watch = Watch(page)
        body = {"scenario": "bad-deploy", "seed": 7, "speed": 2, "minutes": 40, "paused": True, "difficulty": "guided"}
        request = urllib.request.Request(
            server + "/api/runs", json.dumps(body).encode(), {"Content-Type": "application/json"}, method="POST"
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            run_id = str(json.loads(response.read())["id"])
        page.goto(f"{server}/runs/{run_id}")
        briefing = page.get_by_role("dialog", name="Bad deploy")
        for text in ("What is at stake", "error budget left ≥ 15%", "Roll back", "Space"):
            assert text in briefing.inner_text()
        assert page.locator("#speed option[value='4']").is_disabled()
        if os.environ.get("ONCALLSIM_UPDATE_SCREENSHOTS") == "1":
            page.screenshot(path=str(SCREENSHOTS / "console-briefing.png"))
        briefing.get_by_role("button", name="Start the run").click()
        note = page.get_by_role("dialog", name="Paused: the incident has begun")
        note.wait_for()
        assert "Traffic on the bad build" in note.inner_text()
        assert page.locator("#events li").first.inner_text() == "09:10 deploy started"
        note.get_by_role("button", name="Resume the run").click()
        note = page.get_by_role("dialog", name="Paused: the page fired")
        note.wait_for()
        assert page.title().startswith("⚠ PAGE")
        assert page.locator("main.console").get_attribute("data-alerted") == "1"
        note.get_by_role("button", name="Stay paused").click()
        page.get_by_role("button", name="Roll back").click()
        page.locator("#error", has_text="Roll back — logged").wait_for()
        page.keyboard.press("Space")  # resumes (it never presses the focused "Roll back" again)
        page.get_by_role("link", name="Debrief").wait_for(timeout=60_000)
        with page.expect_navigation(timeout=120_000):  # the debrief computes its counterfactuals first
            page.get_by_role("link", name="Debrief").click()
        assert page.locator("#difficulty").inner_text() == "guided"
        watch.check()

"""Layouts (a phone at 390 px, a laptop at 1366×768) and a run's lifecycle (end, abandon, filter, delete) in
real headless Chromium against a real server."""

from __future__ import annotations

import json
import os
import re
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser import chromium_page
from tests.server import running_server
from tests.test_console_browser import SCREENSHOTS, Watch, api, start_paused, step_once

# Wall-clock pacing (a browser at 16×, latency bounds): runs alone, after the parallel part of `make test`.
pytestmark = pytest.mark.serial


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_server(tmp_path_factory.mktemp("runs") / "runs.sqlite3") as base:
        yield base


def box(page: Any, selector: str) -> dict[str, float]:
    found = page.locator(selector).bounding_box()
    assert found is not None, selector
    return dict(found)


def test_on_a_phone_the_controls_sit_under_the_alert_and_charts_take_the_width(server: str) -> None:
    with chromium_page(width=390, height=844) as page:
        watch = Watch(page)
        start_paused(page, server, "bad-deploy", seed=7, minutes=30)
        step_once(page)
        page.wait_for_function("() => document.querySelectorAll('.chart .main-svg').length >= 12")
        assert page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth") <= 0
        controls, status = box(page, "#controls"), box(page, "#status-table")
        assert controls["y"] < status["y"]  # what to do comes before the numbers, right under the alert
        for chart in ("#chart-traffic", "#chart-fleet"):
            assert box(page, chart)["width"] >= 300  # one chart per row: ticks and legends have room
        watch.check()


def test_on_a_laptop_an_acknowledgement_moves_nothing_and_the_page_fits(server: str) -> None:
    with chromium_page(width=1366, height=768) as page:
        watch = Watch(page)
        start_paused(page, server, "cache-flush", seed=3, minutes=30)
        step_once(page)
        before = box(page, "#c-rollback"), box(page, "#c-recommendations")
        page.get_by_role("switch", name="Recommendations feature").uncheck()
        page.locator("#error", has_text="Recommendations feature: off — logged").wait_for()
        assert (box(page, "#c-rollback"), box(page, "#c-recommendations")) == before
        assert page.evaluate("() => document.documentElement.scrollHeight - window.innerHeight") <= 0
        assert box(page, "header.topbar")["height"] <= 50  # one line, with every button of the run in it
        watch.check()


def test_end_a_run_early_then_abandon_filter_and_delete(server: str) -> None:
    with chromium_page(width=1366, height=768) as page:
        watch = Watch(page)
        ended = start_paused(page, server, "surge", seed=4, minutes=60)
        for _ in range(3):
            step_once(page)
        page.get_by_role("button", name="End and debrief").click()
        page.get_by_role("dialog").get_by_role("button", name="End and debrief").click()
        page.get_by_role("heading", name="Score card").wait_for()  # the page goes to the debrief by itself
        assert api(server, f"/api/runs/{ended}/debrief")["minutes"] == 3
        dropped = start_paused(page, server, "cache-flush", seed=5, minutes=60)
        page.get_by_role("button", name="Abandon").click()
        page.get_by_role("dialog").get_by_role("button", name="Abandon the run").click()
        page.locator("#error", has_text="abandoned").wait_for()
        assert page.get_by_role("link", name="Debrief").is_hidden()
        page.goto(server + "/runs?show=abandoned")
        rows = page.locator("#runs tbody tr")
        assert rows.count() == 1 and "abandoned" in rows.first.inner_text()
        page.goto(server + "/runs?show=finished")
        assert page.locator(f"a[href='/runs/{ended}/debrief']").count() == 1
        page.goto(server + "/runs?show=abandoned")
        rows.first.get_by_text("Delete…").click()
        rows.first.get_by_role("button", name="Delete this run for good").click()
        page.wait_for_url(server + "/runs")
        assert dropped not in {r["id"] for r in api(server, "/api/runs")}
        watch.check()


def post(base: str, path: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        base + path, json.dumps(body).encode(), {"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def test_the_diagram_shows_the_flush_and_every_chart_marks_it(server: str) -> None:
    with chromium_page(width=1366, height=768) as page:
        watch = Watch(page)
        run_id = start_paused(page, server, "cache-flush", seed=3, minutes=60)
        for _ in range(32):  # 11:30 → 12:01, the flush at 12:00
            post(server, f"/api/runs/{run_id}/control", {"type": "step"})
        page.reload()
        page.wait_for_function("() => Number(document.querySelector('main.console').dataset.markers) >= 1")
        db = page.locator("#diagram [data-part='db']")
        said = page.locator("#diagram [data-part='db-text']").text_content() or ""  # "load ρ 85%"
        load = float(re.findall(r"([0-9.]+)\s*%", said)[-1])
        assert load >= 80  # the database takes every miss: its box says so in words and in colour
        assert db.get_attribute("data-level") == ("hot" if load >= 100 else "warm")
        assert (page.locator("#diagram [data-part='cache-text']").text_content() or "").startswith("hit ")
        post(server, f"/api/runs/{run_id}/actions", {"control": "recommendations", "value": False})
        post(server, f"/api/runs/{run_id}/control", {"type": "step"})  # arrives live, over the socket
        # the condition is the action's own marker: the page may fire in the same minute and count as a marker first
        page.wait_for_function(
            "() => [...document.querySelectorAll('#chart-traffic .annotation-text')]"
            ".some(e => e.textContent === 'recommendations feature off')"
        )
        # a marker line on each of the six charts, labelled on the first one
        assert page.locator("#chart-fleet .shapelayer path").count() >= 2
        labels = page.eval_on_selector_all("#chart-traffic .annotation-text", "els => els.map(e => e.textContent)")
        assert "cache flushed" in labels and "recommendations feature off" in labels
        legend = page.eval_on_selector_all("#chart-errors .legendtext", "els => els.map(e => e.textContent)")
        assert legend == ["error rate", "SLO allows 0.10%"]  # the English percent (CLDR)
        watch.check()


def test_the_tutorial_tours_the_panels_and_a_player_reacting_to_the_page_passes(server: str) -> None:
    """The issue's "done when": a first-time player on guided difficulty, reacting to the page, passes."""
    with chromium_page(width=1366, height=768) as page:
        watch = Watch(page)
        page.goto(server + "/")
        page.get_by_role("button", name="Start the tutorial").click()
        page.get_by_role("dialog", name="Tutorial: your first page").get_by_role("button", name="Start the run").click()
        tour = page.locator("#tour")
        for pointed in ("#status-table", "#diagram", "#chart-burn", "#controls", "#events"):
            tour.wait_for()
            assert page.locator(pointed).evaluate("el => el.classList.contains('toured')")
            if pointed == "#diagram" and os.environ.get("ONCALLSIM_UPDATE_SCREENSHOTS") == "1":
                page.screenshot(path=str(SCREENSHOTS / "console-tutorial-tour.png"))
            page.locator("#tour-next").click()
        page.wait_for_function("() => document.querySelector('main.console').dataset.paused === 'false'")
        page.get_by_role("dialog", name="Paused: the incident has begun").get_by_role(
            "button", name="Resume the run"
        ).click()
        note = page.get_by_role("dialog", name="Paused: the page fired")
        note.wait_for(timeout=60_000)
        note.get_by_role("button", name="Stay paused").click()
        page.get_by_role("button", name="Roll back").click()
        page.locator("#error", has_text="Roll back — logged").wait_for()
        page.keyboard.press("Space")
        page.locator("#tour", has_text="The run is over").wait_for(timeout=90_000)
        assert page.locator("#debrief-link").evaluate("el => el.classList.contains('toured')")
        page.locator("#tour-next").click()
        page.get_by_role("link", name="Debrief").click()
        assert page.locator(".verdict").inner_text() == "✔ all objectives met"
        if os.environ.get("ONCALLSIM_UPDATE_SCREENSHOTS") == "1":
            page.locator("#debrief-chart .main-svg").first.wait_for()
            page.screenshot(path=str(SCREENSHOTS / "debrief-tutorial.png"), full_page=True)
        watch.check()


def test_a_finished_run_can_be_watched_again_with_the_controls_disabled(server: str) -> None:
    with chromium_page() as page:
        watch = Watch(page)
        run_id = start_paused(page, server, "bad-deploy", seed=7, minutes=20)
        post(server, f"/api/runs/{run_id}/control", {"type": "speed", "value": 16})
        post(server, f"/api/runs/{run_id}/control", {"type": "resume"})
        replay = page.get_by_role("button", name="Watch again")
        replay.wait_for(timeout=60_000)
        assert page.get_by_role("button", name="Roll back").is_disabled()
        page.locator("#speed").select_option("16")
        replay.click()
        page.wait_for_function("() => document.querySelector('main.console').dataset.replaying === 'true'")
        page.wait_for_function("() => Number(document.querySelector('main.console').dataset.records) < 20")
        page.wait_for_function("() => document.querySelector('main.console').dataset.replaying === 'false'")
        assert page.locator("main.console").get_attribute("data-records") == "20"
        assert page.locator("#events li", has_text="deploy started").count() == 1  # the log rebuilt, not doubled
        assert page.get_by_role("button", name="Roll back").is_disabled()
        watch.check()

"""A chain of services in the console, in real headless Chromium: the diagram draws the graph from the run's own
records, the Services panel sets a service's timeout through the same action path as every control (and keeps a
value typed but not applied while the minutes' state messages arrive), and what was applied is in force in the
run's state. The run is stepped minute by minute (no wall-clock pacing)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser import chromium
from tests.server import post_json, running_server
from tests.test_console_browser import Watch, api


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_server(tmp_path_factory.mktemp("chains") / "runs.sqlite3") as base:
        yield base


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as browser:
        yield browser


def paused_run(base: str, scenario: str, seed: int) -> str:
    body = {"scenario": scenario, "seed": seed, "speed": 1, "minutes": 30, "paused": True, "engine": "request"}
    return str(post_json(base, "/api/runs", body)["id"])


def close_briefing(page: Any) -> None:
    """The run opens on its briefing; Escape closes it without starting the clock."""
    page.wait_for_selector("#briefing[open]")
    page.keyboard.press("Escape")
    page.wait_for_function("() => !document.getElementById('briefing').open")


def step(page: Any, to: int) -> None:
    page.locator("#step").click()
    page.wait_for_function(f"() => Number(document.querySelector('main.console').dataset.minute) >= {to}")


def test_the_cascade_is_drawn_and_a_timeout_set_from_the_services_panel(server: str, browser: Any) -> None:
    run = paused_run(server, "cascade", seed=3)
    page = browser.new_page(viewport={"width": 1366, "height": 768})
    try:
        watch = Watch(page)
        page.goto(f"{server}/runs/{run}")
        close_briefing(page)
        step(page, 1)
        diagram = page.locator("#diagram")
        assert diagram.locator("g[data-service]").count() == 3  # api, catalog, recs
        assert diagram.locator("line[data-edge]").count() == 2  # api → catalog, api → recs
        page.wait_for_function("() => document.querySelector('g[data-service=recs] text.value').textContent !== ''")
        assert "/s" in str(diagram.locator("g[data-service=api] text.value").first.text_content())
        assert page.locator("#chart-cache").count() == 0 and page.locator("#chart-services").count() == 1
        # a slow leaf's ms and a filled entry's tens of seconds on one chart: a logarithmic axis
        assert page.evaluate("() => document.getElementById('chart-services').layout.yaxis.type") == "log"
        # the entry's own fleet and deadline are not the panel's to set
        assert page.locator("#c-api\\.instances").is_disabled() and page.locator("#c-api\\.timeout_ms").is_disabled()
        assert page.locator("#c-api\\.timeout_ms").input_value() == "1000"  # its clients' deadline
        # typed, not applied: kept while the next minute's state arrives
        page.locator("#c-catalog\\.retries").fill("2")
        step(page, 2)
        assert page.locator("#c-catalog\\.retries").input_value() == "2"
        assert api(server, f"/api/runs/{run}")["state"]["services"]["catalog"]["retries"] == 0
        # a timeout on the slow leaf, applied with its service's button
        page.locator("#c-recs\\.timeout_ms").fill("150")
        page.get_by_role("button", name="Apply the settings of recs").click()
        step(page, 3)
        services = api(server, f"/api/runs/{run}")["state"]["services"]
        assert services["recs"]["timeout_ms"] == 150.0
        assert services["catalog"]["retries"] == 0  # another service's typed value was not sent with it
        page.wait_for_function("() => document.querySelector('#c-recs\\\\.timeout_ms').value === '150'")
        # the event log says it in the panel's words
        page.wait_for_function(
            "() => document.getElementById('events').textContent.includes('recs: Timeout (ms) set to 150')"
        )
        # Enter applies a service's settings from the keyboard
        page.locator("#c-catalog\\.retries").press("Enter")
        step(page, 4)
        assert api(server, f"/api/runs/{run}")["state"]["services"]["catalog"]["retries"] == 2.0
        # a switch: ticked with the keyboard (Space), applied with Enter, said as "on" in the event log
        switch = page.locator("#c-api\\.limiter")
        assert switch.get_attribute("type") == "checkbox" and not switch.is_checked()
        switch.focus()
        page.keyboard.press("Space")
        page.keyboard.press("Enter")
        step(page, 5)
        assert api(server, f"/api/runs/{run}")["state"]["services"]["api"]["limiter"] == 1.0
        page.wait_for_function(
            "() => document.getElementById('events').textContent.includes('api: Limiter (BBR) set to on')"
        )
        assert switch.is_checked()
        # a value out of range is refused with the server's one line, naming the control
        page.locator("#c-recs\\.retries").fill("9")
        page.locator("#c-recs\\.retries").press("Enter")
        # the refusal replaces the switch's acknowledgement in the same box: waited for by its words
        page.wait_for_function("() => document.querySelector('#error').textContent.includes('recs.retries')")
        # ... and its box shows the setting in force again, not the refused value
        page.wait_for_function("() => document.querySelector('#c-recs\\\\.retries').value === '0'")
        # a whole setting's fraction is sent as typed and refused, never rounded into a value nobody asked for
        page.locator("#c-catalog\\.retries").fill("2.5")
        page.locator("#c-catalog\\.retries").press("Enter")
        page.wait_for_function("() => document.querySelector('#error').textContent.includes('catalog.retries')")
        assert "got 2.5" in page.locator("#error").inner_text()
        page.wait_for_function("() => document.querySelector('#c-catalog\\\\.retries').value === '2'")
        # Escape abandons what was typed and leaves the box (Space then pauses, as anywhere on the page)
        page.locator("#c-catalog\\.retries").fill("4")
        page.locator("#c-catalog\\.retries").press("Escape")
        assert page.locator("#c-catalog\\.retries").input_value() == "2"
        assert page.evaluate("() => document.activeElement.id") != "c-catalog.retries"
        # a value applied is said as it was set (50.5 ms, not 51)
        page.locator("#c-recs\\.timeout_ms").fill("50.5")
        page.locator("#c-recs\\.timeout_ms").press("Enter")
        page.wait_for_function("() => document.querySelector('#error').textContent.includes('50.5 ms')")
        watch.check()
    finally:
        page.close()


def test_the_services_panel_fits_a_phone(server: str, browser: Any) -> None:
    run = paused_run(server, "retry-layers", seed=5)
    page = browser.new_page(viewport={"width": 390, "height": 844})
    try:
        watch = Watch(page)
        page.goto(f"{server}/runs/{run}")
        close_briefing(page)
        step(page, 1)
        panel = page.locator("#services")
        panel.scroll_into_view_if_needed()
        box = panel.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
        for name in ("api", "orders", "db"):
            field = page.locator(f"#c-{name}\\.retries")
            field_box = field.bounding_box()
            assert field_box is not None and field_box["x"] + field_box["width"] <= 390, name
        watch.check()
    finally:
        page.close()
    # right to left, the clock's badge sits at the page's end (the left), not over the brand (a newcomer's Arabic
    # phone had it on the right, over "oncallsim")
    arabic = browser.new_page(viewport={"width": 390, "height": 844})
    try:
        arabic.goto(f"{server}/runs/{run}?lang=ar")
        arabic.locator("#clock").wait_for()
        if arabic.locator("#briefing[open]").count():
            close_briefing(arabic)
        brand, clock = arabic.locator(".brand").bounding_box(), arabic.locator("#clock").bounding_box()
        assert brand is not None and clock is not None
        assert clock["x"] + clock["width"] <= brand["x"] or brand["x"] + brand["width"] <= clock["x"], (brand, clock)
        assert clock["x"] < 390 / 2  # at the left
    finally:
        arabic.close()


# A leaf failing half its attempts from the first minute: its box says so in words, and that the clients' failed
# requests began there (the entry, which saw them all, began none).
FAILING_LEAF = """
id = "failing-leaf"
version = 1
title = "A failing leaf"
summary = "The api calls db; db fails half its attempts."
briefing = "The api calls db on every request."
start = "09:00"
minutes = 10

[params]
base_requests_per_s = 200.0
diurnal_amplitude = 0.0

[graph]
entry = "api"
deadline_ms = 1000

[graph.services.api]
instances = 4
workers_per_instance = 8
service_ms = 2
calls = [{ to = "db", network_ms = 1 }]

[graph.services.db]
instances = 4
workers_per_instance = 8
service_ms = 4

[[events]]
kind = "service"
service = "db"
at = "09:00"
minutes = 10
errors = 0.5
"""


def test_the_diagram_says_where_the_failures_begin(server: str, browser: Any) -> None:
    body = {"scenario": "failing-leaf", "scenario_toml": FAILING_LEAF, "seed": 1, "speed": 1, "paused": True}
    run = str(post_json(server, "/api/runs", body)["id"])
    page = browser.new_page(viewport={"width": 1366, "height": 768})
    try:
        watch = Watch(page)
        page.goto(f"{server}/runs/{run}")
        close_briefing(page)
        step(page, 1)
        db = page.locator("#diagram g[data-service=db]")
        page.wait_for_function("() => document.querySelector('g[data-service=db] text.failing').textContent !== ''")
        words = str(db.locator("text.failing").text_content())
        failed_share = float(words.split("%")[0])
        # about half its attempts fail (the event's 0.5; 200 a second for a minute: a binomial band far inside 40-60)
        assert 40 <= failed_share <= 60 and "began here" in words, words
        assert db.get_attribute("data-level") == "hot"
        assert float(str(db.get_attribute("data-begun"))) > 0
        assert float(str(page.locator("#diagram g[data-service=api]").get_attribute("data-begun"))) == 0
        watch.check()
    finally:
        page.close()


def test_guided_fan_out_stops_after_its_first_minute_with_its_hint(server: str, browser: Any) -> None:
    """The fan-out lesson has no event: on guided its clock stops after the first minute with its hint (naming the
    page's hedging), which the person applies from the Services panel before the objective's minutes are lost."""
    body = {"scenario": "fan-out", "seed": 4, "speed": 1, "paused": True, "difficulty": "guided"}
    run = str(post_json(server, "/api/runs", body)["id"])
    page = browser.new_page(viewport={"width": 390, "height": 844})
    try:
        watch = Watch(page)
        page.goto(f"{server}/runs/{run}")
        page.wait_for_selector("#briefing[open]")
        assert "Hedge after quantile" in page.locator("#briefing").inner_text()  # the briefing names the setting
        page.locator("#briefing-go").click()
        page.wait_for_selector("#note[open]")
        assert page.locator("#clock").inner_text() == "09:01"
        # a chain of two columns is drawn whole on a phone (it shrinks a little rather than hide the shards)
        for name in ("page", "shard"):
            box = page.locator(f"#diagram g[data-service={name}]").bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, name
        assert "Hedge after quantile to 0.95" in page.locator("#note-text").inner_text()
        page.locator("#note-stay").click()
        field = page.locator("#c-page\\.hedge_after_quantile")
        field.fill("0.95")
        page.get_by_role("button", name="Apply the settings of page").click()
        page.wait_for_function("() => !document.querySelector('#error').hidden")
        assert "0.95" in page.locator("#error").inner_text()
        step(page, 2)
        assert api(server, f"/api/runs/{run}")["state"]["services"]["page"]["hedge_after_quantile"] == 0.95
        watch.check()
    finally:
        page.close()


def test_normal_fan_out_stops_once_and_flags_its_p99_over_the_target(server: str, browser: Any) -> None:
    """On normal the fan-out, which never pages, stops after its first minute too (no hint, a line saying why the
    clock waits), and the status table flags its p99 over the scenario's 120 ms target."""
    body = {"scenario": "fan-out", "seed": 4, "speed": 1, "paused": True, "difficulty": "normal"}
    run = str(post_json(server, "/api/runs", body)["id"])
    page = browser.new_page(viewport={"width": 1366, "height": 768})
    try:
        watch = Watch(page)
        page.goto(f"{server}/runs/{run}")
        page.wait_for_selector("#briefing[open]")
        page.locator("#briefing-go").click()
        page.wait_for_selector("#note[open]")
        assert page.locator("#clock").inner_text() == "09:01"
        assert "will not page" in page.locator("#note-text").inner_text()
        assert "Hedge" not in page.locator("#note-text").inner_text()  # normal: the scenario's hint is guided's
        assert page.locator("#f-p99_ms").text_content() == "over target"  # (shown in capitals)
        watch.check()
    finally:
        page.close()


def test_a_chains_debrief_fits_a_phone(server: str, browser: Any, tmp_path: Path) -> None:
    """The debrief's wide tables ("Where the failures began", the decisions) scroll in their own box on a phone;
    the page itself does not (they pushed it to 521 px at 390)."""
    body = {"scenario": "failing-leaf", "scenario_toml": FAILING_LEAF, "seed": 2, "speed": 16, "paused": True}
    run = str(post_json(server, "/api/runs", body)["id"])
    post_json(server, f"/api/runs/{run}/actions", {"control": "db.retries", "value": 0})
    post_json(server, f"/api/runs/{run}/actions", {"control": "api.retries", "value": 1})
    post_json(server, f"/api/runs/{run}/control", {"type": "resume"})
    page = browser.new_page(viewport={"width": 390, "height": 844})
    try:
        watch = Watch(page)
        page.goto(f"{server}/runs/{run}")
        page.wait_for_function("() => !document.getElementById('debrief-link').hidden", timeout=120_000)
        page.goto(f"{server}/runs/{run}/debrief", timeout=300_000)
        assert page.locator("#origins tr[data-service=db]").count() == 1
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
        # the chart's plots get the width: its legends give way on a phone (a plot's hover names each series)
        page.wait_for_function("() => document.querySelector('#debrief-chart .main-svg') !== null")
        assert page.evaluate("() => document.getElementById('debrief-chart').layout.showlegend") is False
        page.locator("#debrief-chart").screenshot(path=str(tmp_path / "chain-debrief-phone-chart.png"))
        watch.check()
    finally:
        page.close()


def test_the_debrief_link_waits_on_the_console_while_the_debrief_is_computed(server: str, browser: Any) -> None:
    """Clicked while the debrief's replays run (seconds for an hour of a chain), the link keeps the console open
    and says the debrief opens as soon as it is computed; then the page goes there by itself."""
    body = {"scenario": "retry-layers", "seed": 6, "speed": 16, "paused": True, "engine": "request"}
    run = str(post_json(server, "/api/runs", body)["id"])
    page = browser.new_page(viewport={"width": 1366, "height": 768})
    try:
        watch = Watch(page)
        page.goto(f"{server}/runs/{run}")
        page.wait_for_selector("#briefing[open]")
        page.locator("#briefing-go").click()
        computing = "() => document.querySelector('main.console').dataset.debrief === 'computing'"
        page.wait_for_function(computing, timeout=120_000)
        page.locator("#debrief-link").click()
        assert page.url.endswith(f"/runs/{run}")
        assert "opens here as soon as it is computed" in page.locator("#error").inner_text()
        page.wait_for_url(f"**/runs/{run}/debrief", timeout=300_000)
        assert page.locator("#origins tr[data-service=db]").count() == 1
        watch.check()
    finally:
        page.close()

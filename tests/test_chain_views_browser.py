"""What a chain's console shows, in real headless Chromium: its first chart is each service's utilization (a
chain has no one capacity to draw its requests against), a line per service holding the very numbers the
server's records carry; and its diagram fits a phone's width (rows instead of columns) while a desktop keeps the
columns. The runs are stepped minute by minute (no wall-clock pacing); the values compared come from the server's
own snapshot of the run, not from the page."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser import chromium
from tests.server import post_json, running_server, wait_engines_ready
from tests.test_chain_console_browser import FAILING_LEAF, close_briefing, step
from tests.test_console_browser import Watch, api

LESSONS = {"cascade": ("api", "catalog", "recs"), "retry-layers": ("api", "orders", "db"), "fan-out": ("page", "shard")}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_server(tmp_path_factory.mktemp("chain-views") / "runs.sqlite3") as base:
        wait_engines_ready(base)
        yield base


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as browser:
        yield browser


def paused_run(base: str, scenario: str, seed: int, engine: str = "request") -> str:
    body = {"scenario": scenario, "seed": seed, "speed": 1, "minutes": 30, "paused": True, "engine": engine}
    return str(post_json(base, "/api/runs", body)["id"])


def open_run(browser: Any, base: str, run: str, width: int, height: int, minutes: int) -> Any:
    page = browser.new_page(viewport={"width": width, "height": height})
    page.goto(f"{base}/runs/{run}")
    close_briefing(page)
    for minute in range(1, minutes + 1):
        step(page, minute)
    page.wait_for_function(f"() => Number(document.querySelector('main.console').dataset.charted) >= {minutes}")
    return page


def chart_traces(page: Any, chart: str) -> list[dict[str, Any]]:
    """The chart's traces as plotly holds them: their names (the bidi isolates of Arabic aside) and values."""
    return list(page.evaluate(f"() => document.getElementById('{chart}').data.map((d) => ({{name: d.name, y: d.y}}))"))


def test_a_chains_first_chart_is_each_services_utilization_from_the_servers_records(server: str, browser: Any) -> None:
    run = paused_run(server, "cascade", seed=4)
    page = open_run(browser, server, run, 1366, 768, minutes=3)
    try:
        watch = Watch(page)
        records = api(server, f"/api/runs/{run}")["records"][:3]
        assert len(records) == 3
        traces = {trace["name"]: trace["y"] for trace in chart_traces(page, "chart-traffic")}
        assert set(traces) == {*LESSONS["cascade"], "all workers busy"}
        for name in LESSONS["cascade"]:
            expected = [100 * r["extras"]["graph"]["services"][name]["utilization"] for r in records]
            assert traces[name] == pytest.approx(expected, rel=1e-12), name
            assert any(v > 0 for v in expected), name  # a service that worked: the comparison compares something
        assert traces["all workers busy"] == [100, 100, 100]
        # the legend names the services alone (the 100 % line is named on hover): two columns in every language
        listed = page.evaluate(
            "() => document.getElementById('chart-traffic').data"
            ".filter((d) => d.showlegend !== false).map((d) => d.name)"
        )
        assert listed == list(LESSONS["cascade"])
        title = page.evaluate("() => document.getElementById('chart-traffic').layout.title.text")
        assert title == "Each service's utilization: workers busy (%)"
        label = page.locator("#chart-traffic").get_attribute("aria-label")
        assert label == "Each service's utilization: the share of its workers busy"
        watch.check()
    finally:
        page.close()


def test_the_one_service_console_still_charts_requests_against_capacity(server: str, browser: Any) -> None:
    run = paused_run(server, "surge", seed=4, engine="minute")
    page = open_run(browser, server, run, 1366, 768, minutes=1)
    try:
        records = api(server, f"/api/runs/{run}")["records"][:1]
        traces = {trace["name"]: trace["y"] for trace in chart_traces(page, "chart-traffic")}
        assert set(traces) == {"requests", "capacity"}
        assert traces["requests"] == pytest.approx([records[0]["requests_per_s"]], rel=1e-12)
        assert traces["capacity"] == pytest.approx([records[0]["capacity_per_s"]], rel=1e-12)
        assert page.evaluate("() => document.getElementById('chart-traffic').layout.title.text") == (
            "Requests vs capacity (req/s)"
        )
        assert page.locator("#chart-traffic").get_attribute("aria-label") == "Requests vs capacity"
    finally:
        page.close()


@pytest.mark.parametrize("lesson", sorted(LESSONS))
def test_a_chains_diagram_fits_a_phone_without_scrolling_sideways(server: str, browser: Any, lesson: str) -> None:
    run = paused_run(server, lesson, seed=5)
    page = open_run(browser, server, run, 390, 844, minutes=1)
    try:
        watch = Watch(page)
        page.locator("#diagram").scroll_into_view_if_needed()
        assert page.evaluate("() => document.documentElement.scrollWidth <= document.documentElement.clientWidth")
        panel = page.locator(".diagram-scroll")
        assert panel.evaluate("el => el.scrollWidth <= el.clientWidth")
        assert page.locator("#diagram").get_attribute("data-layout") == "rows"
        for name in LESSONS[lesson]:
            box = page.locator(f"g[data-service='{name}'] rect").bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, name
            # its words still readable: the box at 80 % of its size (184 px) or more
            assert box["width"] >= 0.8 * 184, name
        # the entry above its callees: the calls run downwards
        entry = page.locator(f"g[data-service='{LESSONS[lesson][0]}'] rect").bounding_box()
        last = page.locator(f"g[data-service='{LESSONS[lesson][-1]}'] rect").bounding_box()
        assert entry is not None and last is not None and entry["y"] + entry["height"] < last["y"]
        watch.check()
    finally:
        page.close()


def test_a_desktop_keeps_the_chains_columns(server: str, browser: Any) -> None:
    """At 1366×768 the retry-layers' three services stand side by side as before: a column each (184 px boxes
    64 px apart), one row, the drawing 72 px tall."""
    run = paused_run(server, "retry-layers", seed=5)
    page = open_run(browser, server, run, 1366, 768, minutes=1)
    try:
        diagram = page.locator("#diagram")
        assert diagram.get_attribute("data-layout") == "columns"
        assert diagram.get_attribute("viewBox") == "0 0 684 72"
        assert diagram.evaluate("el => el.style.height") == "72px"
        xs = [page.locator(f"g[data-service='{n}'] rect").get_attribute("x") for n in LESSONS["retry-layers"]]
        ys = {page.locator(f"g[data-service='{n}'] rect").get_attribute("y") for n in LESSONS["retry-layers"]}
        assert xs == ["2", "250", "498"] and ys == {"2"}
        assert page.locator("line[data-edge='api>orders']").get_attribute("x1") == "186"
    finally:
        page.close()


# the console test's failing leaf, its db balanced round-robin with a queue limit at each instance, and not failing
BALANCED = (
    FAILING_LEAF.split("[[events]]")[0]
    .replace('id = "failing-leaf"', 'id = "balanced"')
    .replace('title = "A failing leaf"', 'title = "A balanced leaf"')
    .replace(
        "workers_per_instance = 8\nservice_ms = 4",
        'workers_per_instance = 2\nservice_ms = 4\nbalancer = "round-robin"\nmax_queue = 5',
    )
)


@pytest.mark.parametrize(
    ("language", "words"),
    [
        ("en", "Round-robin balancer: a queue in front of each instance"),
        ("da", "Fordeling på skift (round-robin): en kø foran hver instans"),
    ],
)
def test_the_services_panel_says_a_service_keeps_a_queue_per_instance(
    server: str, browser: Any, language: str, words: str
) -> None:
    """A service with a balancer (the file's, not set in the panel): its box says so, and that its queue limit is
    each instance's; a pooled service's box says nothing of it."""
    body = {"scenario": "balanced", "scenario_toml": BALANCED, "seed": 1, "speed": 1, "paused": True}
    run = str(post_json(server, "/api/runs", body)["id"])
    page = browser.new_page(viewport={"width": 1366, "height": 768})
    try:
        watch = Watch(page)
        page.goto(f"{server}/runs/{run}?lang={language}")
        close_briefing(page)
        note = page.locator("fieldset.service[data-service=db] .service-balancer")
        note.wait_for()
        assert note.get_attribute("data-balancer") == "round-robin"
        assert str(note.text_content()).startswith(words)
        assert page.locator("fieldset.service[data-service=api] .service-balancer").count() == 0
        watch.check()
    finally:
        page.close()

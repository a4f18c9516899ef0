"""The console's zoom in real headless Chromium: the Zoom button and a click on a chart open the minute
re-simulated request by request, in a new tab, for a request-engine run."""

from __future__ import annotations

import json
import os
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser import chromium_page
from tests.server import running_server

# Wall-clock pacing (a browser at 16×, latency bounds): runs alone, after the parallel part of `make test`.
pytestmark = pytest.mark.serial


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_server(tmp_path_factory.mktemp("zoom") / "runs.sqlite3") as base:
        yield base


def _new_run(base: str, minutes: int) -> str:
    body = {"scenario": "bad-deploy", "seed": 4, "speed": 16, "minutes": minutes, "engine": "request"}
    request = urllib.request.Request(
        base + "/api/runs", json.dumps(body).encode(), {"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return str(json.loads(response.read())["id"])


def _played(page: Any, at_least: int) -> None:
    # the first use on a machine compiles the request engine (up to a minute): wait for the charts, not a time
    page.wait_for_function(
        "(n) => { const c = document.getElementById('chart-p99'); return c && c.data && c.data[0].x.length >= n; }",
        arg=at_least,
        timeout=180_000,
    )


def test_zoom_button_and_chart_click_open_the_zoomed_minute(server: str) -> None:
    with chromium_page() as page:
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        run_id = _new_run(server, 6)
        page.goto(f"{server}/runs/{run_id}")
        _played(page, 6)
        with page.context.expect_page() as opened:
            page.get_by_role("button", name="Zoom", exact=True).click()
        zoomed = opened.value
        # the first zoom of a fresh machine may compile the sampling minute (a cold cache, as CI starts from)
        zoomed.wait_for_selector("#zoom-chart .main-svg", timeout=240_000)
        assert zoomed.url.endswith(f"/runs/{run_id}/zoom?minute=5")
        assert "request by request" in zoomed.locator("h1").inner_text()
        zoomed.close()

        # a click on the p99 chart at minute 2's point opens minute 2
        box = page.evaluate(
            """() => {
                const el = document.getElementById('chart-p99'), L = el._fullLayout, x = el.data[0].x[2];
                const r = el.getBoundingClientRect();
                return {x: r.left + L._size.l + L.xaxis.d2p(x), y: r.top + L._size.t + L.yaxis.d2p(el.data[0].y[2])};
            }"""
        )
        with page.context.expect_page() as opened:
            page.mouse.click(box["x"], box["y"])
        clicked = opened.value
        clicked.wait_for_selector("#zoom-chart .main-svg")
        assert clicked.url.endswith(f"/runs/{run_id}/zoom?minute=2")
        assert errors == []
        if os.environ.get("ONCALLSIM_UPDATE_SCREENSHOTS") == "1":
            clicked.screenshot(path=str(Path(__file__).resolve().parent.parent / "docs" / "images" / "zoom.png"))


def _zoom_json(base: str, run_id: str, minute: int) -> dict[str, Any]:
    with urllib.request.urlopen(f"{base}/api/runs/{run_id}/zoom?minute={minute}", timeout=60) as response:
        return dict(json.loads(response.read()))


@pytest.mark.parametrize(("width", "height"), [(1366, 768), (390, 844)])
def test_the_zoomed_minute_shows_the_console_s_diagram_second_by_second(server: str, width: int, height: int) -> None:
    with chromium_page(width, height) as page:
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)  # a CSP refusal too
        run_id = _new_run(server, 5)
        page.goto(f"{server}/runs/{run_id}")
        _played(page, 5)
        z = _zoom_json(server, run_id, 3)
        errors.clear()  # the zoom page's own errors from here
        missing: list[str] = []
        page.on("response", lambda r: missing.append(r.url) if r.status >= 400 else None)
        page.goto(f"{server}/runs/{run_id}/zoom?minute=3")
        diagram = page.locator("#diagram")
        page.wait_for_function("() => document.querySelector('#diagram [data-part=\"lb-text\"]').textContent !== ''")
        text = lambda part: diagram.locator(f'[data-part="{part}"]').text_content()  # noqa: E731
        serving = z["record"]["serving"]
        assert text("fleet-text") == f"{serving} serving · {z['record']['booting']} booting"
        assert text("lb-text") == f"{round(z['measured']['requests_per_s']):,} req/s in"
        assert diagram.locator(".instance").count() == serving
        assert "⟦" not in (diagram.text_content() or "")  # every text found in the catalog
        # second 10: the zoom's own arrivals that second
        page.locator("#zoom-second").fill("10")
        page.wait_for_function("() => document.getElementById('diagram').dataset.showing === '10'")
        assert text("lb-text") == f"{round(z['seconds']['arrivals'][10]):,} req/s in"
        assert page.locator("#zoom-second-clock").text_content() == z["clock"] + ":10"
        page.get_by_role("button", name="The whole minute").click()
        page.wait_for_function("() => document.getElementById('diagram').dataset.showing === 'minute'")
        box = diagram.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width
        assert errors == [] and missing == []


def test_the_offline_zoom_file_draws_the_diagram_too(tmp_path: Path) -> None:
    from oncallsim import Simulation
    from oncallsim.zoom import zoom_run
    from oncallsim.zoom.html import render_zoom_html

    sim = Simulation("bad-deploy", seed=4, minutes=8)
    sim.run()
    page_file = tmp_path / "zoom.html"
    page_file.write_text(render_zoom_html(zoom_run(sim, 6)), encoding="utf-8")
    with chromium_page(390, 844) as page:
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(page_file.as_uri())
        page.wait_for_function("() => document.querySelector('#diagram [data-part=\"lb-text\"]').textContent !== ''")
        page.locator("#zoom-second").fill("5")
        page.wait_for_function("() => document.getElementById('diagram').dataset.showing === '5'")
        assert "⟦" not in (page.locator("#diagram").text_content() or "") and errors == []
        assert page.locator("#zoom-chart .main-svg").count() >= 1


def test_the_zoom_button_follows_a_chain_s_requests_across_hops(server: str) -> None:
    body = {"scenario": "cascade", "seed": 1, "speed": 16, "minutes": 4, "engine": "request"}
    request = urllib.request.Request(
        server + "/api/runs", json.dumps(body).encode(), {"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        run_id = str(json.loads(response.read())["id"])
    with chromium_page() as page:
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{server}/runs/{run_id}")
        _played(page, 4)
        with page.context.expect_page() as opened:
            page.get_by_role("button", name="Zoom", exact=True).click()
        zoomed = opened.value
        zoomed.wait_for_selector("svg.waterfall", timeout=240_000)
        assert zoomed.url.endswith(f"/runs/{run_id}/zoom?minute=3")
        assert "across the chain" in zoomed.locator("h1").inner_text()
        assert zoomed.locator("svg.waterfall").count() > 0
        assert errors == []

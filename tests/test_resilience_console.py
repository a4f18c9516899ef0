"""The console's Resilience group and the request engine's charts in real headless Chromium (issue 11 item 7):
every overload and retry control of the registry in one folded group, each explained and linked to its section
of the model page, opened and used from the keyboard; goodput vs throughput, attempts per request and wasted work
charted from the records; none of it on a minute-engine run; folded on a phone, so the fleet stays close.

The runs are created paused and stepped through the API, so every minute shown is one the test asked for."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from oncallsim.model import CONTROL_SPECS
from oncallsim.model.events import EVENT_TEXTS
from oncallsim.web.labels import RESILIENCE_SECTIONS, resilience_controls
from tests.browser import chromium_page
from tests.server import running_server

# Wall-clock pacing (a browser at 16×, latency bounds): runs alone, after the parallel part of `make test`.
pytestmark = pytest.mark.serial

# the first step on a machine compiles the request engine: a generous bound on a condition, not a timing
COMPILE_S = 240
GROUP = [
    name
    for name, spec in CONTROL_SPECS.items()
    if spec.section in RESILIENCE_SECTIONS and spec.is_setting and "request" in spec.engines
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_server(tmp_path_factory.mktemp("resilience") / "runs.sqlite3") as base:
        yield base


@pytest.fixture(scope="module")
def page() -> Iterator[Any]:
    with chromium_page(1366, 768) as p:  # one browser for the module; each test sets the viewport it needs
        yield p


@pytest.fixture
def laptop(page: Any) -> Any:
    page.set_viewport_size({"width": 1366, "height": 768})
    return page


def _post(base: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        base + path, json.dumps(body).encode(), {"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=COMPILE_S) as response:
        return dict(json.loads(response.read()))


def _get(base: str, path: str) -> dict[str, Any]:
    with urllib.request.urlopen(base + path, timeout=COMPILE_S) as response:
        return dict(json.loads(response.read()))


def _run(base: str, steps: int, scenario: str = "flash-crowd", **body: Any) -> str:
    """A paused run stepped ``steps`` minutes (a paused run at minute 0 would open its briefing)."""
    run_id = str(_post(base, "/api/runs", {"scenario": scenario, "seed": 3, "speed": 1, "paused": True, **body})["id"])
    for _ in range(steps):
        _step(base, run_id)
    return run_id


def _step(base: str, run_id: str) -> None:
    _post(base, f"/api/runs/{run_id}/control", {"type": "step"})


def _open(page: Any, base: str, run_id: str, records: int) -> None:
    page.goto(f"{base}/runs/{run_id}")
    page.wait_for_function(
        "(n) => document.querySelector('main.console').dataset.records === String(n)", arg=records, timeout=60_000
    )


def test_the_group_holds_every_overload_and_retry_control_of_the_registry(server: str, laptop: Any) -> None:
    errors: list[str] = []
    laptop.on("pageerror", lambda e: errors.append(str(e)))
    assert GROUP == resilience_controls("request") and {"queue_discipline", "limiter"} <= set(GROUP)
    run_id = _run(server, 2)
    _open(laptop, server, run_id, 2)
    group = laptop.locator("#resilience")
    assert group.get_attribute("open") is None  # folded until asked for
    assert laptop.locator("#resilience summary h2").inner_text() == "Resilience"
    assert laptop.locator("#resilience-state").inner_text() == "all off"  # the flash crowd opens unprotected
    shown = laptop.locator("#resilience .control").evaluate_all("(els) => els.map((e) => e.dataset.control)")
    assert shown == GROUP
    # the rest of the controls stay outside it; no control is in both places
    outside = laptop.locator("#controls > .control[data-control]").evaluate_all(
        "(els) => els.map((e) => e.dataset.control)"
    )
    assert outside and not set(outside) & set(GROUP) and "balancer" in outside
    links = {}
    for name in GROUP:
        control = laptop.locator(f'#resilience .control[data-control="{name}"]')
        help_text = control.locator(".help").text_content() or ""  # folded: there, though not shown
        assert len(help_text) > 20, name
        link = control.locator("a.more")
        assert link.get_attribute("href") == f"/model#{CONTROL_SPECS[name].section}"
        assert link.get_attribute("target") == "_blank"  # the live run stays where it is
        assert CONTROL_SPECS[name].label in (link.get_attribute("aria-label") or "")
        links[name] = link.get_attribute("href")
    assert errors == []
    # every link lands on a section of the model page that explains that control
    laptop.goto(server + "/model")
    for name, href in links.items():
        section = laptop.locator("#" + href.split("#", 1)[1])
        assert section.count() == 1, href
        assert CONTROL_SPECS[name].label in section.inner_text()


def test_the_keyboard_opens_the_group_and_a_mechanism_switched_there_reaches_the_run(server: str, laptop: Any) -> None:
    run_id = _run(server, 2)
    _open(laptop, server, run_id, 2)
    summary = laptop.locator("#resilience summary")
    summary.focus()
    laptop.keyboard.press("Enter")
    laptop.wait_for_function("() => document.getElementById('resilience').open")
    assert laptop.locator("#c-queue_discipline").is_visible()
    # Tab from the summary reaches the group's first control
    laptop.keyboard.press("Tab")
    assert laptop.evaluate("() => document.activeElement.id") == f"c-{GROUP[0]}"
    laptop.select_option("#c-queue_discipline", "codel")
    laptop.wait_for_function("() => document.getElementById('resilience-state').textContent.includes('codel')")
    assert laptop.locator("#resilience").get_attribute("data-on") == "true"
    _step(server, run_id)  # the action applies to the next minute
    assert _get(server, f"/api/runs/{run_id}")["state"]["controls"]["queue_discipline"] == "codel"
    laptop.wait_for_function("() => document.querySelector('main.console').dataset.records === '3'")
    assert laptop.locator("#resilience-state").inner_text() == "on: Queue discipline: codel"
    summary.focus()
    laptop.keyboard.press("Enter")
    laptop.wait_for_function("() => !document.getElementById('resilience').open")
    assert not laptop.locator("#c-queue_discipline").is_visible()


def _expected(record: dict[str, Any]) -> dict[str, float | None]:
    extras = record.get("extras") or {}
    goodput = extras.get("goodput_per_s")
    if goodput is None:
        goodput = record["admitted_per_s"] * (1 - record["error_rate"])
    attempts = extras.get("attempts_per_s")
    per_request = 1.0 if attempts is None else attempts / record["admitted_per_s"]
    busy = record["utilization"] * record["servers"]
    wasted = extras["wasted_work_s"] / (busy * 60)
    return {
        "goodput": goodput,
        "throughput": extras["completed_per_s"],
        "attempts": per_request,
        "wasted": 100 * min(1.0, wasted),
    }


def test_the_request_charts_show_goodput_throughput_attempts_and_wasted_work(server: str, laptop: Any) -> None:
    # the limiter on, and 30 minutes: the surge (11:25 on seed 3) turns work away and wastes some
    run_id = _run(server, 30, overrides={"limiter": "bbr"})
    _open(laptop, server, run_id, 30)
    records = _get(server, f"/api/runs/{run_id}")["records"]
    expected = [_expected(r) for r in records]
    charts = laptop.evaluate(
        """() => Object.fromEntries(['chart-goodput', 'chart-attempts'].map((id) => {
             const el = document.getElementById(id);
             const traces = el.data.map((t) => ({ name: t.name, y: t.y, axis: t.yaxis }));
             return [id, { title: el.layout.title.text, traces }];
           }))"""
    )
    goodput, attempts = charts["chart-goodput"], charts["chart-attempts"]
    assert goodput["title"] == "Goodput vs throughput (req/s)"
    assert [t["name"] for t in goodput["traces"]] == ["goodput", "throughput"]
    assert [t["name"] for t in attempts["traces"]] == ["attempts per request", "wasted work"]
    assert [t["axis"] for t in attempts["traces"]] == ["y", "y2"]  # × on the left, % on the right
    for i, want in enumerate(expected):
        assert goodput["traces"][0]["y"][i] == pytest.approx(want["goodput"], rel=1e-9), i
        assert goodput["traces"][1]["y"][i] == pytest.approx(want["throughput"], rel=1e-9), i
        assert attempts["traces"][0]["y"][i] == pytest.approx(want["attempts"], rel=1e-9), i
        assert attempts["traces"][1]["y"][i] == pytest.approx(want["wasted"], rel=1e-9, abs=1e-9), i
    # the surge shows: goodput falls below what arrives once the limiter turns the excess away
    assert min(g / r["requests_per_s"] for g, r in zip(goodput["traces"][0]["y"], records, strict=True)) < 0.9
    # the extra charts fit the laptop's screen: the console does not scroll
    assert laptop.evaluate("() => document.documentElement.scrollHeight <= window.innerHeight + 1")
    assert laptop.locator("#chart-attempts").bounding_box()["height"] > 100


def test_a_minute_engine_run_has_neither_the_group_nor_the_request_charts(server: str, laptop: Any) -> None:
    run_id = _run(server, 2, scenario="bad-deploy", engine="minute")
    _open(laptop, server, run_id, 2)
    assert laptop.locator("#resilience").count() == 0
    assert laptop.locator("#chart-goodput").count() == 0 and laptop.locator("#chart-attempts").count() == 0
    assert laptop.locator(".chart").count() == 6


def test_on_a_phone_the_group_folds_and_the_fleet_stays_close(server: str, page: Any) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    run_id = _run(server, 2)
    _open(page, server, run_id, 2)
    page.locator("#fleet").wait_for(state="visible")
    assert page.locator("#resilience").get_attribute("open") is None
    folded = page.locator("#fleet").bounding_box()["y"]
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390  # nothing wider than the phone
    page.locator("#resilience summary").click()
    page.wait_for_function("() => document.getElementById('resilience').open")
    body = page.locator(".resilience-body").bounding_box()["height"]
    opened = page.locator("#fleet").bounding_box()["y"]
    assert body > 400 and opened - folded == pytest.approx(body, abs=40)  # folding saves the group's whole height
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
    # the group's summary is a finger's height and its text stays inside the phone
    summary = page.locator("#resilience summary").bounding_box()
    assert summary["height"] >= 20 and summary["x"] + summary["width"] <= 390
    page.locator("#resilience summary").click()
    page.wait_for_function("() => !document.getElementById('resilience').open")
    assert page.locator("#fleet").bounding_box()["y"] == pytest.approx(folded, abs=1)


CAUSES = [code for code in ("limiter_engaged", "retry_budget_exhausted") if code in EVENT_TEXTS]


@pytest.mark.skipif(not CAUSES, reason="the engine does not report the limiter's or the retry budget's events yet")
def test_the_log_names_a_mechanism_engaging_with_its_minute(server: str, laptop: Any) -> None:
    run_id = _run(server, 0, overrides={"limiter": "bbr"})
    found: tuple[str, str] | None = None
    for _ in range(75):  # the flash crowd's whole run at most: the limiter engages once the surge comes
        _step(server, run_id)
        record = _get(server, f"/api/runs/{run_id}")["records"][-1]
        codes = [e["code"] for e in record["events"] if e["code"] in CAUSES]
        if codes:
            found = (codes[0], record["clock"])
            break
    assert found is not None, "the limiter never engaged"
    code, clock = found
    records = len(_get(server, f"/api/runs/{run_id}")["records"])
    _open(laptop, server, run_id, records)
    line = laptop.locator(f'#events li[data-code="{code}"]').first
    assert "cause" in (line.get_attribute("class") or "")
    assert line.locator("time").inner_text() == clock
    assert line.inner_text().startswith(clock + " ")


def test_the_gauge_beside_the_burn_rate_says_where_the_run_stands(server: str, laptop: Any) -> None:
    """retry-storm stands past the cliff from its first minute (4 × 1,200 attempts against ~2,200): the gauge shows
    λA/cμ, its zone in words and on a meter, links to the model page's section, and says whether a brownout like
    the scenario's would heal once the server's pilot run has measured it (off the loop, from the first minute)."""
    run_id = _run(server, 1, scenario="retry-storm")
    deadline = time.monotonic() + COMPILE_S
    record = _get(server, f"/api/runs/{run_id}")["records"][-1]
    while record["cliff"]["survives"] is None and time.monotonic() < deadline:
        time.sleep(0.25)  # the pilot runs in the server's threads; each step shows whether it has finished
        _step(server, run_id)
        record = _get(server, f"/api/runs/{run_id}")["records"][-1]
    gauge = record["cliff"]
    assert gauge["survives"] is not None and gauge["attempts"] == 4.0
    _open(laptop, server, run_id, record["minute"] + 1)
    words = {"safe": "safe", "vulnerable": "vulnerable", "overloaded": "overloaded", "protected": "protected"}
    assert laptop.locator("#s-cliff").inner_text().replace(" ", "") == f"{gauge['amplified']:.2f}×"
    assert laptop.locator("#f-cliff").inner_text().lower() == words[gauge["zone"]]
    assert float(laptop.locator("#m-cliff").get_attribute("value") or "nan") == pytest.approx(
        min(2, gauge["amplified"])
    )
    sentence = "would heal by itself" if gauge["survives"] else "does not heal by itself"
    assert sentence in laptop.locator("#cliff-trigger").inner_text()
    assert laptop.locator("#cliff-help a").get_attribute("href").endswith("/model#cliff")
    first = _get(server, f"/api/runs/{run_id}")["records"][0]["cliff"]
    assert first["zone"] == "vulnerable" and first["amplified"] > 2.0  # before the brownout: past the cliff
    minute_run = _run(server, 1, scenario="bad-deploy", engine="minute")
    _open(laptop, server, minute_run, 1)
    assert laptop.locator("#s-cliff").count() == 0 and laptop.locator("#cliff-help").count() == 0

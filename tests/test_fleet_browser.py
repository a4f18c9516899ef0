"""The console's fleet view in real headless Chromium: a tile per instance of a request-engine run with its
fields, the per-instance actions (eject shows the instance out of rotation the next minute; replace asks first),
no view on a minute-engine run, and nothing overflowing at 390 px or 1366×768 with 40 instances.

The runs are created paused and stepped through the API, so every minute shown is one the test asked for."""

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

FIELDS = ["build", "health", "speed", "rotation", "in_flight", "queue", "cpu", "p99", "share"]
# the first step on a machine compiles the request engine (up to a minute or two): a generous bound on a condition
COMPILE_MS = 240_000
SCREENSHOT = Path(__file__).resolve().parent.parent / "docs" / "images" / "fleet.png"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_server(tmp_path_factory.mktemp("fleet") / "runs.sqlite3") as base:
        yield base


@pytest.fixture(scope="module")
def page() -> Iterator[Any]:
    with chromium_page(1366, 768) as p:
        yield p


def _post(base: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        base + path, json.dumps(body).encode(), {"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=COMPILE_MS / 1000) as response:
        return dict(json.loads(response.read()))


def _run(base: str, minutes_played: int, engine: str = "request", floor: int | None = None) -> str:
    """A paused run stepped ``minutes_played`` minutes (a paused run at minute 0 would open the briefing)."""
    body: dict[str, Any] = {"scenario": "bad-deploy", "seed": 4, "speed": 1, "engine": engine, "paused": True}
    if floor is not None:
        body["overrides"] = {"floor": floor}
    run_id = str(_post(base, "/api/runs", body)["id"])
    for _ in range(minutes_played):
        _step(base, run_id)
    return run_id


def _step(base: str, run_id: str) -> None:
    _post(base, f"/api/runs/{run_id}/control", {"type": "step"})


def _has_instance_actions(base: str) -> bool:
    """Whether the engine side of the fleet work (the actions eject/readmit/replace) is in this build."""
    with urllib.request.urlopen(f"{base}/api/controls", timeout=30) as response:
        return "eject" in json.loads(response.read())["controls"]


def _last_record(base: str, run_id: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{base}/api/runs/{run_id}", timeout=30) as response:
        return dict(json.loads(response.read())["records"][-1])


def _open(page: Any, base: str, run_id: str, minute: int) -> None:
    page.goto(f"{base}/runs/{run_id}")
    page.wait_for_function(
        "(m) => document.getElementById('fleet').dataset.minute === String(m)", arg=minute, timeout=30_000
    )
    # on a laptop the dock starts as a bar: open it as a person does, by its summary line
    if page.locator("#fleet-details").get_attribute("open") is None:
        page.locator("#fleet summary").click()
    page.locator("#fleet-tiles").wait_for(state="visible")


def _tile(page: Any, i: int) -> Any:
    return page.locator(f'#fleet-tiles li[data-instance="{i}"]')


def test_a_request_run_shows_a_tile_per_instance_with_its_fields(server: str, page: Any) -> None:
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    run_id = _run(server, 2)
    record = _last_record(server, run_id)
    lists = record["extras"]["instances"]
    count = len(lists["served"])
    _open(page, server, run_id, record["minute"])
    assert page.locator("#fleet").is_visible()
    assert page.locator("#fleet-tiles li").count() == count
    first = _tile(page, 0)
    assert first.locator(".tile-id").inner_text() == "i-00"
    for field in FIELDS:
        assert first.locator(f'[data-field="{field}"] dt').inner_text().strip()
    # the numbers the engine sends are shown; a field it does not send yet shows a dash
    values = {f: first.locator(f'[data-field="{f}"] dd').inner_text() for f in FIELDS}
    sent = {"build": "bad_build", "health": "health", "speed": "speed", "in_flight": "in_flight", "queue": "queue"}
    for field, line in sent.items():
        assert (values[field] != "—") == (line in lists), (field, values[field])
    share = lists["served"][0] / sum(lists["served"])
    assert values["share"] == f"{round(100 * share)}%", values["share"]
    assert page.locator("#fleet-summary").inner_text().startswith(f"Instances: {count} ·")
    # a word on every tile, not a colour alone
    states = page.locator("#fleet-tiles .tile-state").all_inner_texts()
    assert len(states) == count and all(s.strip() for s in states)
    assert errors == []


def test_eject_posts_the_action_and_the_tile_is_out_of_rotation_next_minute(server: str, page: Any) -> None:
    if not _has_instance_actions(server):
        pytest.skip("the engine's instance actions (eject, readmit, replace) are not in this build yet")
    run_id = _run(server, 1)
    _open(page, server, run_id, 0)
    tile = _tile(page, 3)
    assert tile.get_attribute("data-rotation") in ("in", "unknown")
    tile.get_by_role("button", name="Eject i-03 from rotation").click()
    page.wait_for_function("() => ['accepted', 'refused'].includes(document.getElementById('fleet').dataset.result)")
    assert page.locator("#fleet").get_attribute("data-result") == "accepted", page.locator("#error").inner_text()
    assert "next minute" in tile.locator(".tile-note").inner_text()
    # the tile says why the ejected instance still counts as serving and toward the floor
    assert "counts as serving and toward the floor" in tile.locator(".tile-note").inner_text()
    # asked once: not twice before it applies (the button stays focusable, marked unavailable)
    eject = tile.get_by_role("button", name="Eject i-03 from rotation")
    assert eject.get_attribute("aria-disabled") == "true"
    eject.click(force=True)  # a person pressing it anyway: nothing is sent (the log below holds one eject)
    _step(server, run_id)
    page.wait_for_function("() => document.getElementById('fleet').dataset.minute === '1'")
    assert tile.get_attribute("data-rotation") == "out"
    assert tile.get_attribute("data-state") == "out"
    assert "out" in tile.locator('[data-field="rotation"] dd').inner_text()
    assert "EJECTED" in tile.locator(".tile-state").inner_text().upper()
    assert tile.locator(".tile-note").inner_text() == ""
    # the toggle now readmits; the server's log has the action with the instance id as its value
    readmit = tile.get_by_role("button", name="Put i-03 back in rotation")
    assert readmit.inner_text() == "Readmit"
    with urllib.request.urlopen(f"{server}/api/runs/{run_id}", timeout=30) as response:
        actions = json.loads(response.read())["actions"]
    assert [{"control": a["control"], "value": a["value"]} for a in actions] == [{"control": "eject", "value": 3}]


def test_replace_asks_first_and_a_cancel_sends_nothing(server: str, page: Any) -> None:
    run_id = _run(server, 1)
    _open(page, server, run_id, 0)
    _tile(page, 1).get_by_role("button", name="Replace i-01 with a fresh instance").click()
    dialog = page.locator("#confirm")
    assert dialog.is_visible()
    assert "i-01" in page.locator("#confirm-text").inner_text()
    assert page.locator("#confirm-yes").inner_text() == "Replace i-01"
    page.locator("#confirm-no").click()
    assert not dialog.is_visible()
    assert page.locator("#fleet").get_attribute("data-result") is None
    with urllib.request.urlopen(f"{server}/api/runs/{run_id}", timeout=30) as response:
        assert json.loads(response.read())["actions"] == []
    if not _has_instance_actions(server):
        pytest.skip("the engine's instance actions (eject, readmit, replace) are not in this build yet")
    # confirmed: posted, and the next minute the tile says so
    tile = _tile(page, 1)
    tile.get_by_role("button", name="Replace i-01 with a fresh instance").click()
    page.locator("#confirm-yes").click()
    page.wait_for_function("() => document.getElementById('fleet').dataset.result === 'accepted'")
    _step(server, run_id)
    page.wait_for_function("() => document.getElementById('fleet').dataset.minute === '1'")
    assert tile.get_attribute("data-state") == "boot"
    assert "replaced" in tile.locator(".tile-state").inner_text().lower()


def test_a_refused_action_shows_the_servers_message(server: str, page: Any) -> None:
    run_id = _run(server, 1)
    _open(page, server, run_id, 0)
    # the server's refusal, as its API writes one (HTTP 422 with the error naming the field), shown as written
    refusal = {"error": "eject: i-00 is the last instance in rotation; readmit another first", "field": "eject"}
    page.route(
        "**/api/runs/*/actions",
        lambda route: route.fulfill(status=422, content_type="application/json", body=json.dumps(refusal)),
    )
    try:
        _tile(page, 0).get_by_role("button", name="Eject i-00 from rotation").click()
        page.wait_for_function("() => document.getElementById('fleet').dataset.result === 'refused'")
    finally:
        page.unroute("**/api/runs/*/actions")
    banner = page.locator("#error")
    assert banner.is_visible()
    assert banner.inner_text() == refusal["error"]
    assert _tile(page, 0).locator(".tile-note").inner_text() == ""


def test_the_server_refuses_a_stale_tiles_action_and_the_view_says_why(server: str, page: Any) -> None:
    if not _has_instance_actions(server):
        pytest.skip("the engine's instance actions (eject, readmit, replace) are not in this build yet")
    run_id = _run(server, 1)
    _open(page, server, run_id, 0)
    # a tile that shows i-03 ejected when it is not (a record the page drew late): its Readmit is refused
    record = _last_record(server, run_id)
    lines = record["extras"]["instances"]
    lines["ejected"] = [1 if i == 3 else 0 for i in range(len(lines["ejected"]))]
    record["minute"] = 5
    page.evaluate("(r) => document.dispatchEvent(new CustomEvent('oncallsim:record', {detail: r}))", record)
    page.wait_for_function("() => document.getElementById('fleet').dataset.minute === '5'")
    _tile(page, 3).get_by_role("button", name="Put i-03 back in rotation").click()
    page.wait_for_function("() => document.getElementById('fleet').dataset.result === 'refused'")
    banner = page.locator("#error")
    assert banner.is_visible()
    assert banner.inner_text().startswith("readmit:"), banner.inner_text()
    assert "3" in banner.inner_text()


def test_a_refusal_is_shown_in_the_pages_language(server: str, page: Any) -> None:
    """A Danish page's refused action: the banner says the server's Danish sentence (its "localized"), not the
    English "readmit: instance i-03 is not ejected" the API's clients read."""
    if not _has_instance_actions(server):
        pytest.skip("the engine's instance actions (eject, readmit, replace) are not in this build yet")
    run_id = _run(server, 1)
    own = page.context.browser.new_page(viewport={"width": 1366, "height": 768})  # its own cookie: Danish
    try:
        own.goto(f"{server}/runs/{run_id}?lang=da")
        own.wait_for_function("() => document.getElementById('fleet').dataset.minute === '0'")
        if own.locator("#fleet-details").get_attribute("open") is None:  # on a laptop the dock starts as a bar
            own.locator("#fleet summary").click()
        record = _last_record(server, run_id)
        lines = record["extras"]["instances"]
        lines["ejected"] = [1 if i == 3 else 0 for i in range(len(lines["ejected"]))]  # a stale tile: i-03 out
        record["minute"] = 5
        own.evaluate("(r) => document.dispatchEvent(new CustomEvent('oncallsim:record', {detail: r}))", record)
        own.wait_for_function("() => document.getElementById('fleet').dataset.minute === '5'")
        _tile(own, 3).locator('[data-act="readmit"]').click()
        own.wait_for_function("() => document.getElementById('fleet').dataset.result === 'refused'")
        assert own.locator("#error").inner_text() == "Tag ind igen: instans i-03 er ikke taget ud"
    finally:
        own.context.close()


def test_the_actions_are_off_once_the_run_is_over(server: str, page: Any) -> None:
    run_id = _run(server, 1)
    _open(page, server, run_id, 0)
    assert _tile(page, 0).locator("button").first.is_enabled()
    _post(server, f"/api/runs/{run_id}/control", {"type": "abandon"})
    page.wait_for_function("() => document.getElementById('fleet').dataset.over === 'true'")
    assert all(not b.is_enabled() for b in page.locator("#fleet-tiles button").all())


def test_the_diagrams_fleet_box_opens_the_view(server: str, page: Any) -> None:
    run_id = _run(server, 1)
    _open(page, server, run_id, 0)
    page.locator("#fleet summary").click()  # folded (on a laptop)
    assert page.locator("#fleet-details").get_attribute("open") is None
    page.locator('#diagram [data-part="fleet"]').click()
    assert page.locator("#fleet-details").get_attribute("open") is not None
    assert page.locator("#fleet-tiles").is_visible()


def test_the_view_speaks_the_pages_language(server: str, page: Any) -> None:
    from oncallsim.i18n import LANGUAGES, translations

    other = next((code for code in LANGUAGES if code != "en"), None)
    if other is None:
        pytest.skip("no language but English has a catalog")
    run_id = _run(server, 1)
    # a page of its own (the language chosen is remembered in a cookie: the other tests stay in English)
    own = page.context.browser.new_page(viewport={"width": 1366, "height": 768})
    try:
        _speaks(own, server, run_id, other, translations(other).gettext)
    finally:
        own.context.close()


def _speaks(page: Any, server: str, run_id: str, other: str, gettext: Any) -> None:
    page.goto(f"{server}/runs/{run_id}?lang={other}")
    page.wait_for_function("() => document.getElementById('fleet').dataset.minute === '0'")
    assert page.locator("#fleet-title").inner_text() == gettext("Fleet")
    assert _tile(page, 0).locator('[data-field="build"] dt').text_content() == gettext("Build")
    replace = _tile(page, 0).locator('[data-act="replace"]')
    assert replace.text_content() == gettext("Replace")
    assert replace.get_attribute("aria-label") == gettext("Replace {id} with a fresh instance").replace("{id}", "i-00")


def test_a_minute_engine_run_has_no_fleet_view(server: str, page: Any) -> None:
    run_id = _run(server, 2, engine="minute")
    page.goto(f"{server}/runs/{run_id}")
    page.wait_for_function("() => document.querySelector('main.console').dataset.records === '2'")
    assert page.locator("#fleet").is_hidden()


# Every state a tile can show, with numbers at their widest: a record as the engine sends it, one per instance.
STATES = [
    # health, speed, registered, ejected, replacing, bad_build, expected state, expected word
    ("up", 1.0, 1, 0, 0, 0, "ok", "healthy"),
    ("up", 0.2, 1, 0, 0, 0, "warn", "slow"),
    ("up", 1.0, 1, 0, 0, 1, "warn", "bad build"),
    ("refuse", 1.0, 1, 0, 0, 0, "bad", "down"),
    ("hang", 1.0, 1, 0, 0, 0, "bad", "hanging"),
    ("offline", 1.0, 1, 0, 0, 0, "bad", "offline"),
    ("booting", 1.0, 0, 0, 0, 0, "boot", "booting"),
    ("up", 1.0, 0, 0, 0, 0, "warn", "not registered"),
    ("up", 1.0, 1, 1, 0, 0, "out", "ejected"),
    ("up", 1.0, 1, 0, 1, 0, "boot", "being replaced"),
    ("up", 1.0, 1, 0, 0, 0, "warn", "errors"),  # over 1 % of its answers are errors
]


def _synthetic_record(minute: int) -> dict[str, Any]:
    n = len(STATES)
    lines: dict[str, list[Any]] = {
        name: [s[k] for s in STATES]
        for k, name in enumerate(["health", "speed", "registered", "ejected", "replacing", "bad_build"])
    }
    lines |= {
        "served": [123_456.0] * n,
        "errors": [98_765.0 if s[7] == "errors" else 0.0 for s in STATES],
        "busy_s": [959.9] * n,
        "in_flight": [12_345] * n,
        "queue": [123_456] * n,
        "p99_ms": [29_999.0] * n,
    }
    return {
        "minute": minute,
        "extras": {"instances": lines, "workers_per_instance": 16, "balancer": "least-outstanding"},
    }


def test_every_state_has_its_colour_and_word_and_a_missing_field_shows_a_dash(server: str, page: Any) -> None:
    run_id = _run(server, 1)
    _open(page, server, run_id, 0)
    send = "(r) => document.dispatchEvent(new CustomEvent('oncallsim:record', {detail: r}))"
    for width, height in [(1366, 768), (390, 844)]:
        page.set_viewport_size({"width": width, "height": height})
        page.evaluate(send, _synthetic_record(7))
        page.wait_for_function("() => document.getElementById('fleet').dataset.minute === '7'")
        for i, state in enumerate(STATES):
            tile = _tile(page, i)
            assert tile.get_attribute("data-state") == state[6], (i, state)
            assert state[7] in tile.locator(".tile-state").inner_text().lower(), (i, state)
        assert _tile(page, 8).get_by_role("button", name="Put i-08 back in rotation").is_visible()
        assert _tile(page, 0).locator('[data-field="p99"] dd').inner_text() == "30.0 s"
        assert page.evaluate(OVERFLOW) == [], width
        page.evaluate("() => document.getElementById('fleet').dataset.minute = ''")
    page.set_viewport_size({"width": 1366, "height": 768})
    # the fields engines sent before the fleet work: the rest show a dash, rotation unknown
    old = {"served": [10.0, 30.0], "errors": [0.0, 1.0], "busy_s": [30.0, 30.0], "bad_build": [0.0, 1.0]}
    page.evaluate(send, {"minute": 8, "extras": {"instances": old}})
    page.wait_for_function("() => document.getElementById('fleet').dataset.minute === '8'")
    assert page.locator("#fleet-tiles li").count() == 2
    dashed = ["health", "speed", "rotation", "in_flight", "queue", "cpu", "p99"]
    assert [_tile(page, 0).locator(f'[data-field="{f}"] dd').inner_text() for f in dashed] == ["—"] * len(dashed)
    assert _tile(page, 1).locator('[data-field="share"] dd').inner_text() == "75%"
    assert "in rotation: —" in page.locator("#fleet-summary").inner_text()


OVERFLOW = """() => {
  const bad = [];
  const doc = document.scrollingElement;
  if (doc.scrollWidth > window.innerWidth) bad.push('page ' + doc.scrollWidth + ' > ' + window.innerWidth);
  const fleet = document.getElementById('fleet-body');
  if (fleet.scrollWidth > fleet.clientWidth) bad.push('fleet ' + fleet.scrollWidth + ' > ' + fleet.clientWidth);
  const sheet = fleet.getBoundingClientRect();
  if (sheet.left < 0 || sheet.right > window.innerWidth || sheet.top < 0) bad.push('sheet off screen');
  for (const el of fleet.querySelectorAll('.tile, .tile dd, .tile dt, .tile-state, .tile-actions button, .tile-id')) {
    // the text's own width against the room inside the box (an ellipsis hides a cut from scrollWidth)
    const range = document.createRange();
    range.selectNodeContents(el);
    const style = getComputedStyle(el);
    const room = el.getBoundingClientRect().width - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight)
      - parseFloat(style.borderLeftWidth) - parseFloat(style.borderRightWidth);
    if (range.getBoundingClientRect().width > room + 0.01 || el.scrollHeight > el.clientHeight + 1)
      bad.push((el.closest('.tile').dataset.instance) + ' ' + el.className + el.tagName + ' "' + el.textContent + '" '
        + range.getBoundingClientRect().width + ' > ' + room);
    const box = el.getBoundingClientRect();
    if (box.right > window.innerWidth + 0.5 || box.left < -0.5) bad.push('off screen ' + el.className);
  }
  return bad.slice(0, 8);
}"""


@pytest.mark.parametrize(("width", "height"), [(1366, 768), (390, 844)])
def test_forty_instances_fit_without_overflow(server: str, page: Any, width: int, height: int) -> None:
    run_id = _run(server, 2, floor=40)
    # two tiles in other states: one ejected, one being replaced (the screenshot shows them)
    acting = _has_instance_actions(server)
    if acting:
        _post(server, f"/api/runs/{run_id}/actions", {"control": "eject", "value": 5})
        _post(server, f"/api/runs/{run_id}/actions", {"control": "replace", "value": 9})
    _step(server, run_id)
    page.set_viewport_size({"width": width, "height": height})
    try:
        _open(page, server, run_id, 2)
        if acting:
            assert _tile(page, 5).get_attribute("data-state") == "out"
            assert "i-05" in page.locator("#fleet-trouble").inner_text()
        assert page.locator("#fleet-tiles li").count() == 40
        assert page.evaluate(OVERFLOW) == []
        if width == 1366:
            # the bar stays on the laptop's screen, the open sheet over the charts leaves them their size
            box = page.locator("#fleet").bounding_box()
            assert box["y"] + box["height"] <= height
            chart = page.locator("#chart-p99").bounding_box()["height"]
            assert chart >= 150
            # all forty tiles in the open sheet at once, no scrolling
            assert page.evaluate("(e => e.scrollHeight <= e.clientHeight)(document.getElementById('fleet-body'))")
        # keyboard: Tab goes from a tile's first action to its second, then to the next tile's
        _tile(page, 0).locator("button").first.focus()
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.dataset.act") == "replace"
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.closest('li').dataset.instance") == "1"
        if width == 1366 and os.environ.get("ONCALLSIM_UPDATE_SCREENSHOTS") == "1":
            page.screenshot(path=str(SCREENSHOT))
        if width == 1366:
            # Escape folds the sheet back into its bar, the focus on the bar; the charts never changed size
            page.keyboard.press("Escape")
            assert page.locator("#fleet-details").get_attribute("open") is None
            assert page.evaluate("document.activeElement.tagName") == "SUMMARY"
            assert page.locator("#chart-p99").bounding_box()["height"] == chart
    finally:
        page.set_viewport_size({"width": 1366, "height": 768})

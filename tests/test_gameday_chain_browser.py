"""A game-day room on a chain of services in real headless Chromium (one browser, a context per person): the
room draws the cascade's graph from its minutes (the console's services.js), the facilitator injects a service
fault naming its service, an operator sets a service's timeout from the Services panel through the room's own
action path (the others see it attributed, the setting in force), an observer cannot, and a value out of range
is refused with the server's line; the debrief says where the failures began. The run is stepped minute by minute
(no wall-clock pacing)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser import chromium
from tests.server import post_json, running_server
from tests.test_gameday_browser import join, person, step_to
from tests.test_languages_browser import ALLOWED, english_sources, same_in, visible_pieces


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_server(tmp_path_factory.mktemp("chainroom") / "runs.sqlite3") as base:
        yield base


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as browser:
        yield browser


def english_on(page: Any, language: str) -> list[str]:
    """The page's visible texts that are English a translated page should not show (test_languages_browser)."""
    english, allowed = english_sources(), ALLOWED | same_in(language)
    return [p for p in visible_pieces(page) if p in english and p not in allowed]


def test_a_chain_room_draws_the_graph_and_sets_a_service_timeout(server: str, browser: Any, tmp_path: Path) -> None:
    room = post_json(server, "/api/gameday/rooms", {"scenario": "cascade", "seed": 3, "minutes": 30}, 300)
    facilitator, fw = person(browser)
    facilitator.goto(server + room["facilitator_url"])
    facilitator.locator("#facilitator").wait_for()
    ann, aw = person(browser)
    olu, ow = person(browser)
    join(ann, server + room["player_url"], "Ann", "operations")
    join(olu, server + room["player_url"], "Olu", "observer")
    bob, bw = person(browser, 390, 844)  # the commander on a phone: the graph scrolls within its card
    join(bob, server + room["player_url"], "Bob", "commander")

    # the facilitator's faults on a chain: a slow or failing service, chosen from the graph's
    kinds = facilitator.locator("#fault-kind option").evaluate_all("(os) => os.map((o) => o.value)")
    assert sorted(kinds) == ["service", "surge"]
    facilitator.locator("#fault-kind").select_option("service")
    assert facilitator.locator('#fault-fields select[data-field="service"]').input_value() == "recs"
    facilitator.locator('#fault-fields [data-field="minutes"]').fill("3")
    facilitator.locator('#fault-fields [data-field="slowdown"]').fill("40")
    facilitator.locator("#fault-at").fill("09:02")
    facilitator.get_by_role("button", name="Inject").click()
    facilitator.locator("#fault-list li", has_text="slow or failing service on recs at 09:02 · hidden").wait_for()

    step_to(facilitator, "09:01")
    for page in (ann, olu):
        page.locator("#clock", has_text="09:01").wait_for()
        diagram = page.locator("#diagram")
        assert diagram.locator("g[data-service]").count() == 3  # api, catalog, recs
        assert diagram.locator("line[data-edge]").count() == 2  # api → catalog, api → recs
        page.wait_for_function("() => document.querySelector('g[data-service=recs] text.value').textContent !== ''")
    assert "/s" in str(ann.locator("g[data-service=api] text.value").first.text_content())
    assert ann.locator("#m-cache_hit").count() == 0 and ann.locator('[data-control="ttl_s"]').count() == 0

    # who may act: the operator's boxes are open (not the entry's own fleet and deadline), the observer's closed
    assert olu.locator("#c-recs\\.timeout_ms").is_disabled()
    assert not ann.locator("#c-recs\\.timeout_ms").is_disabled()
    assert ann.locator("#c-api\\.timeout_ms").is_disabled() and ann.locator("#c-api\\.instances").is_disabled()
    ann.locator("#c-recs\\.timeout_ms").fill("100")
    ann.get_by_role("button", name="Apply the settings of recs").click()
    for page in (facilitator, olu):
        page.locator("#channel li", has_text="Ann (operations): recs: Timeout (ms) = 100").wait_for()
    step_to(facilitator, "09:03")
    olu.wait_for_function("() => document.querySelector('#c-recs\\\\.timeout_ms').value === '100'")
    ann.wait_for_function("() => document.querySelector('#c-recs\\\\.timeout_ms').value === '100'")
    ann.evaluate("() => window.scrollTo(0, 0)")
    ann.screenshot(path=str(tmp_path / "gameday-chain.png"))  # 1366 × 768, the graph at the top
    # out of range: the server's one line, naming the control
    ann.locator("#c-recs\\.retries").fill("9")
    ann.locator("#c-recs\\.retries").press("Enter")
    ann.locator("#gd-error", has_text="recs.retries").wait_for()

    for page in (ann, bob):
        assert page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth") <= 0
    bob.locator("#c-recs\\.timeout_ms").scroll_into_view_if_needed()
    box = bob.locator("#c-recs\\.timeout_ms").bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
    bob.evaluate("() => window.scrollTo(0, 0)")
    bob.screenshot(path=str(tmp_path / "gameday-chain-phone.png"))

    # the facilitator's panel in Danish: the chain's faults and the services' panel, no English left
    dansk, dw = person(browser)
    dansk.goto(server + room["facilitator_url"].replace("#", "?lang=da#"))
    dansk.locator("#facilitator").wait_for()
    dansk.locator("#fault-kind").select_option("service")
    dansk.locator('#fault-fields select[data-field="service"]').wait_for()
    assert not english_on(dansk, "da")

    # the debrief says where the failures began, as the console's does: at the slowed recs, seen at the api
    facilitator.on("dialog", lambda dialog: dialog.accept())
    facilitator.locator("#f-close").click()
    ann.locator("#d-origins").wait_for(timeout=180_000)  # the debrief computes its counterfactuals first
    assert ann.locator("#d-origins-rows tr").count() == 3
    headline = ann.locator("#d-origins-headline").inner_text()
    assert "began at recs, though every failed request was seen at api" in headline
    seen = ann.locator("#d-origins-rows tr[data-service=api] td").last.inner_text()
    assert seen.startswith("100")
    ann.locator("#d-origins").scroll_into_view_if_needed()
    ann.screenshot(path=str(tmp_path / "gameday-chain-debrief.png"))
    # and in Arabic, for a player who joins once the room is closed
    arabic, rw = person(browser)
    arabic.goto(server + room["player_url"].replace("#", "?lang=ar#"))
    arabic.locator("#join-name").fill("Samir")
    arabic.locator("#join-role").select_option("observer")
    arabic.locator("#join-form button[type=submit]").click()
    arabic.locator("#d-origins").wait_for()
    assert arabic.locator("#d-origins-rows tr").count() == 3
    assert not english_on(arabic, "ar")
    for page in (ann, arabic):  # the headline's share as its row says it, in the page's digits and pattern
        share = page.locator("#d-origins-rows tr[data-service=recs] td").nth(2).inner_text()
        assert share in page.locator("#d-origins-headline").inner_text(), share
    for watch in (fw, aw, ow, bw, dw, rw):
        watch.check()
    for page in (facilitator, ann, olu, bob, dansk, arabic):
        page.context.close()

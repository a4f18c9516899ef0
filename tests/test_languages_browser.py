"""The console in its five languages, in a real Chromium (issue 14): a scenario played to its debrief in each
language, no English left on any page of another language, and the Arabic page mirrored with its charts' time
axes still running left to right. One server and one browser for the whole module."""

from __future__ import annotations

import json
import re
import tomllib
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from babel.messages.pofile import read_po

import oncallsim
from oncallsim.i18n import LANGUAGES, page_catalog, translations
from oncallsim.model import CONTROL_SPECS
from oncallsim.refusals import render
from oncallsim.scenarios import builtin_scenarios
from oncallsim.scenarios.texts import scenario_text
from oncallsim.web.tutorial import tutorial_scenario
from tests.browser import chromium_page
from tests.server import running_server

# Wall-clock pacing (a browser at 16×, latency bounds): runs alone, after the parallel part of `make test`.
pytestmark = pytest.mark.serial

LOCALES = Path(oncallsim.__file__).parent / "locales"
ARTIFACTS = Path("artifacts")
# Names and units that read the same in every language the console speaks (a reader of any of them knows them).
ALLOWED = {"oncallsim", "p99", "p50", "p99.9", "CPU", "DB", "SLO", "ms", "s", "min", "—", "×", "%", "$/h", "S"}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Any]]:
    db = tmp_path_factory.mktemp("languages") / "runs.sqlite3"
    with running_server(db) as base, chromium_page() as page:
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        yield base, page
        assert errors == [], errors


def new_run(base: str, minutes: int = 30, speed: int = 8) -> str:
    """A paused bad deploy (its bad build goes out at minute 10), as short as the test needs."""
    body = {"scenario": "bad-deploy", "seed": 1, "speed": speed, "minutes": minutes, "difficulty": "hard"}
    request = urllib.request.Request(
        base + "/api/runs", json.dumps({**body, "paused": True}).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return str(json.loads(response.read())["id"])


def choose_language(page: Any, base: str, language: str) -> None:
    """The header's picker: each language named in itself; the choice is remembered (a cookie)."""
    page.goto(base + "/")
    page.click("#languages summary")
    page.click(f'#languages a[hreflang="{language}"]')
    page.wait_for_function(f"() => document.documentElement.lang === '{language}'")


def play_to_debrief(page: Any, base: str, language: str, query: bool = True) -> str:
    """Open the run's briefing in ``language`` (by ?lang=, or as remembered), start it, roll the bad build back,
    and open the debrief."""
    run_id = new_run(base)
    page.goto(f"{base}/runs/{run_id}" + (f"?lang={language}" if query else ""))
    title = scenario_text(builtin_scenarios()["bad-deploy"], "title", language)
    briefing = page.locator("#briefing")
    briefing.wait_for(state="visible")
    assert briefing.locator("#briefing-title").inner_text().startswith(title)
    page.click("#briefing-go")
    page.wait_for_function("() => Number(document.querySelector('main.console').dataset.minute) >= 12")
    page.click("#c-rollback")
    page.locator("#debrief-link").wait_for(state="visible")
    with page.expect_navigation(timeout=120_000):  # the debrief computes its counterfactuals first: a busy CI is slow
        page.click("#debrief-link")
    page.wait_for_selector("#debrief-chart .main-svg")
    return run_id


def test_a_scenario_played_to_its_debrief_in_each_language(site: tuple[str, Any]) -> None:
    base, page = site
    for language in LANGUAGES:
        choose_language(page, base, language)
        play_to_debrief(page, base, language, query=False)  # the console and the debrief follow the choice
        gettext = translations(language).gettext
        assert page.evaluate("() => [document.documentElement.lang, document.documentElement.dir]") == [
            language,
            "rtl" if language == "ar" else "ltr",
        ]
        text = page.locator("body").inner_text()
        assert "⟦" not in text, language  # no key of the page catalog missing
        assert gettext("Decisions and their measured effect") in text
        decisions = page.locator("#decisions").inner_text()
        assert gettext("Roll back") in decisions, (language, decisions)
        legend = page.eval_on_selector_all("#debrief-chart .legendtext", "els => els.map(e => e.textContent)")
        assert page_catalog(language)["series.capacity"] in legend, (language, legend)
        if ARTIFACTS.is_dir():
            page.screenshot(path=str(ARTIFACTS / f"debrief-{language}.png"), full_page=True)


def english_sources() -> set[str]:
    """Every English text a page may show: the catalogs' messages and the scenarios' own texts."""
    with (LOCALES / "en" / "LC_MESSAGES" / "messages.po").open("rb") as fh:
        messages = [m.string for m in read_po(fh) if m.id]
    texts: set[str] = set()
    for string in messages:
        texts.update(string if isinstance(string, tuple) else (string,))
    texts.update(page_catalog("en").values())
    for scenario in [*builtin_scenarios().values(), tutorial_scenario()]:
        texts.update(str(getattr(scenario, f)).strip() for f in ("title", "summary", "briefing"))
    return {t.strip() for t in texts if t.strip()}


def same_in(language: str) -> set[str]:
    """Texts the language's translators wrote the same as English (a name, a loan word): not a miss."""
    with (LOCALES / language / "LC_MESSAGES" / "messages.po").open("rb") as fh:
        same = {m.id for m in read_po(fh) if m.id and isinstance(m.id, str) and m.string == m.id}
    english, local = page_catalog("en"), page_catalog(language)
    same |= {text for key, text in english.items() if local.get(key) == text}
    shipped = tomllib.loads((LOCALES / language / "scenarios.toml").read_text(encoding="utf-8"))
    for scenario in [*builtin_scenarios().values(), tutorial_scenario()]:
        title = str(shipped.get(scenario.id, {}).get("title", "")).strip()
        same |= {title} if title == scenario.title.strip() else set()  # a title kept as a loan word
    return same


def visible_pieces(page: Any) -> list[str]:
    """The page's visible text, cut where a reader's eye stops: lines and table cells. Formulas (MathML) and
    code (a parameter's name) are notation and identifiers, not sentences: left out."""
    text = page.evaluate(
        """() => {
          const maths = [...document.querySelectorAll("math, code")];
          maths.forEach((m) => { m.dataset.display = m.style.display; m.style.display = "none"; });
          const text = document.body.innerText;
          maths.forEach((m) => { m.style.display = m.dataset.display; });
          return text;
        }"""
    )
    return [p.strip() for p in re.split(r"[\n\t]", text) if p.strip()]


def test_no_english_text_on_any_page_in_another_language(site: tuple[str, Any]) -> None:
    base, page = site
    run_id = play_to_debrief(page, base, "en")
    pages = [
        "/",
        "/runs",
        "/model",
        "/play?scenario=surge&seed=3",
        "/leaderboard?scenario=surge&seed=3",
        "/play?scenario=nope&seed=3",  # an error page
        "/gameday",  # a game day's facilitator page
        f"/runs/{run_id}",
        f"/runs/{run_id}/debrief",
        f"/runs/{run_id}/whatif?kind=rollback_at_page",
    ]
    english = english_sources()
    found: list[str] = []
    for language in LANGUAGES:
        if language == "en":
            continue
        allowed = ALLOWED | same_in(language)
        for path in pages:
            page.goto(base + path + ("&" if "?" in path else "?") + "lang=" + language)
            if path == f"/runs/{run_id}":  # the console: its status and event log filled by the script
                page.wait_for_function("() => Number(document.querySelector('main.console').dataset.records) > 0")
            found += [f"{language} {path}: {p!r}" for p in visible_pieces(page) if p in english and p not in allowed]
    assert not found, f"{len(found)} English texts on translated pages: {found[:12]}"


def test_arabic_console_is_mirrored_with_time_running_left_to_right(site: tuple[str, Any]) -> None:
    base, page = site
    run_id = new_run(base, minutes=40, speed=16)
    page.goto(f"{base}/runs/{run_id}?lang=ar")
    page.locator("#briefing").wait_for(state="visible")
    page.click("#briefing-go")
    page.wait_for_function("() => document.querySelector('main.console').dataset.charted === '40'")
    box = lambda selector: page.locator(selector).first.bounding_box()  # noqa: E731
    # the header reads from the right: the name first (rightmost), the navigation after it
    assert box(".brand")["x"] > box(".nav")["x"]
    # the status column (first in reading order) on the right, the controls on the left
    status, charts, controls = (
        box("section.status"),
        box("section.charts"),
        box("main.console > section.side:last-child"),
    )
    assert status["x"] > charts["x"] > controls["x"]
    # yet time runs left to right: the traffic chart's tick labels read 09:00 … from left to right
    ticks = page.eval_on_selector_all(
        "#chart-traffic .xtick text", "els => els.map(e => [e.getBoundingClientRect().x, e.textContent])"
    )
    assert len(ticks) >= 3
    xs = [x for x, _label in ticks]
    labels = [label for _x, label in ticks]
    assert xs == sorted(xs) and labels == sorted(labels), ticks
    # a status value keeps its digits in order inside the Arabic text (bidi isolation)
    burn = page.locator("#s-burn_1h").inner_text()
    assert re.search(r"\d+\.\d", burn), burn
    if ARTIFACTS.is_dir():
        page.screenshot(path=str(ARTIFACTS / "console-ar-mirrored.png"))


def test_the_status_column_and_the_chart_titles_fit_a_laptop_in_every_language(site: tuple[str, Any]) -> None:
    """At 1366×768, in the retry storm's aftermath (flags up: paging, timeouts, errors high; the request engine's
    eight narrow charts): every status label, value and flag inside the 300 px column with its words whole, and
    every chart title inside its own chart."""
    base, page = site
    body = {"scenario": "retry-storm", "seed": 3, "speed": 1, "paused": True}
    request = urllib.request.Request(
        base + "/api/runs", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=300) as response:  # the first request-engine step may compile
        run_id = str(json.loads(response.read())["id"])
    step = json.dumps({"type": "step"}).encode()
    for _ in range(40):
        urllib.request.urlopen(
            urllib.request.Request(base + f"/api/runs/{run_id}/control", step, {"Content-Type": "application/json"}),
            timeout=300,
        ).close()
    page.set_viewport_size({"width": 1366, "height": 768})
    try:
        for language in LANGUAGES:
            page.goto(f"{base}/runs/{run_id}?lang={language}")
            page.wait_for_function("() => document.querySelector('main.console').dataset.records === '40'")
            page.wait_for_selector("#chart-attempts .gtitle")
            flags = page.eval_on_selector_all(
                "#status-table .flag", "els => els.map(e => e.textContent).filter(Boolean)"
            )
            assert len(flags) >= 3, (language, flags)  # the storm raises several: the check is not vacuous
            outside = page.evaluate(
                """() => {
                  const column = document.querySelector("section.status").getBoundingClientRect();
                  const out = [];
                  for (const el of document.querySelectorAll("#status-table th, #status-table td span")) {
                    const r = el.getBoundingClientRect();
                    const inside = r.left >= column.left - 0.5 && r.right <= column.right + 0.5;
                    if (r.width && !inside) out.push(el.textContent);
                  }
                  // words whole: with no break inside a word allowed, the table still fits its column
                  const table = document.getElementById("status-table");
                  for (const th of table.querySelectorAll("th")) th.style.overflowWrap = "normal";
                  const width = table.getBoundingClientRect().width;
                  if (width > table.parentElement.clientWidth + 0.5) out.push("a word broken");
                  for (const th of table.querySelectorAll("th")) th.style.overflowWrap = "";
                  return out;
                }"""
            )
            assert outside == [], (language, outside)
            titles = page.evaluate(
                """() => [...document.querySelectorAll(".chart")].filter((c) => c.querySelector(".gtitle")).map((c) => {
                  const chart = c.getBoundingClientRect(), title = c.querySelector(".gtitle").getBoundingClientRect();
                  return [c.id, title.left >= chart.left - 0.5 && title.right <= chart.right + 0.5];
                })"""
            )
            assert len(titles) == 8 and all(fits for _, fits in titles), (language, titles)
            # once the page banner is up, every figure takes its cell's height and keeps its legend inside it
            page.wait_for_function(
                """() => [...document.querySelectorAll(".chart.js-plotly-plot")].every(
                  (c) => Math.abs(c._fullLayout.height - c.getBoundingClientRect().height) < 1)"""
            )
            spill = page.evaluate(
                """() => [...document.querySelectorAll(".chart")].filter((c) => {
                  const legend = c.querySelector(".legend")?.getBoundingClientRect();
                  if (!legend) return false;
                  return legend.bottom > c.getBoundingClientRect().bottom + 1;
                }).map((c) => c.id)"""
            )
            assert spill == [], (language, spill)
    finally:
        page.set_viewport_size({"width": 1366, "height": 900})


def test_the_top_bar_stays_one_row_at_1440_in_every_language_once_a_run_has_ended(site: tuple[str, Any]) -> None:
    """The end-of-run links (Debrief) and Zulu's or Armenian's long words would wrap the console's bar at 1440 px:
    the site's links then fold into a menu (measured, not per language), whose links still lead where they did."""
    base, page = site
    run_id = new_run(base, minutes=5)
    end = json.dumps({"type": "end"}).encode()
    urllib.request.urlopen(
        urllib.request.Request(base + f"/api/runs/{run_id}/control", end, {"Content-Type": "application/json"}),
        timeout=60,
    ).close()
    page.set_viewport_size({"width": 1440, "height": 900})
    folded = []
    for language in LANGUAGES:
        page.goto(f"{base}/runs/{run_id}?lang={language}")
        page.locator("#debrief-link").wait_for(state="visible")
        spread = page.evaluate(
            """() => { const mids = [...document.querySelector('.topbar').children]
                .map((el) => el.getBoundingClientRect()).filter((r) => r.width).map((r) => r.top + r.height / 2);
              return Math.max(...mids) - Math.min(...mids); }"""
        )
        assert spread < 10, (language, spread)  # every item on one row
        if page.locator(".nav-menu").is_visible():
            folded.append(language)
            page.click("#nav-menu summary")
            page.locator(".nav-menu-list a[href*='/runs']").wait_for(state="visible")
            page.click("#nav-menu summary")
        else:
            assert page.locator(".topbar > .nav").is_visible()
    assert "zu" in folded and "en" not in folded, folded  # the check is not vacuous, nor folds what fits


def new_room(base: str) -> dict[str, Any]:
    body = {"scenario": "free-play", "seed": 4, "minutes": 60, "speed": 4, "engine": "minute"}
    request = urllib.request.Request(
        base + "/api/gameday/rooms", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return dict(json.loads(response.read()))


def test_a_game_day_rooms_controls_and_refusals_speak_the_pages_language(site: tuple[str, Any]) -> None:
    """A player's room in each language, on a phone: each control's unit in the language (not "(instances)" on
    a Danish page, and a one-letter unit kept where the label has that letter inside a word: "Cachens TTL (s)");
    an out-of-range value refused in the language, the refusal dismissed by its button
    and cleared by the next try; the clock and the run's state in view wherever the page is scrolled."""
    base, page = site
    page.set_viewport_size({"width": 390, "height": 844})
    try:
        for language in LANGUAGES:
            gettext = translations(language).gettext
            room = new_room(base)
            page.goto(base + room["player_url"].replace("#", f"?lang={language}#"))
            page.locator("#join-name").fill("Ann")
            page.locator("#join-role").select_option("operations")
            page.locator("#join-form button[type=submit]").click()
            page.locator("#room").wait_for()
            for name in ("floor", "ttl_s"):
                spec = CONTROL_SPECS[name]
                label = page.locator(f'#controls input[data-value="{name}"]').locator("xpath=..").inner_text()
                assert label.strip() == f"{gettext(spec.label)} ({gettext(spec.unit)})", (language, label)
            floor = CONTROL_SPECS["floor"]
            page.locator('#controls input[data-value="floor"]').fill("9999")
            page.locator('#controls button[data-control="floor"]').click()
            toast = page.locator("#gd-error")
            toast.wait_for()
            said = page.locator("#gd-error-text").inner_text()
            if language != "en":  # the server's sentence in the language (English: the API's message, as ever)
                details = {"lo": floor.min, "hi": floor.max, "got": 9999, "whole": True, "unit": floor.unit}
                assert render("range", details, language) in said, (language, said)
            page.locator("#gd-error-dismiss").click()
            toast.wait_for(state="hidden")
            page.locator('#controls button[data-control="floor"]').click()  # refused again, then a new try
            toast.wait_for()
            page.locator('#controls input[data-value="floor"]').fill("12")
            page.locator('#controls button[data-control="floor"]').click()
            toast.wait_for(state="hidden")
            page.locator("#channel li", has_text="12").wait_for()
            # far down the page, the run's clock and state are still in view (the room's bar sticks to the top)
            page.locator("#say-text").scroll_into_view_if_needed()
            assert page.evaluate("window.scrollY") > 0
            for shown in ("#clock", "#run-state"):
                box = page.locator(shown).bounding_box()
                assert box is not None and 0 <= box["y"] and box["y"] + box["height"] <= 844, (language, shown, box)
    finally:
        page.set_viewport_size({"width": 1366, "height": 900})

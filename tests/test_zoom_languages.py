"""The zoomed minute in the reader's language: the page the console serves (?lang=, the remembered choice), the
offline file `oncallsim zoom --html --lang` writes, the "In force: …" phrases of every request-engine setting and
the chart's words — no English word the language's own texts do not use, no placeholder left, no number written
another language's way (the debrief's checker, tests/test_debrief_languages.py), Arabic right to left."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from oncallsim import Simulation
from oncallsim.cli import app
from oncallsim.i18n import format_number, number_formatter, translations
from oncallsim.model import CONTROL_SPECS
from oncallsim.zoom import ZoomedMinute
from oncallsim.zoom.html import in_force_text, render_zoom_html
from oncallsim.zoom.minute import zoom_record
from tests.test_debrief_languages import LANGUAGES, offenders, visible
from tests.test_web import console

# Names a reader of every language reads as they are (the percentile "p99.9" is not a decimal number).
NAMES = ("p99.9",)


@pytest.fixture(scope="module")
def storm() -> tuple[Simulation, ZoomedMinute]:
    """A retry storm's minute in a database brownout (seed 3: 6.37× slower reads), on the request engine: its
    record carries the settings in force (retries, backoff), so the page says "In force: …" and "a brownout"."""
    sim = Simulation("retry-storm", seed=3, minutes=23)
    sim.run()
    return sim, zoom_record(sim.timeline[21], sim.params, sim.seed, "request")


def figure_texts(page: str) -> str:
    """The words of the chart's figure (the served page carries it as JSON): legends, titles, axes, bars, hovers."""
    found = re.search(r'<script id="zoom-figure" type="application/json">(.*?)</script>', page, re.S)
    assert found is not None
    figure = json.loads(found.group(1).replace("<\\/", "</"))
    texts = [t.get("name", "") for t in figure["data"]]
    texts += [str(x) for t in figure["data"] if t.get("type") == "bar" and isinstance(t["x"][0], str) for x in t["x"]]
    texts += [h for t in figure["data"] for h in t.get("hovertext") or []]
    layout = figure["layout"]
    texts += [a["text"] for a in layout.get("annotations", [])]
    texts += [v["title"]["text"] for k, v in layout.items() if "axis" in k and "title" in v]
    return " · ".join(texts)


def problems(page: str, language: str) -> list[str]:
    said = visible(page) + " · " + figure_texts(page)
    for name in NAMES:
        said = said.replace(name, "")
    found = offenders(said, language)
    found += re.findall(r"%\(\w+\)s|\{\w+\}|⟦", said)  # a placeholder left unfilled, a page catalog key missing
    return found


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_zoom_page_speaks_one_language(storm: tuple[Simulation, ZoomedMinute], language: str) -> None:
    _sim, z = storm
    page = render_zoom_html(z, served=True, language=language, back="/runs/r1?lang=" + language)
    assert not problems(page, language), problems(page, language)[:12]
    gettext = translations(language).gettext
    rtl = language == "ar"
    assert re.search(rf'<html lang="{language}" dir="{"rtl" if rtl else "ltr"}"', page)
    assert gettext("The whole minute") in page and gettext("The whole minute") != "The whole minute"
    said = re.sub(r"[ \t\r\n]+", " ", visible(page))  # a no-break space stays: Armenian groups digits with it
    # the settings in force, each in the language with its value ("up to 3 retries per request")
    retries = gettext("up to %(value)s per request") % {"value": f"3 {gettext('retries')}"}
    assert retries in said and gettext("the %(value)s balancer") % {"value": "p2c"} in said, said[:600]
    # numbers as the language writes them: the timeout's 2,000 ms grouped with the language's own separator
    grouped = {"da": "2.000", "zu": "2,000", "hy": "2\xa0000", "ar": "2,000"}[language]
    assert (
        gettext("%(timeout)s: the client gave up after %(ms)s ms")
        % {
            "timeout": gettext("timeout"),
            "ms": grouped,
        }
        in said
    )
    assert '<a href="/runs/r1?lang=' + language + '">' in page


def test_the_checker_finds_the_english_zoom_page(storm: tuple[Simulation, ZoomedMinute]) -> None:
    """The check itself: the English page read as Danish is full of English (and English numbers)."""
    page = render_zoom_html(storm[1], served=True)
    found = problems(page, "da")
    assert {"answered", "timed", "retried", "whole", "arrivals"} <= set(found) and {"0%", "243.9"} <= set(found)
    assert "In force: the p2c balancer; FIFO queues; up to 3 retries per request; retried at once." in " ".join(
        visible(page).split()
    )


@pytest.mark.parametrize(
    ("language", "one", "many"),
    [
        ("en", "1 request timed out", "1,234 requests timed out"),
        ("da", "1 request fik timeout", "1.234 requests fik timeout"),
        ("zu", "Isicelo esingu-1 siphelelwe", "Izicelo ezingu-1,234 ziphelelwe"),
        ("hy", "1 հարցում ժամկետանց եղավ", "1 234 հարցում ժամկետանց եղավ"),
        ("ar", "انتهت مهلة 1 طلب", "انتهت مهلة 1,234 طلبًا"),  # 34: Arabic's "many" (11-99) form
    ],
)
def test_the_timed_out_requests_are_counted_in_the_languages_plural(
    storm: tuple[Simulation, ZoomedMinute], language: str, one: str, many: str
) -> None:
    """ "%(n)s requests timed out" takes the language's plural form for its count (one, and Arabic's six)."""
    for timeouts, expected in ((1, one), (1234, many)):
        z = dataclasses.replace(storm[1], timeouts=timeouts)
        page = " ".join(visible(render_zoom_html(z, served=True, language=language)).split())
        assert expected in page, (language, timeouts)
    if language == "ar":  # 3 to 10: the plural proper; 2: the dual
        pages = {n: visible(render_zoom_html(dataclasses.replace(storm[1], timeouts=n), True, "ar")) for n in (2, 3)}
        assert "انتهت مهلة 2 طلبين" in pages[2] and "انتهت مهلة 3 طلبات" in pages[3]


def test_every_in_force_phrase_is_translated_with_its_value() -> None:
    """Settings that say every phrase of every request-engine control (``ControlSpec.in_force``) once."""
    said_of = [
        {"balancer": "p2c", "queue_discipline": "codel", "codel_preset": "kratos", "codel_target_ms": 20,
         "codel_interval_ms": 200, "queue_limit": 50, "deadline_propagation": True, "server_timeout_ms": 300,
         "limiter": "bbr", "controller": "gradient2", "breaker": "sre", "throttle_preset": "aegis", "retries": 3,
         "retry_backoff": "full-jitter", "retry_budget": 0.1, "self_protection": False, "queue_priority": "strict"},
        {"queue_discipline": "adaptive-lifo", "breaker": "classic", "retries": 2, "retry_backoff": "none"},
        {"queue_discipline": "fifo", "retries": 0},
    ]  # fmt: skip
    english = "; ".join(in_force_text(settings) for settings in said_of)
    for spec in CONTROL_SPECS.values():
        for phrase in filter(None, spec.in_force.values()):
            pattern = re.escape(phrase).replace(re.escape("%(value)s"), ".+?")
            assert re.search(pattern, english), f"{spec.name}: {phrase!r} is said by none of the settings"
    assert "a 10% retry budget" in english and "a queue limit of 50 requests" in english
    for language in LANGUAGES:
        for settings in said_of:
            text = in_force_text(settings, language)
            assert text and not offenders(text, language) and "%(" not in text, (language, text)
        budget = in_force_text(said_of[0], language)
        # a fraction in the language's percent pattern, a number with its unit translated
        assert translations(language).gettext("a %(value)s retry budget") % {"value": _percent(10, language)} in budget
    assert "؛ " in in_force_text(said_of[0], "ar")  # the Arabic list's own semicolon


def _percent(n: int, language: str) -> str:
    return {"da": f"{n}\xa0%", "zu": f"{n}%", "hy": f"{n}%", "ar": f"{n}%"}[language]


def test_the_fast_number_formatter_writes_what_babel_writes() -> None:
    """The sampled requests' table writes its hundreds of numbers with ``number_formatter``: Babel's text."""
    for language in ("en", *LANGUAGES):
        write = number_formatter(language)
        for value in (0, 0.5, 12.25, 999.95, 1234.5678, 1_234_567.891, -3.5):
            for digits in (0, 1, 3):
                assert write(value, digits) == format_number(value, language, digits), (language, value, digits)


@pytest.fixture(scope="module")
def client_and_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, str]]:
    sim = Simulation("bad-deploy", seed=4, minutes=6, engine="request")  # short: an import replays it whole
    sim.run()
    with console(tmp_path_factory.mktemp("zoomlang") / "runs.sqlite3") as client:
        files = {"file": ("run.json", sim.run_file().model_dump_json(), "application/json")}
        response = client.post("/api/runs/import", files=files)
        assert response.status_code == 201, response.text
        yield client, str(response.json()["id"])


def test_the_console_serves_the_zoom_in_the_chosen_language(client_and_run: tuple[TestClient, str]) -> None:
    client, run_id = client_and_run
    chosen = client.get(f"/runs/{run_id}/zoom", params={"minute": 4, "lang": "ar"})
    assert chosen.status_code == 200 and '<html lang="ar" dir="rtl"' in chosen.text
    assert "oncallsim_lang=ar" in chosen.headers["set-cookie"]  # remembered, as every page remembers it
    assert f'<a href="/runs/{run_id}?lang=ar">' in chosen.text  # the link back keeps the language
    assert not problems(chosen.text, "ar"), problems(chosen.text, "ar")[:12]
    remembered = client.get(f"/runs/{run_id}/zoom", params={"minute": 4}, headers={"Accept-Language": "da"})
    assert '<html lang="ar"' in remembered.text  # the cookie wins over the browser's language
    client.cookies.clear()
    browser = client.get(f"/runs/{run_id}/zoom", params={"minute": 4}, headers={"Accept-Language": "hy,en;q=0.5"})
    assert '<html lang="hy" dir="ltr"' in browser.text and "set-cookie" not in browser.headers
    english = client.get(f"/runs/{run_id}/zoom", params={"minute": 4}, headers={"Accept-Language": "en"})
    assert '<html lang="en" dir="ltr"' in english.text and f'<a href="/runs/{run_id}">' in english.text


def test_cli_writes_the_offline_page_in_a_language(storm: tuple[Simulation, ZoomedMinute], tmp_path: Path) -> None:
    saved, page = tmp_path / "run.json", tmp_path / "zoom.html"
    storm[0].run_file().save(saved)
    runner = CliRunner()
    done = runner.invoke(app, ["zoom", str(saved), "--minute", "4", "--html", str(page), "--lang", "hy"])
    assert done.exit_code == 0, done.output
    html = page.read_text(encoding="utf-8")
    assert '<html lang="hy" dir="ltr"' in html and translations("hy").gettext("The whole minute") in html
    assert "Plotly.newPlot" in html and '"catalog"' in html
    refused = runner.invoke(app, ["zoom", str(saved), "--minute", "4", "--html", str(page), "--lang", "xx"])
    assert refused.exit_code == 2 and refused.output.count("\n") == 1 and "--lang" in refused.output

"""No English inside another language (issue 25, item 9): every debrief and summary a reader gets — the web page, the
offline report, the terminal's — read in Danish, isiZulu, Armenian and Arabic, holds no English word the language's
own texts do not use too, and no number, share or amount written another language's way."""

from __future__ import annotations

import io
import json
import re
import tomllib
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from rich.console import Console

import oncallsim
from oncallsim import Simulation
from oncallsim.cli_debrief import print_debrief_in
from oncallsim.debrief import Report
from oncallsim.i18n import translations
from oncallsim.policies import Textbook
from oncallsim.scenarios.texts import scenario_text
from tests.test_web import console

PACKAGE = Path(oncallsim.__file__).parent
LANGUAGES = ("da", "zu", "hy", "ar")
WORD = re.compile(r"[A-Za-z][A-Za-z'’-]{2,}")


def words(text: str) -> set[str]:
    return {w.lower().strip("'’-") for w in WORD.findall(text)}


def english_only(language: str) -> set[str]:
    """Words of the English texts (catalogs, scenario files, the control registry's phrases) that the language's own
    texts never use: names and loan words (p2c, CoDel, cache, build, …) appear in both and are allowed."""
    with (PACKAGE / "locales" / "en" / "LC_MESSAGES" / "messages.po").open("rb") as fh:
        from babel.messages.pofile import read_po

        english = " ".join(m.id if isinstance(m.id, str) else " ".join(m.id) for m in read_po(fh) if m.id)
    english += " " + " ".join(json.loads((PACKAGE / "locales" / "en" / "page.json").read_text()).values())
    with (PACKAGE / "locales" / language / "LC_MESSAGES" / "messages.po").open("rb") as fh:
        own = " ".join(str(m.string) for m in read_po(fh, locale=language) if m.id)
    own += " " + " ".join(json.loads((PACKAGE / "locales" / language / "page.json").read_text()).values())
    own += " " + json.dumps(tomllib.loads((PACKAGE / "locales" / language / "scenarios.toml").read_text()))
    return words(english) - words(own)


# Numbers written another language's way: a decimal point where the language writes a comma (and the reverse), a
# dollar sign before the amount where the language writes the currency after it, a percent sign without the space
# the language puts before it.
DECIMAL_POINT = r"(?<![\d.])\d+\.\d{1,2}(?![\d.])"  # 12.6 (not a version, 0.1.0, nor a grouped 1.234)
DECIMAL_COMMA = r"(?<![\d,])\d+,\d{1,2}(?![\d,])"  # 12,6 (not a grouped 1,234)
FOREIGN = {
    "da": [DECIMAL_POINT, r"\$\d", r"\d%"],
    "hy": [DECIMAL_POINT, r"\$\d"],
    "zu": [DECIMAL_COMMA],
    "ar": [DECIMAL_COMMA, r"\$\d"],
}


class Visible(HTMLParser):
    """The text a reader sees: no scripts, styles or code samples."""

    def __init__(self) -> None:
        super().__init__()
        self.hidden = 0
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in ("script", "style", "code"):
            self.hidden += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "code"):
            self.hidden -= 1

    def handle_data(self, data: str) -> None:
        if not self.hidden:
            self.parts.append(data)


def visible(html: str) -> str:
    parser = Visible()
    parser.feed(html)
    return " ".join(parser.parts)


def runs() -> Iterator[tuple[str, Simulation]]:
    """A late rollback with a second move (the narrative names both sides' moves), a cache flush played by the
    playbook (it sheds), a slow instance ejected and replaced (the request engine's rows, an instance's name), and a
    chain of services with a service's timeout set (where the failures began, a service's move)."""
    late = Simulation("bad-deploy", seed=2, minutes=80)
    late.run(until=34)
    late.step([("floor", 12)])
    late.step([("rollback", None)])
    late.run()
    yield "late rollback", late
    flush = Simulation("cache-flush", seed=3, minutes=60)
    flush.run(policy=Textbook())
    yield "playbook flush", flush
    slow = Simulation("slow-instance", seed=3, minutes=45)
    slow.run(until=33)
    slow.step([("eject", slow.plan.faults[0].minute % 10)])
    slow.run()
    yield "slow instance", slow
    chain = Simulation("cascade", seed=3, minutes=30)  # a chain: where the failures began, its services' moves
    chain.run(until=12)
    chain.step([("recs.timeout_ms", 100)])
    chain.run()
    yield "chain", chain


@pytest.fixture(scope="module")
def debriefed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, list[tuple[str, str, Any]]]]:
    with console(tmp_path_factory.mktemp("db") / "runs.sqlite3") as client:
        made = []
        for name, sim in runs():
            body = sim.run_file().model_dump_json()
            response = client.post("/api/runs/import", files={"file": ("r.json", body, "application/json")})
            assert response.status_code == 201, response.text
            made.append((name, response.json()["id"], sim))
        yield client, made


def offenders(text: str, language: str) -> list[str]:
    english = english_only(language)
    found = sorted(w for w in words(text) if w in english)
    for pattern in FOREIGN[language]:
        found += [m.group(0) for m in re.finditer(pattern, text)]
    return found


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_debrief_and_summary_speaks_one_language(
    debriefed: tuple[TestClient, list[tuple[str, str, Any]]], language: str
) -> None:
    client, made = debriefed
    for name, run_id, sim in made:
        page = visible(client.get(f"/runs/{run_id}/debrief?lang={language}").text)
        assert not offenders(page, language), (name, "web debrief", offenders(page, language)[:12])
        report = Report.model_validate(client.get(f"/api/runs/{run_id}/debrief").json())
        out = io.StringIO()
        print_debrief_in(report, scenario_text(sim.scenario, "title", language), language, Console(file=out, width=200))
        assert not offenders(out.getvalue(), language), (name, "terminal", offenders(out.getvalue(), language)[:12])
        headline = " ".join(visible(client.get(f"/runs/{run_id}/debrief?lang={language}").text).split())
        assert translations(language).gettext("Debrief") in headline
    # the offline report of the richest run (it replays the counterfactuals again)
    name, run_id, _sim = made[0]
    offline = visible(client.get(f"/runs/{run_id}/report.html?lang={language}").text)
    assert not offenders(offline, language), (name, "offline report", offenders(offline, language)[:12])


def test_the_english_checker_finds_english_and_foreign_numbers() -> None:
    """The checker itself: an English move and English number formats inside Danish are found, Danish ones are not."""
    assert "rolled" in offenders("Drejebogen rolled back kl. 09:29", "da")
    assert offenders("12.6% og $8.83", "da") == ["12.6", "8.83", "$8", "6%"]
    assert not offenders("Drejebogen rullede tilbage kl. 09:29: 12,6\xa0% og 8,83\xa0USD; 1.234 requests", "da")
    assert offenders("12,6% 1,234", "zu") == ["12,6"]

"""Every user-facing string goes through the translation layer, and English is complete."""

from __future__ import annotations

import importlib
import json
import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from babel.messages.pofile import read_po

import oncallsim
from oncallsim import Action, Simulation
from oncallsim.i18n import (
    LANGUAGE_NAMES,
    LANGUAGES,
    direction,
    format_money,
    format_number,
    format_percent,
    missing_placeholders,
    negotiate,
    page_catalog,
    placeholders,
    plural_categories,
    translations,
)
from oncallsim.model.formulas import FORMULAS

PACKAGE = Path(oncallsim.__file__).parent
ROOT = PACKAGE.parent
TEMPLATES = PACKAGE / "web" / "templates"
SCRIPTS = PACKAGE / "web" / "static" / "js"


def po_ids(language: str = "en") -> dict[str, str]:
    with (PACKAGE / "locales" / language / "LC_MESSAGES" / "messages.po").open("rb") as fh:
        return {m.id: m.string for m in read_po(fh) if m.id}  # type: ignore[misc]


def test_english_catalog_is_up_to_date_and_complete() -> None:
    update = update_catalogs()
    catalog = po_ids()
    missing = set(update.extracted()) - set(catalog)
    assert not missing, f"run scripts/update_catalogs.py; missing: {sorted(missing)[:5]}"
    assert all(catalog[k] for k in catalog), "English must translate every message"


def test_server_translations_load() -> None:
    assert translations("en").gettext("Roll back") == "Roll back"
    for language in LANGUAGES:  # every language with a catalog is chosen by ?lang= and by the browser
        assert negotiate(language, None) == language
        assert negotiate(None, f"{language}-XX,{language};q=0.9,en;q=0.5") == language
    assert negotiate("xx", None) == "en"  # no catalog: English
    assert negotiate(None, "xx-YY,xx;q=0.9") == "en"
    assert negotiate(None, "en;q=0.3, hy;q=0.8, da;q=0.5") == "hy"  # the browser's weights decide
    assert negotiate(None, "da;q=oops, ar") == "ar"
    assert negotiate(None, "da", remembered="zu") == "zu" and negotiate("ar", "da", remembered="zu") == "ar"


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.skip = 0
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self.skip += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self.skip -= 1

    def handle_data(self, data: str) -> None:
        if not self.skip and re.search(r"[A-Za-z]{2,}", data):
            self.found.append(data.strip())


def test_templates_have_no_hard_wired_text() -> None:
    for path in [*TEMPLATES.glob("*.html"), PACKAGE / "zoom" / "templates" / "zoom.html.j2"]:
        source = re.sub(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", " ", path.read_text(), flags=re.S)
        parser = _Text()
        parser.feed(source)
        assert parser.found == [], f"{path.name}: text outside _(): {parser.found[:3]}"
        for attr in re.findall(r'(?:aria-label|title|placeholder|alt)="([^"{]*[A-Za-z]{2,}[^"{]*)"', source):
            raise AssertionError(f"{path.name}: attribute text outside _(): {attr}")


def test_scripts_take_every_string_from_the_catalog() -> None:
    catalog = page_catalog("en")
    for path in SCRIPTS.glob("*.js"):
        source = path.read_text()
        for key in re.findall(r"\bt\(\"([^\"]+)\"", source):
            assert key in catalog, f"{path.name}: t({key!r}) is not in locales/en/page.json"
        # a text literal written into the page bypasses the catalog (clearing an element with "" is fine)
        assert not re.search(r'textContent = "[^"]', source) and "innerHTML" not in source, path.name


def event_key(event: Any) -> str:
    """The page catalog's key for an event, as i18n.js's tEvent picks it (English plural forms)."""
    key = "event." + event.code
    if event.code == "setting":
        key += "." + event.args["name"]
        if isinstance(event.args["value"], bool):
            key += ".on" if event.args["value"] else ".off"
    elif "n" in event.args:
        key += ".one" if event.args["n"] == 1 else ".other"
    return key


def update_catalogs() -> Any:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        return importlib.import_module("update_catalogs")
    finally:
        sys.path.pop(0)


def test_page_catalog_events_come_from_the_model_and_the_registry() -> None:
    on_disk = json.loads((PACKAGE / "locales" / "en" / "page.json").read_text())
    assert on_disk == json.loads(update_catalogs().page_catalog_text()), "run scripts/update_catalogs.py"


def test_every_model_event_has_a_catalog_entry() -> None:
    catalog = page_catalog("en")
    events: set[str] = set()
    plays = {
        "bad-deploy": [
            Action(20, "rollback"),
            Action(22, "rollback"),
            Action(30, "floor", 11),
            Action(31, "floor", 14),
        ],
        "cache-flush": [
            Action(29, "warmup"),
            Action(30, "warmup"),
            Action(31, "recommendations", False),
            Action(31, "shed_share", 0.5),
            Action(32, "ttl_s", 120),
            Action(33, "target_utilization", 0.5),
            Action(34, "autoscaler", False),
            Action(35, "floor", 9),
            Action(36, "floor", 12),
            Action(37, "floor", 13),
            Action(60, "autoscaler", True),
            Action(61, "recommendations", True),
        ],
        "surge": [],
    }
    for scenario, actions in plays.items():
        for seed in range(3):
            sim = Simulation(scenario, seed=seed)
            sim.run(actions)
            events.update(e for r in sim.timeline for e in r.events)
    assert {"page fired", "page cleared", "rollback ready", "warm-up finished", "cache flushed"} <= events
    missing = sorted(str(e) for e in events if event_key(e) not in catalog)
    assert not missing, f"locales/en/page.json lacks keys for: {missing}"


def test_page_catalog_is_valid_json_with_text_values() -> None:
    data = json.loads((PACKAGE / "locales" / "en" / "page.json").read_text())
    assert all(isinstance(v, str) and v for v in data.values())


def test_every_formula_names_real_code() -> None:
    for formula in FORMULAS:
        module_name, _, attr = formula.code.rpartition(".")
        module = importlib.import_module(module_name)
        assert callable(getattr(module, attr)), formula.code


# ---- the five languages (issue 14) -------------------------------------------------------------------------------

OTHERS = ("da", "zu", "hy", "ar")
# A translation may equal its source only when it is a name, a unit or a placeholder alone: these words are the
# same in every language the console speaks (checked again on the pages: tests/test_languages_browser.py).
SAME_EVERYWHERE = {"oncallsim", "p99", "p50", "CPU", "DB", "SLO", "Erlang C", "ms", "s", "min", "—", "×", "%", "$/h"}


def po_messages(language: str) -> dict[Any, Any]:
    with (PACKAGE / "locales" / language / "LC_MESSAGES" / "messages.po").open("rb") as fh:
        return {m.id: m.string for m in read_po(fh, locale=language) if m.id}


def page_json(language: str) -> dict[str, str]:
    return dict(json.loads((PACKAGE / "locales" / language / "page.json").read_text(encoding="utf-8")))


def test_the_console_speaks_five_languages() -> None:
    assert LANGUAGES == ("en", "da", "zu", "hy", "ar")
    assert {code: LANGUAGE_NAMES[code] for code in LANGUAGES} == {
        "en": "English",
        "da": "Dansk",
        "zu": "isiZulu",
        "hy": "Հայերեն",
        "ar": "العربية",
    }
    assert [direction(code) for code in LANGUAGES] == ["ltr", "ltr", "ltr", "ltr", "rtl"]
    assert len(plural_categories("ar")) == 6 and plural_categories("da") == ("one", "other")


def test_every_language_has_every_message_of_the_english_catalog() -> None:
    english = po_messages("en")
    for language in OTHERS:
        catalog = po_messages(language)
        missing = sorted(str(k) for k in set(english) - set(catalog))
        stale = sorted(str(k) for k in set(catalog) - set(english))
        assert not missing and not stale, (
            f"{language}: run scripts/update_catalogs.py; missing {missing[:3]}, stale {stale[:3]}"
        )
        forms = len(plural_categories(language))
        untranslated = []
        for msgid, string in catalog.items():
            if isinstance(msgid, tuple):  # a plural message: every form of the language, each written
                if not isinstance(string, tuple) or len(string) != forms or not all(string):
                    untranslated.append(msgid[0])
            elif not string:
                untranslated.append(msgid)
        assert not untranslated, f"{language}: {len(untranslated)} untranslated, e.g. {untranslated[:3]}"


def test_every_language_has_every_key_of_the_page_catalog() -> None:
    english = page_json("en")
    plural_groups = {k.rsplit(".", 1)[0] for k in english if k.endswith((".one", ".other"))}
    for language in OTHERS:
        catalog = page_json(language)
        missing = sorted(k for k in english if k not in catalog and not k.endswith(".one"))
        # a count's forms are the language's own (Arabic: zero, one, two, few, many, other), never English's two
        for group in sorted(plural_groups):
            missing += [f"{group}.{form}" for form in plural_categories(language) if f"{group}.{form}" not in catalog]
        assert not missing, f"{language}/page.json lacks {len(missing)} keys, e.g. {missing[:5]}"
        stale = sorted(k for k in catalog if k not in english and k.rsplit(".", 1)[0] not in plural_groups)
        assert not stale, f"{language}/page.json has keys English no longer has: {stale[:5]}"
        assert all(isinstance(v, str) and v.strip() for v in catalog.values()), language


def test_every_translation_keeps_every_placeholder_of_its_source() -> None:
    assert placeholders("%(n)s of {x} and %(who)s") == {"n", "x", "who"}
    assert missing_placeholders("{n} req/s in", "{n} طلب/ث") == set()
    assert missing_placeholders("%(left)s left", "tilbage") == {"left"}
    lost: list[str] = []
    for language in OTHERS:
        for msgid, string in po_messages(language).items():
            sources = msgid if isinstance(msgid, tuple) else (msgid,)
            strings = string if isinstance(string, tuple) else (string,)
            needed = set().union(*(placeholders(s) for s in sources))
            for text in strings:
                # a plural form for exactly one (Arabic's "one", "two") may say the number in words
                if text and needed - placeholders(text) - ({"n"} if isinstance(msgid, tuple) else set()):
                    lost.append(f"{language}: {sources[0]!r} -> {text!r}")
        english = page_json("en")
        for key, text in page_json(language).items():
            source = english.get(key) or english.get(key.rsplit(".", 1)[0] + ".other", "")
            if missing_placeholders(source, text) - ({"n"} if key.endswith((".zero", ".one", ".two")) else set()):
                lost.append(f"{language}/page.json {key}: {text!r}")
    assert not lost, f"{len(lost)} translations lost a placeholder: {lost[:5]}"


def test_translations_differ_from_english_except_names_and_units() -> None:
    for language in OTHERS:
        same = [
            msgid
            for msgid, string in po_messages(language).items()
            if isinstance(msgid, str)
            and string == msgid
            and len(re.findall(r"[A-Za-z]{3,}", re.sub(r"%\(\w+\)s", "", msgid))) > 2
        ]
        assert not same, f"{language}: sentences left in English: {same[:5]}"


def test_every_built_in_scenario_has_its_texts_in_every_language() -> None:
    import tomllib

    from oncallsim.scenarios import builtin_scenarios
    from oncallsim.scenarios.texts import TEXT_FIELDS

    for language in OTHERS:
        data = tomllib.loads((PACKAGE / "locales" / language / "scenarios.toml").read_text(encoding="utf-8"))
        for sid, scenario in builtin_scenarios().items():
            table = data.get(sid, {})
            # the guided difficulty's hints too, wherever the scenario has them
            for field in [f for f in TEXT_FIELDS if f in ("title", "summary", "briefing") or getattr(scenario, f)]:
                assert str(table.get(field, "")).strip(), f"{language}/scenarios.toml: [{sid}] has no {field}"
                if field != "title":  # a title may be a loan word ("Flash crowd")
                    assert table[field].strip() != getattr(scenario, field).strip(), f"{language}: [{sid}] {field}"


def test_every_chain_of_services_has_its_texts_in_every_language() -> None:
    """The chains of services (scenarios/data/graphs) are registered apart from the built-in scenarios, so the
    test above does not reach them; the console shows their title, summary and briefing through scenario_text,
    which must find the shipped translation, with the briefing's numbers (times, milliseconds, percentile)."""
    import tomllib

    from oncallsim.scenarios.registry import graph_scenarios, registered_scenarios
    from oncallsim.scenarios.texts import TEXT_FIELDS, scenario_text

    graphs = graph_scenarios()
    assert graphs and set(graphs) <= set(registered_scenarios())
    for language in OTHERS:
        data = tomllib.loads((PACKAGE / "locales" / language / "scenarios.toml").read_text(encoding="utf-8"))
        for sid, scenario in graphs.items():
            table = data.get(sid, {})
            for field in [f for f in TEXT_FIELDS if f in ("title", "summary", "briefing") or getattr(scenario, f)]:
                text = str(table.get(field, "")).strip()
                english = str(getattr(scenario, field)).strip()
                assert text, f"{language}/scenarios.toml: [{sid}] has no {field}"
                if field != "title":  # a title may keep a loan word ("Fan-out")
                    assert text != english, f"{language}: [{sid}] {field} is English"
                assert scenario_text(registered_scenarios()[sid], field, language) == text, (language, sid, field)
                assert sorted(re.findall(r"\d+", text)) == sorted(re.findall(r"\d+", english)), (language, sid, field)


def test_numbers_as_each_language_writes_them() -> None:
    assert format_number(1234.5, "da", 1) == "1.234,5" and format_number(1234.5, "en", 1) == "1,234.5"
    assert format_number(1234.5, "hy", 1) == "1\xa0234,5"
    assert format_percent(0.123, "da", 1) == "12,3\xa0%" and format_percent(0.123, "en", 1) == "12.3%"
    assert format_money(12.5, "en") == "$12.50" and "12,50" in format_money(12.5, "da")
    assert format_number(None, "ar") == "—"


def test_plural_forms_come_from_the_catalog() -> None:
    minutes = ("%(n)s minute", "%(n)s minutes")
    english = translations("en")
    assert (
        english.ngettext(*minutes, 1) % {"n": 1} == "1 minute"
        and english.ngettext(*minutes, 5) % {"n": 5} == "5 minutes"
    )
    arabic = {n: translations("ar").ngettext(*minutes, n) for n in (0, 1, 2, 3, 11, 100)}
    assert len(set(arabic.values())) >= 3, arabic  # Arabic counts differently for 1, 2, 3-10 and 11-99
    assert all(text and "minute" not in text for text in arabic.values()), arabic


def test_a_scenario_file_carries_its_own_translations_and_falls_back_to_english() -> None:
    import pytest

    from oncallsim.model import InvalidInput
    from oncallsim.scenarios import builtin_scenarios
    from oncallsim.scenarios.registry import scenario_from_text
    from oncallsim.scenarios.texts import scenario_text

    base = 'id = "mine"\nversion = 1\ntitle = "Mine"\nsummary = "s"\nbriefing = "Be calm."\n'
    base += 'start = "10:00"\nminutes = 20\n'
    mine = scenario_from_text(base + '[i18n.da]\ntitle = "Min"\nbriefing = "Vær rolig."\n', "mine.toml")
    assert scenario_text(mine, "title", "da") == "Min" and scenario_text(mine, "briefing", "da") == "Vær rolig."
    assert scenario_text(mine, "summary", "da") == "s"  # not written in Danish: English
    assert scenario_text(mine, "title", "zu") == "Mine" and scenario_text(mine, "title", "en") == "Mine"
    with pytest.raises(InvalidInput, match=r"i18n.*allowed: da, zu, hy, ar"):
        scenario_from_text(base + '[i18n.xx]\ntitle = "?"\n', "mine.toml")
    surge = builtin_scenarios()["surge"]
    assert scenario_text(surge, "title", "da") != surge.title  # the shipped translations
    assert scenario_text(surge, "title", "en") == surge.title


def test_pages_choose_their_language_and_remember_it(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from oncallsim.web.app import create_app

    base = "http://testserver"
    with TestClient(create_app(tmp_path / "runs.db", allow_hosts=["testserver"]), base_url=base) as client:
        first = client.get("/", headers={"Accept-Language": "hy-AM,hy;q=0.9,en;q=0.5"})
        assert '<html lang="hy" dir="ltr"' in first.text and "oncallsim_lang" not in first.headers.get("set-cookie", "")
        chosen = client.get("/model?lang=ar")
        assert '<html lang="ar" dir="rtl"' in chosen.text and "oncallsim_lang=ar" in chosen.headers["set-cookie"]
        again = client.get("/runs", headers={"Accept-Language": "da"})  # the cookie wins over the browser
        assert '<html lang="ar"' in again.text and 'href="/?lang=ar"' in again.text
        picker = re.findall(r'<a href="([^"]+)" hreflang="(\w+)" lang="\w+"[^>]*>([^<]+)</a>', again.text)
        assert [(code, name) for _url, code, name in picker] == [(c, LANGUAGE_NAMES[c]) for c in LANGUAGES]
        assert ("/runs?lang=da", "da") in [(url, code) for url, code, _ in picker]
        share = client.get("/play?scenario=surge&seed=3&lang=da").text
        assert 'lang="da"' in share and "?lang=da" in share


def test_debrief_html_report_in_danish(tmp_path: Path) -> None:
    import typer
    from typer.testing import CliRunner

    from oncallsim.cli_common import guarded
    from oncallsim.cli_debrief import debrief

    app = typer.Typer()
    app.command()(guarded(debrief))
    sim = Simulation("bad-deploy", seed=2, minutes=30)
    sim.run([Action(15, "rollback")])
    run_file, report = tmp_path / "run.json", tmp_path / "report.html"
    sim.run_file().save(run_file)
    done = CliRunner().invoke(app, [str(run_file), "--html", str(report), "--lang", "da"])
    assert done.exit_code == 0, done.output
    assert translations("da").gettext("Compared with what would have happened otherwise") in done.output  # terminal too
    page = report.read_text(encoding="utf-8")
    assert '<html lang="da" dir="ltr">' in page and translations("da").gettext("Score card") in page
    assert translations("da").gettext("Score card") != "Score card"
    assert re.search(r"\d+,\d\d\xa0%", page), "percentages with a decimal comma"
    refused = CliRunner().invoke(app, [str(run_file), "--html", str(report), "--lang", "xx"])
    assert refused.exit_code == 2 and "--lang" in refused.output and "da (Dansk)" in refused.output

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
from oncallsim.i18n import LANGUAGES, negotiate, page_catalog, translations
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
    for path in TEMPLATES.glob("*.html"):
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
        assert 'textContent = "' not in source and "innerHTML" not in source, path.name


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

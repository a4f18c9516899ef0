"""Extract every user-facing string into the gettext catalogs (oncallsim/locales/*/LC_MESSAGES/messages.po).

Sources: the web templates (``_()`` calls) and the strings the pages show from data — scenario titles and
briefings, control labels and help, formula titles and notes, parameter meanings, debrief labels. English is
the source language: its catalog is written complete (msgstr = msgid). Run: ``python scripts/update_catalogs.py``;
a test fails while the catalog is out of date.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.pofile import read_po, write_po
from jinja2.ext import babel_extract

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

LOCALES = ROOT / "oncallsim" / "locales"


TEMPLATES = [
    *sorted((ROOT / "oncallsim" / "web" / "templates").glob("*.html")),
    *sorted((ROOT / "oncallsim" / "debrief" / "templates").glob("*.j2")),  # the offline HTML report
    *sorted((ROOT / "oncallsim" / "zoom" / "templates").glob("*.j2")),  # the zoomed minute's page
]


def template_messages() -> dict[str | tuple[str, str], list[tuple[str, int]]]:
    """``_()`` texts by msgid; an ``ngettext`` call's (singular, plural) pair is one plural message."""
    found: dict[str | tuple[str, str], list[tuple[str, int]]] = {}
    for path in TEMPLATES:
        with path.open("rb") as fh:
            for lineno, _func, message, _comments in babel_extract(fh, ("_", "gettext", "ngettext"), [], {}):
                key: str | tuple[str, str] = (message[0], message[1]) if isinstance(message, tuple) else message
                if key:
                    found.setdefault(key, []).append((str(path.relative_to(ROOT)), lineno))
    return found


def _words(text: str) -> bool:
    """A text with a letter outside its ⟪placeholders⟫: something to translate (not "1.5", not "⟪throttle_k⟫")."""
    from oncallsim.model.placeholders import PLACEHOLDER

    return any(c.isalpha() for c in PLACEHOLDER.sub("", text))


def data_messages() -> dict[str, list[tuple[str, int]]]:
    from oncallsim.debrief.html import CAUSE_LABELS, COMPARISONS, OF_MINUTES, UNIT_MESSAGES
    from oncallsim.debrief.postmortem import MOVES, SERVICE_MOVES
    from oncallsim.debrief.report import HEADLINES
    from oncallsim.debrief.summary import PHASE_NAMES
    from oncallsim.model import CONTROL_SPECS, param_info
    from oncallsim.model.formulas import FORMULAS
    from oncallsim.policies import COUNTERFACTUAL_POLICIES
    from oncallsim.refusals import FIELD_LABELS, REFUSAL_TEXTS
    from oncallsim.scenarios import builtin_scenarios
    from oncallsim.scenarios.spec import LABELS
    from oncallsim.web.limits import BUSY as LIMIT_BUSY
    from oncallsim.web.pages import REFUSALS
    from oncallsim.zoom.html import BUSY, IN_FORCE_JOIN

    texts: list[tuple[str, str]] = []
    for sc in builtin_scenarios().values():
        texts += [(sc.title, "scenario"), (sc.briefing.strip(), "scenario"), (sc.summary, "scenario")]
    for spec in CONTROL_SPECS.values():
        texts += [(spec.label, "control"), (spec.help, "control")]
        texts += [(spec.unit, "unit")] if spec.unit else []
        texts += [(phrase, "zoom") for phrase in spec.in_force.values() if phrase]  # the zoom's "In force: …"
        for values in spec.presets.values():  # the presets' columns and their values in words (not bare numbers)
            texts += [(t, "preset") for pair in values.items() for t in pair if _words(t)]
    for f in FORMULAS:
        texts += [(f.title, "formula")] + ([(f.note, "formula")] if f.note else [])
    texts += [(p.doc, "parameter") for p in param_info()]
    texts += [(p.unit, "unit") for p in param_info() if p.unit]
    texts += [(label, "debrief") for label, _key, _kind in COMPARISONS]
    texts += [(name, "debrief") for name in COUNTERFACTUAL_POLICIES]
    texts += [(c, "debrief") for c in CAUSE_LABELS.values()]
    texts += [(t, "objective") for t in LABELS.values()]
    texts += [(t, "debrief") for t in HEADLINES.values()]
    texts += [(p, "debrief") for p in PHASE_NAMES]
    texts += [(u, "unit") for u in UNIT_MESSAGES.values()] + [(OF_MINUTES, "debrief")]
    texts += [(move, "debrief") for move in MOVES.values()] + [(m, "debrief") for m in SERVICE_MOVES.values()]
    texts += [(text, "refusal") for text in REFUSALS.values()]
    texts += [(text, "refusal") for text in REFUSAL_TEXTS.values()]  # a refusal's sentence by its kind
    texts += [(text, "refusal") for text in FIELD_LABELS.values()]
    texts += [(text, "limit") for text in LIMIT_BUSY.values()]
    texts += [(BUSY, "zoom"), (IN_FORCE_JOIN, "zoom")]
    found: dict[str, list[tuple[str, int]]] = {}
    for text, origin in texts:
        found.setdefault(text, []).append((f"data:{origin}", 0))
    return found


def extracted() -> dict[str | tuple[str, str], list[tuple[str, int]]]:
    from oncallsim.refusals import PLURAL_REFUSALS

    messages = template_messages()
    for text, where in data_messages().items():
        messages.setdefault(text, []).extend(where)
    for pair in PLURAL_REFUSALS.values():  # a refusal that counts: one plural message
        messages.setdefault(pair, []).append(("data:refusal", 0))
    return messages


def build(language: str, messages: dict[str | tuple[str, str], list[tuple[str, int]]]) -> bytes:
    path = LOCALES / language / "LC_MESSAGES" / "messages.po"
    old: dict[object, object] = {}
    if path.exists():
        with path.open("rb") as fh:
            old = {m.id: m.string for m in read_po(fh) if m.id}
    catalog = Catalog(locale=language, project="oncallsim", fuzzy=False)
    forms = catalog.num_plurals
    for text in sorted(messages, key=lambda m: m if isinstance(m, str) else m[0]):
        string: object
        if isinstance(text, tuple):  # a plural message: one string per plural form of the language
            string = text if language == "en" else old.get(text, ("",) * forms)
        else:
            string = text if language == "en" else old.get(text, "")
        catalog.add(text, string, locations=messages[text])  # type: ignore[arg-type]
    buffer = io.BytesIO()
    write_po(buffer, catalog, width=120, omit_header=False, sort_output=True)
    return buffer.getvalue()


def page_events() -> dict[str, str]:
    """The page catalog's English event texts, from the model's event table and the control registry.

    ``event.CODE`` (``.one``/``.other`` when the event counts instances: Intl.PluralRules picks the form),
    and for a setting ``event.setting.CONTROL`` (``.on``/``.off`` for a switch) with ``{value}``.
    """
    from oncallsim.model import CONTROL_SPECS
    from oncallsim.model.events import EVENT_TEXTS

    entries: dict[str, str] = {}
    for code, (singular, plural) in EVENT_TEXTS.items():
        if code == "setting":
            continue
        if "{n}" in singular:
            entries[f"event.{code}.one"] = singular
            entries[f"event.{code}.other"] = plural
        else:
            entries[f"event.{code}"] = singular
    for name, spec in CONTROL_SPECS.items():
        # the log's lines start in lower case, unless the label starts with a name ("CoDel")
        named = any(c.isupper() for c in spec.label.split()[0][1:])
        label = spec.label if named else spec.label[0].lower() + spec.label[1:]
        if spec.kind == "bool":
            entries[f"event.setting.{name}.on"] = f"{label} on"
            entries[f"event.setting.{name}.off"] = f"{label} off"
        elif spec.kind == "choice":
            entries[f"event.setting.{name}"] = f"{label}: {{value}}"
        elif spec.kind != "button":
            unit = f" {spec.unit}" if spec.unit else ""
            entries[f"event.setting.{name}"] = f"{label} set to {{value}}{unit}"
    # a chain's <service>.<setting>, named in the Services panel's words ("recs: Timeout (ms)", services.js)
    entries["event.setting.service"] = "{setting} set to {value}"
    return entries


def page_catalog_text() -> str:
    """locales/en/page.json with its event entries regenerated (the others kept as they are)."""
    path = LOCALES / "en" / "page.json"
    current = json.loads(path.read_text(encoding="utf-8"))
    kept = {k: v for k, v in current.items() if not k.startswith("event.")}
    return json.dumps({**kept, **page_events()}, ensure_ascii=False, indent=2) + "\n"


def main() -> None:
    (LOCALES / "en" / "page.json").write_text(page_catalog_text(), encoding="utf-8")
    messages = extracted()
    for folder in sorted(p for p in LOCALES.iterdir() if p.is_dir()):
        target = folder / "LC_MESSAGES" / "messages.po"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(build(folder.name, messages))
        print(f"{target.relative_to(ROOT)}: {len(messages)} messages")


if __name__ == "__main__":
    main()

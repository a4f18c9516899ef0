"""The one translation layer: gettext catalogs (.po, read with Babel) for the server, one JSON catalog per
language for the page. English is the source language; a missing translation falls back to it."""

from __future__ import annotations

import gettext
import io
import json
from functools import cache
from importlib import resources
from typing import Any

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po

__all__ = ["DEFAULT_LANGUAGE", "LANGUAGES", "negotiate", "page_catalog", "translations"]

DEFAULT_LANGUAGE = "en"
LOCALES = resources.files("oncallsim") / "locales"


@cache
def languages() -> tuple[str, ...]:
    return tuple(sorted(p.name for p in LOCALES.iterdir() if (p / "LC_MESSAGES" / "messages.po").is_file()))


LANGUAGES = languages()


@cache
def translations(language: str = DEFAULT_LANGUAGE) -> gettext.NullTranslations:
    """Server-side translations for ``language`` (compiled in memory from the .po file)."""
    if language not in languages():
        language = DEFAULT_LANGUAGE
    po = LOCALES / language / "LC_MESSAGES" / "messages.po"
    with po.open("rb") as fh:
        catalog = read_po(fh, locale=language)
    buffer = io.BytesIO()
    write_mo(buffer, catalog)
    buffer.seek(0)
    return gettext.GNUTranslations(buffer)


@cache
def page_catalog(language: str = DEFAULT_LANGUAGE) -> dict[str, Any]:
    """The page's strings (keys → text), English underneath any other language."""
    base = json.loads((LOCALES / DEFAULT_LANGUAGE / "page.json").read_text(encoding="utf-8"))
    if language != DEFAULT_LANGUAGE and language in languages():
        path = LOCALES / language / "page.json"
        if path.is_file():
            base.update(json.loads(path.read_text(encoding="utf-8")))
    return dict(base)


def negotiate(requested: str | None, accept_language: str | None) -> str:
    """?lang= first, then the browser's Accept-Language, then English."""
    for candidate in [requested or "", *(part.split(";")[0].strip() for part in (accept_language or "").split(","))]:
        code = candidate.lower().split("-")[0]
        if code in languages():
            return code
    return DEFAULT_LANGUAGE

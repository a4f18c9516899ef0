"""A scenario's human texts (title, summary, briefing, and the guided difficulty's hints) in the reader's language.

Where a language's text comes from, first found wins: the scenario file's own table (``[i18n.da]`` with
``title``/``summary``/``briefing``), the shipped translations of the built-in scenarios
(``oncallsim/locales/<lang>/scenarios.toml``, one table per scenario id), the gettext catalog, and English."""

from __future__ import annotations

import tomllib
from functools import cache
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from oncallsim.i18n import DEFAULT_LANGUAGE, LANGUAGE_NAMES, LOCALES, translations

if TYPE_CHECKING:
    from oncallsim.scenarios.spec import Scenario

__all__ = ["TEXT_FIELDS", "ScenarioTexts", "check_languages", "scenario_text", "shipped_texts"]

TEXT_FIELDS = ("title", "summary", "briefing", "incident_hint", "page_hint")
TextField = Literal["title", "summary", "briefing", "incident_hint", "page_hint"]
# the console's own tutorial is shipped like a built-in scenario, though it is not registered as one
SHIPPED_EXTRA_IDS = frozenset({"tutorial"})


class ScenarioTexts(BaseModel):
    """One language's texts of a scenario file; a field left out falls back to English."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    title: str | None = Field(default=None, min_length=1)
    summary: str | None = Field(default=None, min_length=1)
    briefing: str | None = Field(default=None, min_length=1)
    incident_hint: str | None = Field(default=None, min_length=1)
    page_hint: str | None = Field(default=None, min_length=1)


def check_languages(tables: dict[str, ScenarioTexts]) -> dict[str, ScenarioTexts]:
    """A scenario's ``[i18n.X]`` tables name languages the console has (English is the file's own text)."""
    allowed = [code for code in LANGUAGE_NAMES if code != DEFAULT_LANGUAGE]
    for code in tables:
        if code not in allowed:
            raise ValueError(f"unknown language {code[:20]!r} in [i18n]; allowed: {', '.join(allowed)}")
    return tables


@cache
def shipped_texts(language: str) -> dict[str, dict[str, str]]:
    """The shipped translations of the built-in scenarios (and the tutorial) for one language, by id."""
    path = LOCALES / language / "scenarios.toml"
    if language == DEFAULT_LANGUAGE or not path.is_file():
        return {}
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return {sid: {k: str(v) for k, v in table.items() if isinstance(v, str)} for sid, table in data.items()}


def _is_shipped(scenario: Scenario) -> bool:
    from oncallsim.scenarios.registry import registered_scenarios

    if scenario.id in SHIPPED_EXTRA_IDS:
        return True
    builtin = registered_scenarios().get(scenario.id)
    return builtin is not None and builtin.title == scenario.title and builtin.briefing == scenario.briefing


def scenario_text(scenario: Scenario, field: TextField, language: str = DEFAULT_LANGUAGE) -> str:
    """``scenario``'s title, summary, briefing or hint in ``language`` (stripped), English when none is written
    (a text the scenario does not have stays empty)."""
    english = str(getattr(scenario, field)).strip()
    if language == DEFAULT_LANGUAGE or not english:
        return english
    own = getattr(scenario, "i18n", {}).get(language)
    if own is not None and getattr(own, field):
        return str(getattr(own, field)).strip()
    if _is_shipped(scenario):
        shipped = shipped_texts(language).get(scenario.id, {}).get(field)
        if shipped:
            return shipped.strip()
    return translations(language).gettext(english)

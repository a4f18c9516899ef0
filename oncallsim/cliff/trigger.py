"""The cliff map's trigger: a scenario event of a given size and length, at a fixed minute of every run.

``brownout:minutes=5,slowdown=3`` is a database brownout (the scenario event ``BrownoutEvent``: each query takes
``slowdown`` times longer) lasting ``minutes``. It is validated as a scenario file's brownout is (the same model,
the same ranges), and replaces the scenario's own brownouts, so every run of a map point meets the same trigger at
the same minute and only the seed's noise differs. Without ``--trigger`` the scenario's own first brownout is the
trigger, its ranges at their midpoints.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from oncallsim.model import InvalidInput
from oncallsim.model.errors import number_text
from oncallsim.model.plan import MAX_RUN_MINUTES
from oncallsim.scenarios import Scenario, scenario_from_dict
from oncallsim.scenarios.spec import BrownoutEvent, Range
from oncallsim.validation import invalid_input

__all__ = ["TRIGGER_KINDS", "Trigger", "parse_trigger", "scenario_trigger", "with_trigger"]

TRIGGER_KINDS = ("brownout",)
_KEYS = {"brownout": ("minutes", "slowdown")}


@dataclass(frozen=True)
class Trigger:
    """A brownout of ``slowdown`` times for ``minutes`` minutes."""

    kind: str
    minutes: int
    slowdown: float

    def text(self) -> str:
        """As ``--trigger`` takes it."""
        return f"{self.kind}:minutes={self.minutes},slowdown={self.slowdown:g}"

    def event(self, clock: str) -> dict[str, Any]:
        """The scenario event, starting at ``clock``."""
        return {"kind": self.kind, "at": clock, "minutes": self.minutes, "slowdown": self.slowdown}


def parse_trigger(text: str) -> Trigger:
    """``KIND:key=value,…`` → a checked trigger; bad input is one line naming ``--trigger`` and what it takes."""
    if not isinstance(text, str) or len(text) > 200:
        raise InvalidInput("--trigger", "expects brownout:minutes=M,slowdown=X")
    kind, sep, rest = text.strip().partition(":")
    if kind not in TRIGGER_KINDS:
        raise InvalidInput("--trigger", f"unknown kind {kind[:40]!r}; known: {', '.join(TRIGGER_KINDS)}")
    values: dict[str, Any] = {}
    for item in rest.split(",") if sep and rest.strip() else []:
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or key not in _KEYS[kind]:
            raise InvalidInput("--trigger", f"{kind} takes {', '.join(f'{k}=…' for k in _KEYS[kind])}, got {item!r}")
        if key in values:
            raise InvalidInput("--trigger", f"{key} is given twice")
        try:
            values[key] = number_text(value.strip())
        except ValueError:
            raise InvalidInput(f"--trigger {key}", f"must be a number, got {value.strip()[:40]!r}") from None
    missing = [k for k in _KEYS[kind] if k not in values]
    if missing:
        raise InvalidInput("--trigger", f"{kind} needs {', '.join(missing)} (e.g. {kind}:minutes=5,slowdown=3)")
    if isinstance(values.get("slowdown"), int):
        values["slowdown"] = float(values["slowdown"])
    if isinstance(values["minutes"], float) and values["minutes"].is_integer():
        values["minutes"] = int(values["minutes"])
    minutes, slowdown = values["minutes"], values["slowdown"]
    if not isinstance(minutes, int) or not 1 <= minutes <= MAX_RUN_MINUTES:
        raise InvalidInput("--trigger minutes", f"must be a whole number from 1 to {MAX_RUN_MINUTES}, got {minutes!r}")
    if not (1.0 < slowdown <= 20.0):  # nan fails too
        raise InvalidInput("--trigger slowdown", f"must be above 1 and at most 20 (times slower), got {slowdown!r}")
    try:  # the scenario file's own rules, so that a trigger one surface refuses every surface refuses
        event = BrownoutEvent.model_validate({"kind": kind, "at": "00:00", **values})
    except ValidationError as exc:
        raise invalid_input(exc, "--trigger") from None
    assert isinstance(event.minutes, int) and isinstance(event.slowdown, float)  # fixed values: no ranges here
    return Trigger(kind, event.minutes, event.slowdown)


def scenario_trigger(scenario: Scenario) -> Trigger | None:
    """The scenario's own first brownout as a trigger, its ranges at their midpoints (None: it has none)."""
    for event in scenario.events:
        if isinstance(event, BrownoutEvent):
            minutes, slowdown = event.minutes, event.slowdown
            length = math.floor((minutes.low + minutes.high) / 2 + 0.5) if isinstance(minutes, Range) else minutes
            factor = (slowdown.low + slowdown.high) / 2 if isinstance(slowdown, Range) else slowdown
            return Trigger("brownout", int(length), float(factor))
    return None


def with_trigger(scenario: Scenario, trigger: Trigger | None, at_minute: int) -> Scenario:
    """The scenario with its brownouts replaced by ``trigger`` at its ``at_minute``-th minute (None: without
    any), and a new id, so that no run of it passes for the scenario itself."""
    data = scenario.model_dump(mode="json")
    data["events"] = [e for e in data["events"] if e["kind"] not in TRIGGER_KINDS]
    if trigger is not None:
        start = int(data["start"][:2]) * 60 + int(data["start"][3:])
        clock = (start + at_minute) % 1440
        data["events"].append(trigger.event(f"{clock // 60:02d}:{clock % 60:02d}"))
    data["id"] = f"{scenario.id}-cliff"
    return scenario_from_dict(data, "--trigger")

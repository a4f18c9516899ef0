"""What a control is: its kind, range or choices, default, words, and — for the request engine's own settings —
where its mechanism keeps it (``ControlSpec``).

A control is declared once, beside the logic that uses it: the minute model's in ``controls.py``, each request
mechanism's in its module (``request/disciplines.py`` declares the queue discipline, the queue limit and
deadline propagation; ``request/calls.py`` the retries, …). Everything else is derived from the declaration:
validation (``controls.coerce_control_value``), ``Controls`` and its defaults, ``--set``, the API, the console,
the Gymnasium spaces, the world's slots (``request/settings.py``), the debrief's sentences and the zoom page's.
This module depends on nothing of the engines, so a mechanism's module can declare its controls.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from oncallsim.model.effects import SET
from oncallsim.model.events import instance_id
from oncallsim.model.placeholders import fill

__all__ = ["BOTH", "REQUEST_ONLY", "ControlSpec", "Kind"]

# int/fraction/seconds: numbers with a unit and range; bool: a switch; choice: one of named values
# (stored as its index); button: an action without a value; instance: an action on one instance (its id).
Kind = Literal["int", "fraction", "seconds", "bool", "choice", "button", "instance"]
BOTH = ("minute", "request")
REQUEST_ONLY = ("request",)


@dataclass(frozen=True)
class ControlSpec:
    """One control. ``moves`` and ``in_force`` hold its sentences, keyed by ``""`` (any value, ``%(value)s``
    filled with ``value_text``), ``"on"``/``"off"`` (a switch), a choice's or a number's own text (``"0"``,
    ``"fifo"``); an empty sentence says nothing."""

    name: str
    kind: Kind
    label: str
    help: str
    default: Any = None
    min: float | None = None
    max: float | None = None
    unit: str = ""
    effect: int = SET  # what it does to the state: an effect kind of model/effects.py
    choices: tuple[str, ...] = ()
    # choices a run may hold (a run file names them) that nobody picks by name: the console, the rooms, the API's
    # list and Gym offer the rest (``offered``); the controller's ``custom`` is attached through the Python API
    unchosen: tuple[str, ...] = ()
    step: float | None = None  # a slider's step, in the control's unit
    danger: bool = False  # the console asks for a second look (a red button)
    engines: tuple[str, ...] = BOTH  # the engines that have it; the others refuse it, naming these
    section: str = ""  # the model page's section that explains it (an anchor)
    # the request engine's own settings: the world's piece that holds it, its slot there, in ``reals`` (else
    # ``ints``), and the divisor from the control's unit to the world's (ms → s: 1000)
    piece: str = ""
    slot: int = -1
    real: bool = False
    divisor: float = 1.0
    # a rule over the world's settings after a change (the changed control's name): raises ``InvalidInput``
    check: Callable[[Mapping[str, Any], str], None] | None = field(default=None, compare=False)
    moves: Mapping[str, str] = field(default_factory=dict)  # the debrief: what an action did (past tense)
    in_force: Mapping[str, str] = field(default_factory=dict)  # the zoom: the setting in force (a phrase)
    only_with: str = ""  # in_force is said only while this other control is on (not 0, not off)
    # a choice that stands for a set of values (a preset, as Kratos's versions of one mechanism): per choice,
    # what it sets, in words ({column: value}; ⟪param⟫ filled from the parameters in force). ``oncallsim params``
    # and the model page list every control that declares some, so a new preset shows without code there.
    presets: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    @property
    def is_setting(self) -> bool:
        return self.kind not in ("button", "instance")

    @property
    def offered(self) -> tuple[str, ...]:
        """The choices a person or an agent may pick (``choices`` but the ``unchosen``)."""
        return tuple(c for c in self.choices if c not in self.unchosen)

    @property
    def in_vector(self) -> bool:
        """A setting the state vector holds (both engines); the request engine's own live in its world."""
        return self.is_setting and self.engines == BOTH

    def describe_range(self) -> str:
        if self.kind == "bool":
            return "true or false"
        if self.kind == "button":
            return "no value (a button)"
        if self.kind == "instance":
            return "an instance id (a whole number from 0)"
        if self.kind == "choice":
            return "one of " + ", ".join(self.choices)
        kind = "a whole number" if self.kind == "int" else "a number"
        return f"{kind} from {self.min:g} to {self.max:g}" + (f" {self.unit}" if self.unit else "")

    def help_text(self, params: Any, gettext: Callable[[str], str] = str) -> str:
        """The help, translated, with the parameters in force filled in."""
        return fill(gettext(self.help), params)

    def preset_table(self, params: Any, gettext: Callable[[str], str] = str) -> tuple[list[str], list[list[str]]]:
        """The presets as a table: the columns (every column any preset declares, in declaration order) and a row
        per preset, its name first; a value a preset does not declare is "—"."""
        columns = list(dict.fromkeys(column for values in self.presets.values() for column in values))
        rows = [
            [choice, *(fill(gettext(values[c]), params) if c in values else "—" for c in columns)]
            for choice, values in self.presets.items()
        ]
        return [gettext(c) for c in columns], rows

    def value_text(self, value: Any) -> str:
        """A value as people read it, with its unit: "30 %", "300 s", "12 instances", "on", "p2c", "i-09"."""
        if isinstance(value, bool):
            return "on" if value else "off"
        if self.kind == "instance" and isinstance(value, int):
            return instance_id(value)  # as the fleet view, the event log and the toasts name it
        if self.kind == "fraction":
            return f"{100 * float(value):g} %"
        if isinstance(value, (int, float)):
            return f"{float(value):g}" + (f" {self.unit}" if self.unit else "")
        return str(value)

    def sentence(
        self,
        sentences: Mapping[str, str],
        value: Any,
        gettext: Callable[[str], str] = str,
        value_text: Callable[[Any], str] | None = None,
    ) -> str | None:
        """The sentence of ``sentences`` (``moves`` or ``in_force``) for ``value``; None when none is declared.
        ``gettext`` translates it (an empty sentence stays empty) and ``value_text`` writes its ``%(value)s``
        (the reader's language); English and ``self.value_text`` by default."""
        key = ("on" if value else "off") if isinstance(value, bool) else self._key(value)
        if key in sentences:
            return gettext(sentences[key]) if sentences[key] else ""
        if "" in sentences:
            return gettext(sentences[""]) % {"value": (value_text or self.value_text)(value)}
        return None

    def _key(self, value: Any) -> str:
        if isinstance(value, float) and value.is_integer():
            return str(int(value))
        return str(value)

    def to_dict(self) -> dict[str, Any]:
        """The registry entry as the console and the API describe it."""
        return {
            "name": self.name,
            "kind": self.kind,
            "label": self.label,
            "help": self.help,
            "step": self.step,
            "danger": self.danger,
            "default": self.default,
            "min": self.min,
            "max": self.max,
            "unit": self.unit,
            "choices": list(self.offered),
            "range": self.describe_range(),
            "engines": list(self.engines),
        }

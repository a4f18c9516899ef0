"""What a minute reports: structured events, ``(code, args)``, rendered into words only at the surfaces.

An ``Event`` is a code from ``EVENT_TEXTS`` plus its arguments. So that logs, CSV files and tests read
naturally, its ``str`` value is the English rendering (an ``Event`` compares equal to that sentence), but
code decides by ``event.code``, never by the words; the surfaces render ``code`` through the translation
layer (``render``), with ``n`` driving plural forms.

The compiled minute reports its events as counts in fixed slots (``KERNEL_EVENTS``); ``from_slots`` turns
them into events, the same way for the scalar and the batch engine.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

__all__ = [
    "EVENT_TEXTS",
    "KERNEL_EVENTS",
    "OPERATOR_EVENTS",
    "Event",
    "event_kind",
    "from_slots",
    "instance_id",
    "render",
    "show_value",
]

# code → (singular English template, plural English template); {n}, {name} and {value} are the arguments.
EVENT_TEXTS: dict[str, tuple[str, str]] = {
    "deploy_started": ("deploy started", "deploy started"),
    "deploy_finished": ("deploy finished", "deploy finished"),
    "cache_flushed": ("cache flushed", "cache flushed"),
    "page_fired": ("page fired", "page fired"),
    "page_cleared": ("page cleared", "page cleared"),
    "warmup_started": ("warm-up started", "warm-up started"),
    "warmup_running": ("warm-up already running", "warm-up already running"),
    "warmup_finished": ("warm-up finished", "warm-up finished"),
    "rollback_started": ("rollback started", "rollback started"),
    "rollback_restarted": ("rollback restarted", "rollback restarted"),
    "rollback_ready": ("rollback ready", "rollback ready"),
    "setting": ("set {name} = {value}", "set {name} = {value}"),
    "floor_raised": ("floor raised: {n} instance starting", "floor raised: {n} instances starting"),
    "fleet_to_floor_started": (
        "fleet set to the floor: {n} starting",
        "fleet set to the floor: {n} starting",
    ),
    "fleet_to_floor_removed": ("fleet set to the floor: {n} removed", "fleet set to the floor: {n} removed"),
    "instances_ready": ("{n} instance ready", "{n} instances ready"),
    "scaled_out": ("scaled out: {n} instance starting", "scaled out: {n} instances starting"),
    "scaled_in": ("scaled in: {n} instance removed", "scaled in: {n} instances removed"),
    "brownout_started": ("the database slowed down (a brownout)", "the database slowed down (a brownout)"),
    "brownout_ended": ("the database is back to speed", "the database is back to speed"),
    # the request engine's fleet (instances.py, discovery.py)
    "instance_slow": ("instance {instance} slowed down", "instance {instance} slowed down"),
    "instance_crashed": ("instance {instance} crashed", "instance {instance} crashed"),
    "instance_hung": ("instance {instance} hung", "instance {instance} hung"),
    "instance_revived": ("instance {instance} recovered", "instance {instance} recovered"),
    "zone_down": ("a zone went offline: {n} instance unreachable", "a zone went offline: {n} instances unreachable"),
    "zone_back": ("the zone is back online", "the zone is back online"),
    "instance_evicted": (
        "instance {instance} evicted from the registry",
        "instance {instance} evicted from the registry",
    ),
    "self_protection_engaged": (
        "registry self-protection engaged: evictions stopped",
        "registry self-protection engaged: evictions stopped",
    ),
    "self_protection_cleared": ("registry self-protection cleared", "registry self-protection cleared"),
    "instance_ejected": ("instance {instance} ejected from rotation", "instance {instance} ejected from rotation"),
    "instance_readmitted": ("instance {instance} back in rotation", "instance {instance} back in rotation"),
    "replacement_started": ("replacing instance {instance}", "replacing instance {instance}"),
    "instance_replaced": ("instance {instance} replaced by a fresh one", "instance {instance} replaced by a fresh one"),
    "not_applied": (
        "{name} = {value} not applied: adaptive-lifo needs a queue limit",
        "{name} = {value} not applied: adaptive-lifo needs a queue limit",
    ),
    "instance_gone": (
        "instance {instance} is gone: {name} not applied",
        "instance {instance} is gone: {name} not applied",
    ),
    # the request engine's overload control (limiter.py, calls.py)
    "limiter_engaged": (
        "limiter engaged: {n} instance rejecting with 429",
        "limiter engaged: {n} instances rejecting with 429",
    ),
    "limiter_released": ("limiter released: no 429s this minute", "limiter released: no 429s this minute"),
    "retry_budget_exhausted": (
        "retry budget exhausted: {n} retry a second refused",
        "retry budget exhausted: {n} retries a second refused",
    ),
    "retry_budget_recovered": ("retry budget recovered", "retry budget recovered"),
}

# Who caused an event: the operator's inputs, the page, or the system itself (the console colours them).
OPERATOR_EVENTS = frozenset(
    {
        "setting",
        "floor_raised",
        "fleet_to_floor_started",
        "fleet_to_floor_removed",
        "warmup_started",
        "rollback_started",
        "rollback_restarted",
        "instance_ejected",
        "instance_readmitted",
        "replacement_started",
    }
)


def event_kind(code: str) -> str:
    return "operator" if code in OPERATOR_EVENTS else "page" if code == "page_fired" else "system"


# The slots the compiled minute fills, in the order its events happen within a minute.
KERNEL_EVENTS: tuple[str, ...] = (
    "deploy_started",
    "cache_flushed",
    "page_fired",
    "page_cleared",
    "warmup_finished",
    "deploy_finished",
    "rollback_ready",
    "instances_ready",
    "scaled_out",
    "scaled_in",
    "brownout_started",
    "brownout_ended",
)
_COUNTED = frozenset({"instances_ready", "scaled_out", "scaled_in"})


def show_value(value: Any) -> str:
    """A control's value as the event log writes it: on/off, or the number without trailing zeros."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, str):
        return value
    return f"{value:g}"


def instance_id(index: int) -> str:
    """An instance as people read it, in the event log, the fleet view and messages: "i-03" (the eject, readmit
    and replace controls take that form or the bare number)."""
    return f"i-{index:02d}"


def render(
    code: str,
    args: Mapping[str, Any],
    gettext: Callable[[str], str] | None = None,
    ngettext: Callable[[str, str, int], str] | None = None,
) -> str:
    """An event in words: English by default, or through the given translation functions."""
    singular, plural = EVENT_TEXTS[code]
    n = args.get("n")
    if n is not None:
        template = ngettext(singular, plural, n) if ngettext else (singular if n == 1 else plural)
    else:
        template = gettext(singular) if gettext else singular
    shown = {
        k: show_value(v) if k == "value" else instance_id(int(v)) if k == "instance" and not isinstance(v, str) else v
        for k, v in args.items()
    }
    return template.format(**shown)


class Event(str):
    """A structured event whose ``str`` is its English text. ``code`` and ``args`` are what code reads."""

    code: str
    args: Mapping[str, Any]

    def __new__(cls, code: str, **args: Any) -> Event:
        # Events are immutable values and a few thousand kinds cover whole sweeps: made once, then shared.
        key = (code, *args.items())  # a control's values have one type each: True and 1 never share a name
        cached = _CACHE.get(key)
        if cached is not None:
            return cached
        if code not in EVENT_TEXTS:
            raise ValueError(f"unknown event code {code!r}")
        self = super().__new__(cls, render(code, args))
        self.code = code
        self.args = MappingProxyType(args)
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.clear()
        _CACHE[key] = self
        return self

    def __reduce__(self) -> tuple[Any, ...]:  # pickles (process pools, Dask) keep the structure
        return (_rebuild, (self.code, dict(self.args)))

    def to_dict(self) -> dict[str, Any]:
        """The wire form: what the console renders through its catalog (``text`` is the English fallback)."""
        return {"code": self.code, "args": dict(self.args), "kind": event_kind(self.code), "text": str(self)}


_CACHE: dict[tuple[Any, ...], Event] = {}
_CACHE_SIZE = 4096


def _rebuild(code: str, args: Mapping[str, Any]) -> Event:
    return Event(code, **args)


def from_slots(slots: Sequence[int]) -> list[Event]:
    """The events of a compiled minute, from its slot counts, in ``KERNEL_EVENTS`` order."""
    out = []
    for code, count in zip(KERNEL_EVENTS, slots, strict=True):
        if count:
            out.append(Event(code, n=int(count)) if code in _COUNTED else Event(code))
    return out

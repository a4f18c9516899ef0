"""The operator's controls (MODEL.md §5): the control registry.

Each control declares its kind, range or choices, default, label, help text, its effect on the state and its
sentences (``control_spec.ControlSpec``). The minute model's controls are declared here; the request engine's
beside their mechanisms (``request/balancers.py``, ``discovery.py``, ``disciplines.py``, ``limiter.py``,
``breaker.py``, ``calls.py``, ``instances.py``), and gathered here in the order the console shows them. The
registry feeds validation (once, at the edge: ``coerce_control_value``), ``Controls`` (its fields and defaults
are the specs'), ``apply_actions`` (both engines), the request engine's world (``request/settings.py``), the
CLI's ``--set`` and ``oncallsim params``, the console's controls, the model page, the Gymnasium spaces, the
debrief's and the zoom page's sentences. Adding a control is one spec plus its logic (docs/architecture.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import field, make_dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import numpy.typing as npt

from oncallsim.model.control_spec import BOTH, ControlSpec
from oncallsim.model.effects import EFFECT_EVENTS, PRESS_ROLLBACK, PRESS_WARMUP, SET_FLOOR, apply_effect
from oncallsim.model.errors import InvalidInput, number_text, quote, whole_number
from oncallsim.model.events import Event
from oncallsim.model.fields import ST
from oncallsim.model.request import balancers, breaker, calls, disciplines, discovery, instances, limiter

__all__ = [
    "BUTTONS",
    "CONTROL_SPECS",
    "INSTANCE_ACTIONS",
    "SETTINGS",
    "WORLD_SETTINGS",
    "ControlSpec",
    "Controls",
    "apply_to_vector",
    "check_engine",
    "coerce_control_value",
    "current_name",
    "text_refused",
]

CONTROL_SPECS: dict[str, ControlSpec] = {
    s.name: s
    for s in (
        ControlSpec(
            "floor",
            "int",
            "Fleet floor",
            "Minimum instances. Raising it starts instances at once; "
            "they still need the boot delay before they serve. Every instance costs money.",
            10,
            1,
            40,
            "instances",
            effect=SET_FLOOR,
            step=1,
            moves={"": "set the fleet floor to %(value)s"},
        ),
        ControlSpec(
            "autoscaler",
            "bool",
            "Autoscaler",
            "Target tracking on utilization; no new scale-out while instances boot. Off = exactly the floor.",
            True,
            moves={"on": "switched the autoscaler on", "off": "switched the autoscaler off"},
        ),
        ControlSpec(
            "target_utilization",
            "fraction",
            "Target utilization",
            "Lower = more headroom and more "
            "cost. Measured utilization cannot exceed 100 %, so a saturated fleet grows step by step.",
            0.60,
            0.30,
            0.90,
            step=0.05,
            moves={"": "set the target utilization to %(value)s"},
        ),
        ControlSpec(
            "ttl_s",
            "seconds",
            "Cache TTL",
            "Longer TTL = more hits, but answers can be older (mean age ≈ TTL/2).",
            60.0,
            0.0,
            600.0,
            "s",
            step=10.0,
            moves={"": "set the cache TTL to %(value)s"},
        ),
        ControlSpec(
            "shed_share",
            "fraction",
            "Load shedding",
            "Share of the ⟪low_priority_share%⟫ low-priority traffic "
            "(prefetch, batch, crawlers) rejected at the load balancer with 'retry later'.",
            0.0,
            0.0,
            1.0,
            step=0.1,
            moves={
                "": "shed %(value)s of the low-priority traffic",
                "1": "shed all the low-priority traffic",
                "0": "stopped shedding load",
            },
        ),
        ControlSpec(
            "recommendations",
            "bool",
            "Recommendations feature",
            "The heavy feature adds ⟪feature_app_time_ms⟫ ms CPU and ⟪feature_queries_per_request⟫ database "
            "queries per request. Off = graceful degradation.",
            True,
            moves={
                "on": "switched the recommendations feature back on",
                "off": "switched the recommendations feature off",
            },
        ),
        ControlSpec(
            "warmup",
            "button",
            "Warm up cache",
            "Loads hot keys for ⟪warmup_minutes⟫ minutes (+⟪warmup_step%⟫ of the cache per "
            "minute) at the price of ⟪warmup_db_qps⟫ extra database queries/s.",
            effect=PRESS_WARMUP,
            moves={"": "started warming up the cache"},
        ),
        ControlSpec(
            "rollback",
            "button",
            "Roll back",
            "Deploys the last good build on a new fleet (⟪rollback_minutes⟫ min, billed "
            "⟪rollback_cost_factor⟫×), then switches traffic. Pressing again restarts the preparation.",
            effect=PRESS_ROLLBACK,
            danger=True,
            moves={"": "rolled back"},
        ),
        *balancers.CONTROLS,
        *discovery.CONTROLS,
        *disciplines.CONTROLS,
        *limiter.CONTROLS,
        *breaker.CONTROLS,
        *calls.CONTROLS,
        *instances.CONTROLS,
    )
}

BUTTONS = frozenset(name for name, s in CONTROL_SPECS.items() if s.kind == "button")
INSTANCE_ACTIONS = frozenset(name for name, s in CONTROL_SPECS.items() if s.kind == "instance")
SETTINGS = tuple(name for name, s in CONTROL_SPECS.items() if s.in_vector)  # both engines', in the state vector
WORLD_SETTINGS = tuple(name for name, s in CONTROL_SPECS.items() if s.is_setting and not s.in_vector)


def _from_stored(spec: ControlSpec) -> Callable[[float], Any]:
    """How a setting's value comes back from the float the state vector holds (``stored_value``'s inverse)."""
    if spec.kind == "bool":
        return bool
    if spec.kind == "int":
        return int
    if spec.kind == "choice":
        choices = spec.choices

        def choice(raw: float) -> str:
            return choices[int(raw)]

        return choice
    return float


# ``Controls.from_vector``'s table: each vector setting's name, slot and conversion; the world's at their defaults
_FROM_VECTOR = tuple((name, int(getattr(ST, name)), _from_stored(CONTROL_SPECS[name])) for name in SETTINGS)
_VECTOR_SLOTS = np.array([slot for _, slot, _ in _FROM_VECTOR], dtype=np.intp)
_WORLD_DEFAULTS = tuple((name, CONTROL_SPECS[name].default) for name in WORLD_SETTINGS)


def check_engine(name: str, engine: str) -> None:
    """Refuse a control the run's engine does not have, naming the engine that has it."""
    spec = CONTROL_SPECS.get(name)
    if spec is not None and engine not in spec.engines:
        raise InvalidInput(
            name,
            f"belongs to the {' and '.join(spec.engines)} engine; this run uses the {engine} engine "
            f"(start it with --engine {spec.engines[0]})",
            "engine_only",
            engines=" / ".join(spec.engines),
            engine=engine,
        )


def text_refused(name: Any, value: Any) -> str | None:
    """Why ``value`` is refused as text for control ``name`` (None when it is not): a choice's value is its
    name ("codel"); every other control's, a chain's service settings included, is a number or a switch, never
    text. The API, the WebSocket, run files
    and actions files judge a value's type by this one rule; a command line's text is parsed instead."""
    spec = CONTROL_SPECS.get(name) if isinstance(name, str) else None
    if isinstance(value, str) and spec is not None and spec.kind != "choice":
        return f"{name} takes {spec.describe_range()}, not text"
    if isinstance(value, str) and isinstance(name, str) and name in RENAMED:  # a switch, renamed since
        return f"{name} takes true or false, not text"
    if isinstance(value, str) and isinstance(name, str) and "." in name:  # a chain's <service>.<setting>
        from oncallsim.model.chain.controls import SERVICE_SETTINGS

        setting = SERVICE_SETTINGS.get(name.partition(".")[2])
        if setting is not None:
            return f"{name} takes {setting.describe()}, not text"
    return None


# Controls renamed since a model version whose run files still replay: each old name, the control it is now, and
# its value as that control's. Read wherever controls come in (actions, overrides, a scenario's opening controls,
# a record's settings), so an old run file replays; never listed, shown or reported.
RENAMED: dict[str, tuple[str, dict[bool, str]]] = {
    "client_throttle": ("breaker", {True: "sre", False: "none"}),  # model version 1's switch of adaptive throttling
}


def current_name(name: Any, value: Any) -> tuple[Any, Any]:
    """(name, value) with a renamed control (``RENAMED``) given by its current name and value; others as they are."""
    if isinstance(name, str) and name in RENAMED:
        new, values = RENAMED[name]
        return new, values[_switch(name, value)]
    return name, value


def _switch(name: str, value: Any) -> bool:
    """A switch's value: true or false, or its words from a command line ("on", "0", "yes", …)."""
    if isinstance(value, str) and value.strip().lower() in {"true", "on", "1", "yes", "false", "off", "0", "no"}:
        return value.strip().lower() in {"true", "on", "1", "yes"}
    if not isinstance(value, bool):
        raise InvalidInput(name, f"must be true or false, got {quote(value)}", "switch", got=value)
    return value


def coerce_control_value(name: str, value: Any) -> Any:
    """Validate one control value (strings from a command line are parsed); raise ``InvalidInput`` if bad."""
    if isinstance(name, str) and "." in name:  # a chain's service: <service>.<setting> (model/chain/controls.py)
        from oncallsim.model.chain.controls import coerce_service_control

        return coerce_service_control(name, value)
    spec = CONTROL_SPECS.get(name)
    if spec is None:
        raise InvalidInput("control", f"unknown control {name!r}; known: " + ", ".join(CONTROL_SPECS))
    if spec.kind == "button":
        if value is not None:
            raise InvalidInput(name, f"is a button and takes no value, got {quote(value)}", "button", got=value)
        return None
    if spec.kind == "instance":
        if isinstance(value, str):
            number = whole_number(value.strip().removeprefix("i-"))
            value = value if number is None or number < 0 else number
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 100_000:
            raise InvalidInput(name, f"must be {spec.describe_range()}, got {quote(value)}", "instance_id", got=value)
        return value
    if spec.kind == "choice":
        if not isinstance(value, str) or value not in spec.choices:
            raise InvalidInput(
                name, f"must be {spec.describe_range()}, got {quote(value)}", "choice", allowed=spec.choices, got=value
            )
        return value
    if spec.kind == "bool":
        return _switch(name, value)
    if isinstance(value, str):
        try:
            value = number_text(value)
        except ValueError:
            raise _out_of_range(spec, f"must be {spec.describe_range()}, got {quote(value)}", value) from None
    # an integer is compared as it is (10**400 is out of range, never an OverflowError on the way to a float)
    finite = isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))
    if isinstance(value, bool) or not finite:
        raise _out_of_range(spec, f"must be {spec.describe_range()}, got {quote(value)}", value)
    if spec.kind == "int" and isinstance(value, float) and not value.is_integer():
        raise _out_of_range(spec, f"must be {spec.describe_range()}, got {quote(value)}", value)
    assert spec.min is not None and spec.max is not None
    if not spec.min <= value <= spec.max:
        raise _out_of_range(spec, f"{quote(value)} is out of range; allowed {spec.describe_range()}", value)
    return int(value) if spec.kind == "int" else float(value) + 0.0  # + 0.0: -0.0 is 0


def _out_of_range(spec: ControlSpec, reason: str, value: Any) -> InvalidInput:
    """A number control's refusal: its English ``reason``, and its meaning (kind "range") for the pages."""
    return InvalidInput(
        spec.name, reason, "range", lo=spec.min, hi=spec.max, unit=spec.unit, whole=spec.kind == "int", got=value
    )


class ControlsBase:
    """What ``Controls`` can do; its fields are the settings' specs (generated below, each default once)."""

    if TYPE_CHECKING:
        __dataclass_fields__: ClassVar[dict[str, Any]]

        def __init__(self, **values: Any) -> None: ...

        def __getattr__(self, name: str) -> Any: ...

    def __post_init__(self) -> None:
        for name in (*SETTINGS, *WORLD_SETTINGS):
            object.__setattr__(self, name, coerce_control_value(name, getattr(self, name)))

    @classmethod
    def from_vector(cls, vec: npt.NDArray[np.float64]) -> Controls:
        """The settings a state vector holds (values that were validated when they were set). Read once a live
        minute for the viewers' state, where the settings rarely change: the same stored bits give the same
        (frozen) controls, built once (``_controls_stored``: 11 → 3 µs)."""
        return _controls_stored(vec.take(_VECTOR_SLOTS).tobytes())

    def world_settings(self) -> dict[str, Any]:
        """The request engine's settings among these (its world holds them)."""
        return {name: getattr(self, name) for name in WORLD_SETTINGS}

    def to_vector(self) -> npt.NDArray[np.float64]:
        """The settings laid out as the state vector holds them (the rest of the vector zero, the database at
        its own speed)."""
        vec = np.zeros(len(ST))
        vec[ST.db_slowdown] = 1.0
        for name in SETTINGS:
            vec[getattr(ST, name)] = stored_value(CONTROL_SPECS[name], getattr(self, name))
        return vec

    @classmethod
    def from_mapping(cls, values: dict[str, Any] | None) -> Controls:
        """Controls with the given names set (validated and coerced); the rest at their defaults."""
        coerced = {}
        for given, raw in (values or {}).items():
            name, value = current_name(given, raw)
            if name in BUTTONS or name in INSTANCE_ACTIONS:
                raise InvalidInput(name, "is an action, not a setting")
            coerced[name] = coerce_control_value(name, value)
        return cls(**coerced)


_PYTHON_TYPES = {"int": int, "fraction": float, "seconds": float, "bool": bool, "choice": str}

if TYPE_CHECKING:
    Controls = ControlsBase
else:
    Controls = make_dataclass(
        "Controls",
        [
            (spec.name, _PYTHON_TYPES[spec.kind], field(default=spec.default))
            for spec in CONTROL_SPECS.values()
            if spec.is_setting
        ],
        bases=(ControlsBase,),
        frozen=True,
        slots=True,
    )
    Controls.__module__ = __name__  # pickled by name (Python 3.11's make_dataclass has no ``module``)
    Controls.__doc__ = (
        "The settings in force, one field per setting of ``CONTROL_SPECS`` with its default. A changed value "
        "applies from the computation of the minute it is stamped with."
    )


@lru_cache(maxsize=256)
def _controls_stored(stored: bytes) -> Controls:
    """The controls whose vector settings are ``stored`` (their float64s, in ``_FROM_VECTOR``'s order, as bytes:
    a key that tells -0.0 from 0.0)."""
    new = object.__new__(Controls)
    put = object.__setattr__
    for (name, _, convert), raw in zip(_FROM_VECTOR, np.frombuffer(stored).tolist(), strict=True):
        put(new, name, convert(raw))
    for name, default in _WORLD_DEFAULTS:
        put(new, name, default)
    return new


def stored_value(spec: ControlSpec, value: Any) -> float:
    """A control's value as the state vector holds it (a choice by its index; a button holds nothing)."""
    if not spec.is_setting:
        return 0.0
    return float(spec.choices.index(value)) if spec.kind == "choice" else float(value)


def effect_events(spec: ControlSpec, value: Any, codes: Any) -> list[Event]:
    """The events an effect reported as codes (``effects.apply_effect``)."""
    first, second, n = codes
    events = [Event("setting", name=spec.name, value=value) if first == 1 else Event(EFFECT_EVENTS[first])]
    if second:
        events.append(Event(EFFECT_EVENTS[second], n=int(n)))
    return events


def apply_to_vector(
    vec: npt.NDArray[np.float64],
    boot: npt.NDArray[np.int64],
    actions: Iterable[tuple[str, Any]],
    p: npt.NDArray[np.float64],
) -> list[Event]:
    """The operator's inputs, already validated, in the order given (MODEL.md §3a.1): each control's effect
    on a run's state (``p``: the parameters as compiled code reads them, ``kernel.kernel_params``)."""
    events: list[Event] = []
    for name, value in actions:
        if "." in name:  # a chain's service: the chain engine applies it (model/chain/engine.py)
            continue
        spec, index = _APPLY[name]
        if spec.engines != BOTH:  # the request engine applied it to its world
            continue
        codes = apply_effect(spec.effect, index, stored_value(spec, value), vec, boot, p)
        events.extend(effect_events(spec, value, codes))
    return events


# each control with its place in the state vector (buttons have none)
_APPLY = {name: (spec, getattr(ST, name) if spec.in_vector else 0) for name, spec in CONTROL_SPECS.items()}

"""The operator's controls (MODEL.md §5): the control registry.

Each control declares its kind, range or choices, default, label, help text and its effect on the state.
The registry feeds validation (once, at the edge: ``coerce_control_value``), ``apply_actions`` (both
engines), the CLI's ``--set`` and ``oncallsim params``, the console's controls, the model page and the
Gymnasium spaces. Adding a control is one entry here plus its stage logic (docs/architecture.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from oncallsim.model.effects import EFFECT_EVENTS, PRESS_ROLLBACK, PRESS_WARMUP, SET, SET_FLOOR, apply_effect
from oncallsim.model.errors import InvalidInput, number_text, quote, whole_number
from oncallsim.model.events import Event
from oncallsim.model.fields import ST
from oncallsim.model.placeholders import fill

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
]

# int/fraction/seconds: numbers with a unit and range; bool: a switch; choice: one of named values
# (stored as its index); button: an action without a value; instance: an action on one instance (its id).
Kind = Literal["int", "fraction", "seconds", "bool", "choice", "button", "instance"]
BOTH = ("minute", "request")
REQUEST_ONLY = ("request",)


@dataclass(frozen=True)
class ControlSpec:
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
    step: float | None = None  # a slider's step, in the control's unit
    danger: bool = False  # the console asks for a second look (a red button)
    engines: tuple[str, ...] = BOTH  # the engines that have it; the others refuse it, naming these
    section: str = ""  # the model page's section that explains it (an anchor)

    @property
    def is_setting(self) -> bool:
        return self.kind not in ("button", "instance")

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
            "choices": list(self.choices),
            "range": self.describe_range(),
            "engines": list(self.engines),
        }


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
        ),
        ControlSpec(
            "autoscaler",
            "bool",
            "Autoscaler",
            "Target tracking on utilization; no new scale-out while instances boot. Off = exactly the floor.",
            True,
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
        ),
        ControlSpec(
            "recommendations",
            "bool",
            "Recommendations feature",
            "The heavy feature adds ⟪feature_app_time_ms⟫ ms CPU and ⟪feature_queries_per_request⟫ database "
            "queries per request. Off = graceful degradation.",
            True,
        ),
        ControlSpec(
            "warmup",
            "button",
            "Warm up cache",
            "Loads hot keys for ⟪warmup_minutes⟫ minutes (+⟪warmup_step%⟫ of the cache per "
            "minute) at the price of ⟪warmup_db_qps⟫ extra database queries/s.",
            effect=PRESS_WARMUP,
        ),
        ControlSpec(
            "rollback",
            "button",
            "Roll back",
            "Deploys the last good build on a new fleet (⟪rollback_minutes⟫ min, billed "
            "⟪rollback_cost_factor⟫×), then switches traffic. Pressing again restarts the preparation.",
            effect=PRESS_ROLLBACK,
            danger=True,
        ),
        ControlSpec(
            "balancer",
            "choice",
            "Balancer",
            "How each request's instance is chosen: pooled (one queue, any free worker), round-robin, random, "
            "least-outstanding, or p2c (two random instances, the less loaded by latency × in-flight × CPU wins).",
            "pooled",
            choices=("pooled", "round-robin", "random", "least-outstanding", "p2c"),
            engines=REQUEST_ONLY,
            section="balancers",
        ),
        ControlSpec(
            "self_protection",
            "bool",
            "Registry self-protection",
            "While fewer than ⟪self_protection_threshold%⟫ of the expected renewals arrive, the registry evicts "
            "nobody: it guards against a network split, and so keeps dead instances in rotation.",
            True,
            engines=REQUEST_ONLY,
            section="discovery",
        ),
        ControlSpec(
            "queue_discipline",
            "choice",
            "Queue discipline",
            "How each instance's queue is served: fifo; codel (drops a request that waited past 5 ms while the "
            "queue has stood above that for 100 ms: it answers 503 at once); adaptive-lifo (newest first once "
            "the queue is past 80 % of its limit, with CoDel). A drop is an error at once, not a timeout.",
            "fifo",
            choices=("fifo", "codel", "adaptive-lifo"),
            engines=REQUEST_ONLY,
            section="overload",
        ),
        ControlSpec(
            "queue_limit",
            "int",
            "Queue limit",
            "Requests a queue may hold (0 = no limit); one more is answered 503 at once. adaptive-lifo needs one.",
            0,
            0,
            100_000,
            "requests",
            step=10,
            engines=REQUEST_ONLY,
            section="overload",
        ),
        ControlSpec(
            "deadline_propagation",
            "bool",
            "Deadline propagation",
            "Requests carry their client's deadline: an instance drops work whose client has given up, before "
            "starting it and before each database read, instead of spending capacity on answers nobody waits for.",
            False,
            engines=REQUEST_ONLY,
            section="overload",
        ),
        ControlSpec(
            "limiter",
            "choice",
            "Concurrency limiter",
            "bbr: each instance rejects with 429 at once the requests beyond its measured capacity (peak "
            "throughput × least latency) while its CPU stays above 80 % (Kratos's BBR limiter); off: none.",
            "off",
            choices=("off", "bbr"),
            engines=REQUEST_ONLY,
            section="overload",
        ),
        ControlSpec(
            "client_throttle",
            "bool",
            "Client throttling",
            "Each client rejects requests itself, with probability max(0, (requests − K·accepts)/(requests + 1)) "
            "over the last 3 s (K = ⟪throttle_k⟫): a failing backend is spared the load it would refuse anyway.",
            False,
            engines=REQUEST_ONLY,
            section="overload",
        ),
        ControlSpec(
            "retries",
            "int",
            "Retries",
            "Extra attempts a client makes when an attempt times out, is refused, dropped or rejected "
            "(0–5); each retry goes back to the balancer. Every attempt is load; only the last one's failure "
            "reaches the user.",
            0,
            0,
            5,
            "retries",
            step=1,
            engines=REQUEST_ONLY,
            section="retries",
        ),
        ControlSpec(
            "retry_backoff",
            "choice",
            "Retry backoff",
            "How long a client waits before retry n: none (at once); exponential (min(cap, base·2ⁿ)); "
            "full-jitter (a uniform share of that); equal-jitter (half, plus a uniform half); "
            "decorrelated-jitter (uniform between base and 3× the previous wait).",
            "full-jitter",
            choices=("none", "exponential", "full-jitter", "equal-jitter", "decorrelated-jitter"),
            engines=REQUEST_ONLY,
            section="retries",
        ),
        ControlSpec(
            "retry_base_ms",
            "int",
            "Backoff base",
            "The backoff's base wait.",
            100,
            1,
            60_000,
            "ms",
            step=10,
            engines=REQUEST_ONLY,
            section="retries",
        ),
        ControlSpec(
            "retry_cap_ms",
            "int",
            "Backoff cap",
            "The longest a backoff waits.",
            20_000,
            1,
            600_000,
            "ms",
            step=100,
            engines=REQUEST_ONLY,
            section="retries",
        ),
        ControlSpec(
            "retry_budget",
            "fraction",
            "Retry budget",
            "Retries a client may send per request, as a token bucket (0 = no budget): each request adds this "
            "share of a token, each retry takes one, at most ⟪retry_budget_burst⟫ saved. 0.1 keeps retries "
            "under 10 % of requests whatever fails.",
            0.0,
            0.0,
            1.0,
            "",
            step=0.01,
            engines=REQUEST_ONLY,
            section="retries",
        ),
        ControlSpec(
            "eject",
            "instance",
            "Eject",
            "Take one instance out of rotation at every balancer (it finishes what it holds). Readmit puts it back.",
            engines=REQUEST_ONLY,
            section="fleet",
        ),
        ControlSpec(
            "readmit",
            "instance",
            "Readmit",
            "Put an ejected instance back into rotation.",
            engines=REQUEST_ONLY,
            section="fleet",
        ),
        ControlSpec(
            "replace",
            "instance",
            "Replace",
            "Boot a fresh instance (⟪boot_delay_min⟫ min, billed); when it is ready it takes this one's place and "
            "the old one leaves.",
            engines=REQUEST_ONLY,
            section="fleet",
            danger=True,
        ),
    )
}

BUTTONS = frozenset(name for name, s in CONTROL_SPECS.items() if s.kind == "button")
INSTANCE_ACTIONS = frozenset(name for name, s in CONTROL_SPECS.items() if s.kind == "instance")
SETTINGS = tuple(name for name, s in CONTROL_SPECS.items() if s.in_vector)  # both engines', in the state vector
WORLD_SETTINGS = tuple(name for name, s in CONTROL_SPECS.items() if s.is_setting and not s.in_vector)


def check_engine(name: str, engine: str) -> None:
    """Refuse a control the run's engine does not have, naming the engine that has it."""
    spec = CONTROL_SPECS.get(name)
    if spec is not None and engine not in spec.engines:
        raise InvalidInput(
            name,
            f"belongs to the {' and '.join(spec.engines)} engine; this run uses the {engine} engine "
            f"(start it with --engine {spec.engines[0]})",
        )


def coerce_control_value(name: str, value: Any) -> Any:
    """Validate one control value (strings from a command line are parsed); raise ``InvalidInput`` if bad."""
    spec = CONTROL_SPECS.get(name)
    if spec is None:
        raise InvalidInput("control", f"unknown control {name!r}; known: " + ", ".join(CONTROL_SPECS))
    if spec.kind == "button":
        if value is not None:
            raise InvalidInput(name, f"is a button and takes no value, got {quote(value)}")
        return None
    if spec.kind == "instance":
        if isinstance(value, str):
            number = whole_number(value.strip().removeprefix("i-"))
            value = value if number is None or number < 0 else number
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 100_000:
            raise InvalidInput(name, f"must be {spec.describe_range()}, got {quote(value)}")
        return value
    if spec.kind == "choice":
        if not isinstance(value, str) or value not in spec.choices:
            raise InvalidInput(name, f"must be {spec.describe_range()}, got {quote(value)}")
        return value
    if spec.kind == "bool":
        if isinstance(value, str) and value.strip().lower() in {"true", "on", "1", "yes", "false", "off", "0", "no"}:
            return value.strip().lower() in {"true", "on", "1", "yes"}
        if not isinstance(value, bool):
            raise InvalidInput(name, f"must be {spec.describe_range()}, got {quote(value)}")
        return value
    if isinstance(value, str):
        try:
            value = number_text(value)
        except ValueError:
            raise InvalidInput(name, f"must be {spec.describe_range()}, got {quote(value)}") from None
    # an integer is compared as it is (10**400 is out of range, never an OverflowError on the way to a float)
    finite = isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))
    if isinstance(value, bool) or not finite:
        raise InvalidInput(name, f"must be {spec.describe_range()}, got {quote(value)}")
    if spec.kind == "int" and isinstance(value, float) and not value.is_integer():
        raise InvalidInput(name, f"must be {spec.describe_range()}, got {quote(value)}")
    assert spec.min is not None and spec.max is not None
    if not spec.min <= value <= spec.max:
        raise InvalidInput(name, f"{quote(value)} is out of range; allowed {spec.describe_range()}")
    return int(value) if spec.kind == "int" else float(value) + 0.0  # + 0.0: -0.0 is 0


@dataclass(frozen=True, slots=True)
class Controls:
    """The settings in force. A changed value applies from the computation of the minute it is stamped with."""

    floor: int = 10
    autoscaler: bool = True
    target_utilization: float = 0.60
    ttl_s: float = 60.0
    shed_share: float = 0.0
    recommendations: bool = True
    balancer: str = "pooled"  # the request engine's (its world holds them)
    self_protection: bool = True
    queue_discipline: str = "fifo"
    queue_limit: int = 0
    deadline_propagation: bool = False
    limiter: str = "off"
    client_throttle: bool = False
    retries: int = 0
    retry_backoff: str = "full-jitter"
    retry_base_ms: int = 100
    retry_cap_ms: int = 20_000
    retry_budget: float = 0.0

    def __post_init__(self) -> None:
        for name in (*SETTINGS, *WORLD_SETTINGS):
            object.__setattr__(self, name, coerce_control_value(name, getattr(self, name)))

    @classmethod
    def from_vector(cls, vec: npt.NDArray[np.float64]) -> Controls:
        """The settings a state vector holds (values that were validated when they were set)."""
        new = object.__new__(cls)
        for name in SETTINGS:
            spec = CONTROL_SPECS[name]
            raw = vec[getattr(ST, name)]
            value: Any
            if spec.kind == "bool":
                value = bool(raw)
            elif spec.kind == "int":
                value = int(raw)
            elif spec.kind == "choice":
                value = spec.choices[int(raw)]
            else:
                value = float(raw)
            object.__setattr__(new, name, value)
        for name in WORLD_SETTINGS:
            object.__setattr__(new, name, CONTROL_SPECS[name].default)
        return new

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
        for name, value in (values or {}).items():
            if name in BUTTONS or name in INSTANCE_ACTIONS:
                raise InvalidInput(name, "is an action, not a setting")
            coerced[name] = coerce_control_value(name, value)
        return cls(**coerced)


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
        spec, index = _APPLY[name]
        if spec.engines != BOTH:  # the request engine applied it to its world
            continue
        codes = apply_effect(spec.effect, index, stored_value(spec, value), vec, boot, p)
        events.extend(effect_events(spec, value, codes))
    return events


# each control with its place in the state vector (buttons have none)
_APPLY = {name: (spec, getattr(ST, name) if spec.in_vector else 0) for name, spec in CONTROL_SPECS.items()}

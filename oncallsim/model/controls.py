"""The operator's controls (MODEL.md §5): one table feeds validation, CLI help, the console and the docs."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from oncallsim.model.errors import InvalidInput

__all__ = ["BUTTONS", "CONTROL_SPECS", "SETTINGS", "ControlSpec", "Controls", "coerce_control_value"]

Kind = Literal["int", "fraction", "seconds", "bool", "button"]


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

    def describe_range(self) -> str:
        if self.kind == "bool":
            return "true or false"
        if self.kind == "button":
            return "no value (a button)"
        kind = "a whole number" if self.kind == "int" else "a number"
        return f"{kind} from {self.min:g} to {self.max:g}" + (f" {self.unit}" if self.unit else "")


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
        ),
        ControlSpec(
            "shed_share",
            "fraction",
            "Load shedding",
            "Share of the 30 % low-priority traffic "
            "(prefetch, batch, crawlers) rejected at the load balancer with 'retry later'.",
            0.0,
            0.0,
            1.0,
        ),
        ControlSpec(
            "recommendations",
            "bool",
            "Recommendations feature",
            "The heavy feature adds 20 ms CPU and one database query per request. Off = graceful degradation.",
            True,
        ),
        ControlSpec(
            "warmup",
            "button",
            "Warm up cache",
            "Loads hot keys for 6 minutes (+12 % of the cache per "
            "minute) at the price of 600 extra database queries/s.",
        ),
        ControlSpec(
            "rollback",
            "button",
            "Roll back",
            "Deploys the last good build on a new fleet (5 min, "
            "billed double), then switches traffic. Pressing again restarts the preparation.",
        ),
    )
}

BUTTONS = frozenset(name for name, s in CONTROL_SPECS.items() if s.kind == "button")
SETTINGS = tuple(name for name, s in CONTROL_SPECS.items() if s.kind != "button")


def coerce_control_value(name: str, value: Any) -> Any:
    """Validate one control value (strings from a command line are parsed); raise ``InvalidInput`` if bad."""
    spec = CONTROL_SPECS.get(name)
    if spec is None:
        raise InvalidInput("control", f"unknown control {name!r}; known: " + ", ".join(CONTROL_SPECS))
    if spec.kind == "button":
        if value is not None:
            raise InvalidInput(name, f"is a button and takes no value, got {value!r}")
        return None
    if spec.kind == "bool":
        if isinstance(value, str) and value.strip().lower() in {"true", "on", "1", "yes", "false", "off", "0", "no"}:
            return value.strip().lower() in {"true", "on", "1", "yes"}
        if not isinstance(value, bool):
            raise InvalidInput(name, f"must be {spec.describe_range()}, got {value!r}")
        return value
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise InvalidInput(name, f"must be {spec.describe_range()}, got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidInput(name, f"must be {spec.describe_range()}, got {value!r}")
    if spec.kind == "int":
        if not float(value).is_integer():
            raise InvalidInput(name, f"must be {spec.describe_range()}, got {value!r}")
        value = int(value)
    else:
        value = float(value)
    assert spec.min is not None and spec.max is not None
    if not spec.min <= value <= spec.max:
        raise InvalidInput(name, f"{value!r} is out of range; allowed {spec.describe_range()}")
    return value


@dataclass(frozen=True, slots=True)
class Controls:
    """The settings in force. A changed value applies from the computation of the minute it is stamped with."""

    floor: int = 10
    autoscaler: bool = True
    target_utilization: float = 0.60
    ttl_s: float = 60.0
    shed_share: float = 0.0
    recommendations: bool = True

    def __post_init__(self) -> None:
        for name in SETTINGS:
            object.__setattr__(self, name, coerce_control_value(name, getattr(self, name)))

    def with_value(self, name: str, value: Any) -> Controls:
        """A copy with one setting changed to an already-validated value (the hot path of applying actions)."""
        if name not in SETTINGS:
            raise InvalidInput("control", f"{name!r} is not a setting")
        new = object.__new__(Controls)
        for field_name in SETTINGS:
            object.__setattr__(new, field_name, value if field_name == name else getattr(self, field_name))
        return new

    @classmethod
    def from_mapping(cls, values: dict[str, Any] | None) -> Controls:
        """Controls with the given names set (validated and coerced); the rest at their defaults."""
        coerced = {}
        for name, value in (values or {}).items():
            if name in BUTTONS:
                raise InvalidInput(name, "is a button, not a setting")
            coerced[name] = coerce_control_value(name, value)
        return cls(**coerced)

"""One minute's record: everything the operator sees plus every intermediate value of the minute.

A named tuple: immutable and cheap to build (a day of minutes makes 1,440 of them).

The field names, order and units are a documented contract (docs/records.md): JSONL writes them all,
CSV writes the scalars with ``errors_by_cause`` flattened.
"""

from __future__ import annotations

from itertools import islice
from typing import Any, NamedTuple

from oncallsim.model.fields import EXTRA_SCHEMA

__all__ = ["CSV_FIELDS", "RECORD_FIELDS", "MinuteRecord"]


class MinuteRecord(NamedTuple):
    minute: int
    clock: str
    expected_requests_per_s: float
    requests_per_s: float
    admitted_per_s: float
    shed_share: float
    shed_per_s: float
    ttl_s: float
    recommendations: bool
    cache_warm: float
    cache_hit: float
    mean_age_s: float
    warmup_active: bool
    db_demand_qps: float
    db_utilization: float
    query_time_ms: float
    service_time_ms: float
    servers: int
    capacity_per_s: float
    erlangs: float
    utilization: float
    wait_probability: float
    timeout_share: float
    overload_share: float
    bad_build_share: float
    error_rate: float
    error_overload: float
    error_timeout: float
    error_bad_build: float
    error_dead_instance: float
    p99_ms: float
    burn: float
    burn_1h: float
    burn_5m: float
    budget_left: float
    page_firing: bool
    serving: int
    booting: int
    desired: int
    floor: int
    autoscaler: bool
    target_utilization: float
    rollback_active: bool
    cost_per_hour: float
    cost_so_far: float
    recommendations_available: float
    events: tuple[str, ...]
    extras: dict[str, Any] | None = None  # the request engine's measures beyond the minute model's

    @property
    def engine(self) -> str:
        """Which engine measured the minute: "request" (it carries the extras), else "minute"."""
        return "minute" if self.extras is None else "request"

    def extra(self, name: str) -> float | None:
        """One of the request engine's extras by name (``fields.EXTRA_SCHEMA``): None on a minute-engine record,
        or on a record saved before that extra existed. A name outside the schema is an error, not a None."""
        if name not in _EXTRA_NAMES:
            raise KeyError(f"{name!r} is not one of the request engine's extras ({', '.join(_EXTRA_NAMES)})")
        value = (self.extras or {}).get(name)
        return None if value is None else float(value)

    @property
    def errors_by_cause(self) -> dict[str, float]:
        return {
            "overload": self.error_overload,
            "timeout": self.error_timeout,
            "bad_build": self.error_bad_build,
            "dead_instance": self.error_dead_instance,
        }

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: the contract's field order, ``errors_by_cause`` as an object, events as a list."""
        # zip stops at the names' end: the fields before the causes, then (from after them) those up to the events
        out: dict[str, Any] = dict(zip(_BEFORE_CAUSES, self, strict=False))
        out["errors_by_cause"] = self.errors_by_cause
        out.update(zip(_AFTER_CAUSES, islice(self, _AFTER_START, None), strict=False))
        out["events"] = list(self.events)
        if self.extras is not None:
            out["extras"] = self.extras
        return out

    def to_row(self) -> dict[str, Any]:
        """The flat form (CSV, data frames): every scalar, per-cause errors as their own columns."""
        row = {name: getattr(self, name) for name in CSV_FIELDS[:-1]}
        row["events"] = "; ".join(self.events)
        return row


_EXTRA_NAMES = frozenset(f.name for f in EXTRA_SCHEMA)
_CAUSES = ("error_overload", "error_timeout", "error_bad_build", "error_dead_instance")
CSV_FIELDS: tuple[str, ...] = MinuteRecord._fields[:-1]  # the extras are JSON only
# JSON order: the per-cause columns fold into one object placed after error_rate.
RECORD_FIELDS: tuple[str, ...] = tuple(
    "errors_by_cause" if f == "error_overload" else f for f in CSV_FIELDS if f not in _CAUSES[1:]
)
_BEFORE_CAUSES = MinuteRecord._fields[: MinuteRecord._fields.index("error_overload")]
_AFTER_START = MinuteRecord._fields.index("error_dead_instance") + 1
_AFTER_CAUSES = MinuteRecord._fields[_AFTER_START:-2]

"""Distance to the cliff: where an operating point stands against the retry loop, in closed form (the console's
gauge, the debrief's sentence; docs/cliff.md, "The zones").

In the chain's bad mode every attempt times out: each call sends A = N + 1 attempts (1 + b under a tighter
retry budget b), all of them work for the server. The bad mode drains only while λA < cμ. So:

- **safe**: λA < cμ — whatever the trigger, the backlog drains once it ends;
- **vulnerable**: λ < cμ ≤ λA — healthy now, but a trigger that fills the queue past the timeout does not heal
  by itself ("a brownout does not heal by itself");
- **overloaded**: λ ≥ cμ — the first attempts alone exceed the capacity;
- **protected**: deadline propagation, CoDel, adaptive LIFO, the limiter or a client breaker (sre, classic) is on:
  the retried attempts no longer wait out a queue past their timeout, and the loop the chain describes is broken.

Whether a trigger (capacity κcμ for L minutes) would be survived is the chain's fluid limit in closed form: the
queue grows at λ − κcμ until it holds T of work at the trigger's pace (after t* = κcμT/(λ − κcμ) seconds), then
at λA − κcμ (every attempt times out and is retried); it heals once the capacity is back if what it holds then,
n_L, is under T of work at the full pace (n_L < cμT), or if the zone is safe.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from oncallsim.cliff.point import OperatingPoint, record_point
from oncallsim.model import MinuteRecord, Params

__all__ = ["ZONES", "Position", "gauge", "position", "trigger_survived"]

ZONES = ("safe", "vulnerable", "overloaded", "protected")


class Position(NamedTuple):
    """Where a point stands: its zone, λ/cμ, λA/cμ (the cliff is at 1), and whether the trigger is survived."""

    zone: str
    load: float
    amplified: float
    amplification: float
    survives: bool


def position(point: OperatingPoint) -> Position:
    amplification = point.server().amplification
    load = point.load
    amplified = load * amplification
    if load >= 1.0:
        zone = "overloaded"
    elif point.deadlines or point.breakers:
        zone = "protected"
    elif amplified >= 1.0:
        zone = "vulnerable"
    else:
        zone = "safe"
    return Position(zone, load, amplified, amplification, trigger_survived(point, zone))


def trigger_survived(point: OperatingPoint, zone: str) -> bool:
    """Whether the point's trigger heals by itself (the module's closed form)."""
    if zone in ("safe", "protected"):
        return True
    if zone == "overloaded":
        return False
    lam, capacity, during = point.arrivals_per_s, point.capacity_per_s, point.trigger_capacity_per_s
    seconds = 60.0 * point.trigger_minutes
    if lam <= during or seconds <= 0:
        return True  # the queue does not build
    filled = during * point.timeout_s / (lam - during)  # t*: the queue holds T of work at the trigger's pace
    if filled >= seconds:
        return True
    backlog = during * point.timeout_s + (lam * point.server().amplification - during) * (seconds - filled)
    return backlog < capacity * point.timeout_s


def gauge(
    record: MinuteRecord, params: Params, trigger_ratio: float | None, trigger_minutes: int
) -> dict[str, Any] | None:
    """The console's gauge for a request-engine minute: the zone, λ/cμ, λA/cμ, A, and whether a trigger like the
    scenario's (``trigger_minutes`` at ``trigger_ratio`` of the capacity; None: not measured yet, or none) would
    heal from here. None for a minute the gauge cannot read (the minute model's, none serving)."""
    point = record_point(record, params, trigger_ratio or 1.0, trigger_minutes if trigger_ratio else 0)
    if point is None:
        return None
    where = position(point)
    return {
        "zone": where.zone,
        "load": round(where.load, 4),
        "amplified": round(where.amplified, 4),
        "attempts": where.amplification,
        "survives": where.survives if trigger_ratio is not None and trigger_minutes > 0 else None,
    }

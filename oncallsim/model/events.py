"""The text of the events a minute reports: one place, shared by the scalar and the batch engine
(and keyed by the page's translation catalog with numbers replaced by {n})."""

from __future__ import annotations

from typing import Any

__all__ = [
    "DEPLOY_FINISHED",
    "DEPLOY_STARTED",
    "FLUSHED",
    "PAGE_CLEARED",
    "PAGE_FIRED",
    "ROLLBACK_READY",
    "ROLLBACK_RESTARTED",
    "ROLLBACK_STARTED",
    "WARMUP_FINISHED",
    "WARMUP_RUNNING",
    "WARMUP_STARTED",
    "fleet_to_floor",
    "floor_raised",
    "instances_ready",
    "scaled_in",
    "scaled_out",
    "setting",
    "show_value",
]

DEPLOY_STARTED = "deploy started"
DEPLOY_FINISHED = "deploy finished"
FLUSHED = "cache flushed"
PAGE_FIRED = "page fired"
PAGE_CLEARED = "page cleared"
WARMUP_STARTED = "warm-up started"
WARMUP_RUNNING = "warm-up already running"
WARMUP_FINISHED = "warm-up finished"
ROLLBACK_STARTED = "rollback started"
ROLLBACK_RESTARTED = "rollback restarted"
ROLLBACK_READY = "rollback ready"


def _instances(n: int) -> str:
    return f"{n} instance{'s' * (n != 1)}"


def show_value(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return f"{value:g}"


def setting(name: str, value: Any) -> str:
    return f"set {name} = {show_value(value)}"


def floor_raised(n: int) -> str:
    return f"floor raised: {_instances(n)} starting"


def fleet_to_floor(change: int) -> str:
    return f"fleet set to the floor: {-change} removed" if change < 0 else f"fleet set to the floor: {change} starting"


def instances_ready(n: int) -> str:
    return f"{_instances(n)} ready"


def scaled_out(n: int) -> str:
    return f"scaled out: {_instances(n)} starting"


def scaled_in(n: int) -> str:
    return f"scaled in: {_instances(n)} removed"

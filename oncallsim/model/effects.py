"""What pressing a control does to a run's state, compiled: one function both engines call.

A control declares its effect as one of the kinds below (``ControlSpec.effect``); ``apply_effect`` applies
it to a run's state vector and booting counts and reports the events as codes (``EFFECT_EVENTS``), which
``controls.apply_to_vector`` turns into events. The batch engine calls the same function for many runs
in one compiled loop (``apply_runs``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from oncallsim.model.fields import ST
from oncallsim.model.fleet import fleet_size, match_floor, start
from oncallsim.model.kernel import P, compiled, step

__all__ = ["EFFECT_EVENTS", "PRESS_ROLLBACK", "PRESS_WARMUP", "SET", "SET_FLOOR", "apply_effect", "apply_runs"]

# effect kinds
SET = 0  # a setting: the value is in force from this minute's computation
SET_FLOOR = 1  # a setting that also starts instances at once when raised above the fleet
PRESS_WARMUP = 2  # starts the warm-up job (unless it runs)
PRESS_ROLLBACK = 3  # (re)starts preparing the last good build

# event codes an effect reports, by position (0: none)
EFFECT_EVENTS = (
    "",
    "setting",
    "warmup_started",
    "warmup_running",
    "rollback_started",
    "rollback_restarted",
    "floor_raised",
    "fleet_to_floor_started",
    "fleet_to_floor_removed",
)
_SETTING, _WARMUP_STARTED, _WARMUP_RUNNING, _ROLLBACK_STARTED, _ROLLBACK_RESTARTED = 1, 2, 3, 4, 5
_FLOOR_RAISED, _TO_FLOOR_STARTED, _TO_FLOOR_REMOVED = 6, 7, 8


@step
def keep_fleet_at_floor(vec: Any, boot: Any, p: Any) -> tuple[int, int]:
    """With the autoscaler off the fleet is exactly the floor: extras go at once, missing ones boot."""
    if vec[ST.autoscaler] != 0.0:
        return 0, 0
    serving = int(vec[ST.serving])
    before = fleet_size(serving, boot)
    floor = int(vec[ST.floor])
    if before == floor:
        return 0, 0
    vec[ST.serving] = match_floor(serving, boot, floor, int(p[P.boot_delay_min]))
    change = fleet_size(int(vec[ST.serving]), boot) - before
    if change == 0:
        return 0, 0
    if change < 0:
        return _TO_FLOOR_REMOVED, -change
    return _TO_FLOOR_STARTED, change


@compiled
def apply_effect(effect: int, index: int, value: float, vec: Any, boot: Any, p: Any) -> tuple[int, int, int]:
    """Apply one control (``index``: its place in the state vector; ``value``: as stored there).

    Returns (event, second event, its count); codes index ``EFFECT_EVENTS``.
    """
    if effect == PRESS_WARMUP:
        if vec[ST.warmup_left] > 0:
            return _WARMUP_RUNNING, 0, 0
        vec[ST.warmup_left] = p[P.warmup_minutes]
        return _WARMUP_STARTED, 0, 0
    if effect == PRESS_ROLLBACK:
        again = vec[ST.rollback_left] > 0
        vec[ST.rollback_left] = p[P.rollback_minutes]
        return (_ROLLBACK_RESTARTED if again else _ROLLBACK_STARTED), 0, 0
    vec[index] = value
    if effect == SET_FLOOR:
        serving = int(vec[ST.serving])
        size = fleet_size(serving, boot)
        wanted = int(value)
        if size < wanted:
            vec[ST.serving] = start(serving, boot, wanted - size, int(p[P.boot_delay_min]))
            return _SETTING, _FLOOR_RAISED, wanted - size
    second, n = keep_fleet_at_floor(vec, boot, p)
    return _SETTING, second, n


@compiled
def apply_runs(runs: Any, effects: Any, indexes: Any, values: Any, state: Any, boot: Any, p: Any) -> Any:
    """``apply_effect`` for a list of (run, effect, index, value) in order; returns the event codes (k × 3)."""
    out = np.zeros((len(runs), 3), dtype=np.int64)
    for k in range(len(runs)):
        i = runs[k]
        out[k, 0], out[k, 1], out[k, 2] = apply_effect(effects[k], indexes[k], values[k], state[i], boot[i], p)
    return out

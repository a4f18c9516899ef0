"""One minute of the model: ``step(state, actions, rng, params) -> (new_state, record)``.

The order is MODEL.md §3a: the operator's actions (the control registry's effects), the scenario's events,
the minute's computation from the state at its start, then the state advanced for the next minute. The
minute itself is ``stages.minute``, compiled; this is its scalar driver. Pure but for the generator, which
is passed in and advanced in a fixed order (one Box–Muller pair per minute when noise is on).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import numpy.typing as npt

from oncallsim.model.controls import apply_to_vector, coerce_control_value
from oncallsim.model.events import Event, from_slots
from oncallsim.model.fields import NUMERIC_FIELDS
from oncallsim.model.params import Params
from oncallsim.model.record import MinuteRecord
from oncallsim.model.rng import Mulberry32
from oncallsim.model.stages import drawn_minute
from oncallsim.model.state import State

__all__ = ["advance", "apply_actions", "make_record", "step"]

_new_record = tuple.__new__  # a named tuple from a ready tuple, without binding 46 arguments
_INTS = tuple(i for i, f in enumerate(NUMERIC_FIELDS) if f.dtype == "int")
_BOOLS = tuple(i for i, f in enumerate(NUMERIC_FIELDS) if f.dtype == "bool")


def make_record(
    t: int, clock: str, values: npt.NDArray[np.float64], events: Iterable[Event], extras: dict[str, Any] | None = None
) -> MinuteRecord:
    """A record from the compiled minute's vector: ints and bools as Python ints and bools, per the schema."""
    row: list[Any] = values.tolist()
    for i in _INTS:
        row[i] = int(row[i])
    for i in _BOOLS:
        row[i] = row[i] != 0.0
    return _new_record(MinuteRecord, (t, clock, *row, tuple(events), extras))


def apply_actions(state: State, actions: Iterable[tuple[str, Any]], params: Params) -> tuple[State, list[Event]]:
    """The operator's inputs stamped with this minute, in the order given (MODEL.md §3a.1)."""
    actions = [(name, coerce_control_value(name, value)) for name, value in actions]
    if not actions:
        return state, []
    vec, boot = state.vec.copy(), state.boot.copy()
    events = apply_to_vector(vec, boot, actions, state.kernel.params)
    return state._replace(vec=vec, boot=boot), events


def step(
    state: State, actions: Iterable[tuple[str, Any]], rng: Mulberry32 | None, params: Params
) -> tuple[State, MinuteRecord]:
    """Compute minute ``state.minute`` and advance. ``rng=None`` runs without traffic noise.

    ``actions`` must be validated already (``Simulation`` does it at the edge). Pure: ``state`` is left as it
    was (its arrays are copied); ``advance`` is the same minute for a caller that drops the old state.
    """
    own = state._replace(vec=state.vec.copy(), boot=state.boot.copy(), window=state.window.copy())
    return advance(own, actions, rng, params)


def advance(
    state: State, actions: Iterable[tuple[str, Any]], rng: Mulberry32 | None, params: Params
) -> tuple[State, MinuteRecord]:
    """``step`` that reuses ``state``'s arrays for the next state: the caller must not use ``state`` again."""
    vec, boot, window = state.vec, state.boot, state.window
    events: list[Event] = apply_to_vector(vec, boot, actions, state.kernel.params) if actions else []
    t = state.minute
    k = state.kernel
    values, slots = k.values, k.slots
    happened, rng_state = drawn_minute(
        k.params, t, state.plan.clock_start_min, int(k.flags[t]), k.surge, int(rng.state) if rng is not None else 0,
        rng is not None, vec, boot, window, values, slots, k.ln_factorial,
    )  # fmt: skip
    if rng is not None:  # a whole number (returned as a float): passed back as one, so one compiled version serves
        rng.state = rng_state
    if happened:
        events.extend(from_slots(slots.tolist()))
    record = make_record(t, state.plan.clock(t), values, events)
    return State(t + 1, state.plan, vec, boot, window, k), record

"""The request-level engine behind ``Simulation(…, engine="request")``: the minute's opening and close are the
minute model's (``stages.open_minute``, ``stages.close_minute``); its physics are every request simulated
(``physics.request_minute``) instead of the formulas.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from oncallsim.model.controls import Controls, apply_to_vector
from oncallsim.model.events import Event, from_slots
from oncallsim.model.fields import REC, ST
from oncallsim.model.kernel import P
from oncallsim.model.params import Params
from oncallsim.model.plan import RunPlan
from oncallsim.model.record import MinuteRecord
from oncallsim.model.request.physics import EXTRA_FIELDS, MODE_PIPELINE, fill_cache, request_minute
from oncallsim.model.request.world import INSTANCE_LINES, World, new_world, with_room
from oncallsim.model.rng import Mulberry32, normal_pair_k
from oncallsim.model.stages import close_minute, open_minute
from oncallsim.model.state import State, initial_state
from oncallsim.model.step import make_record
from oncallsim.model.traffic import diurnal_rate, surge_factor

__all__ = ["RequestEngine", "extras_of", "minute_count", "steady_hit_ratio"]

_EXTRA_NAMES = tuple(name for name, _, _ in EXTRA_FIELDS)


def steady_hit_ratio(admitted_per_s: float, ttl_s: float, hot_objects: float) -> float:
    """rT/(1 + rT), r = λ/objects: the hit ratio (and the share of objects cached) of a TTL cache in its
    steady state (Jung, Berger, Balakrishnan 2003)."""
    rt = admitted_per_s / hot_objects * ttl_s
    return rt / (1.0 + rt)


def minute_count(requests_per_s: float) -> int:
    """The minute's number of arrivals: the minute model's (noisy) rate × 60, rounded half up."""
    return math.floor(requests_per_s * 60.0 + 0.5)


def extras_of(world: World, ext: np.ndarray[Any, Any], serving: int) -> dict[str, Any]:
    """The extras vector and the per-instance lines as the record's ``extras`` mapping."""
    out: dict[str, Any] = dict(zip(_EXTRA_NAMES, ext.tolist(), strict=True))
    out["instances"] = {line: world.instances[i, :serving].tolist() for i, line in enumerate(INSTANCE_LINES)}
    return out


class RequestEngine:
    """Every request simulated (REQUESTS.md); the SLO, page, cost and fleet as in the minute model."""

    name = "request"
    vectorized = False

    def initial(self, plan: RunPlan, controls: Controls, params: Params, seed: int = 0) -> State:
        state = initial_state(plan, controls, params)
        world = new_world(params, seed)
        vec = state.vec
        p = state.kernel.params
        surge = state.kernel.surge
        expected = diurnal_rate(0.0, float(plan.clock_start_min), p) * surge_factor(0.0, *surge)
        admitted = expected * (1.0 - p[P.low_priority_share] * vec[ST.shed_share])
        present = steady_hit_ratio(admitted, vec[ST.ttl_s], params.hot_objects)
        fill_cache(world, present, vec[ST.ttl_s], 0.0)
        return state._replace(world=world)

    def step(
        self, state: State, actions: Iterable[tuple[str, Any]], rng: Mulberry32 | None, params: Params
    ) -> tuple[State, MinuteRecord]:
        vec, boot, window = state.vec, state.boot, state.window
        k = state.kernel
        events: list[Event] = apply_to_vector(vec, boot, actions, k.params) if actions else []
        t = state.minute
        values, slots = k.values, k.slots
        z_count = z_scale = 0.0
        if rng is not None:  # the minute model's one draw: both engines see the same traffic
            rng.state, z_count, z_scale = normal_pair_k(rng.state)
        flags = int(k.flags[t])
        open_minute(
            k.params, t, state.plan.clock_start_min, flags, k.surge, z_count, z_scale, rng is not None, vec, values,
            slots,
        )  # fmt: skip
        count = minute_count(values[REC.requests_per_s])
        world = with_room(state.world, count)
        ext = np.zeros(len(EXTRA_FIELDS))
        serving = int(vec[ST.serving])
        request_minute(k.params, world, t, flags, vec, values, ext, MODE_PIPELINE, count, 0.0, 0)
        if close_minute(k.params, t, vec, boot, window, values, slots):
            events.extend(from_slots(slots.tolist()))
        record = make_record(t, state.plan.clock(t), values, events, extras_of(world, ext, serving))
        return State(t + 1, state.plan, vec, boot, window, k, world), record

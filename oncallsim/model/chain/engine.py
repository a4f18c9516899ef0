"""The request engine's minute when the run is a chain of services (``plan.graph``): the minute model opens the
minute (the traffic, the edge's shedding) and closes it (the SLO, the page, the cost, the fleet) as for the one
service; in between every request is simulated through the graph (``drive.chain_minute_of``).

What the operator's controls reach in a chain: the minute model's shedding at the edge, and its fleet, which is
the entry service's: the entry's instances start at the declared count and follow the autoscaler and the
operator's scaling (its workers per instance as declared); the other services keep their declared fleets. The
per-instance controls act on the one service's instances, which a chain does not have: refused, naming why; of
the one service's mechanisms only ``deadline_propagation`` has a meaning in a chain (its graph's, from the minute
it is set). A chain's own services take ``<service>.<setting>`` (``chain/controls.py``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from oncallsim.model.chain.controls import check_service_action, split_control
from oncallsim.model.chain.drive import chain_minute_of
from oncallsim.model.chain.layout import (
    BAL_POOLED,
    EF_HEDGE_DECLARED_S,
    EF_NETWORK_S,
    EI_CALLEE,
    EI_CALLER,
    SV_BALANCER,
    SV_BREAKER_K,
    SV_BUDGET,
    SV_HEDGE_Q,
    SV_LIFO,
    SV_MAX_QUEUE,
    SV_RETRIES,
    SV_TIMEOUT_S,
    SV_WORKERS,
    ChainLayout,
    quantile_s,
)
from oncallsim.model.chain.limiter import switch_limiter
from oncallsim.model.chain.measure import chain_extras, record_chain_minute
from oncallsim.model.chain.timers import requeue_timers
from oncallsim.model.chain.world import (
    Q_FREE,
    R_PROPAGATE,
    SI_SERVING,
    SR_FAIL,
    SR_SLOW,
    ChainWorld,
    new_chain,
    timers_in,
    with_room,
)
from oncallsim.model.controls import CONTROL_SPECS, Controls, apply_to_vector
from oncallsim.model.errors import InvalidInput
from oncallsim.model.events import Event, from_slots
from oncallsim.model.fields import EXTRA_SCHEMA, REC, ST, extras_by_name
from oncallsim.model.params import Params
from oncallsim.model.plan import RunPlan, ServiceFault
from oncallsim.model.record import MinuteRecord
from oncallsim.model.rng import Mulberry32, normal_pair_k
from oncallsim.model.stages import close_minute, open_minute
from oncallsim.model.state import State, initial_state
from oncallsim.model.step import make_record

__all__ = ["CHAIN_CONTROLS", "chain_initial", "chain_step", "check_chain_action"]

_WORLD_CONTROLS = frozenset(name for name, spec in CONTROL_SPECS.items() if spec.engines == ("request",))
# the one service's cache and build: a chain's cache and database are services of its graph (their controls are
# ``<service>.<setting>``), and its answers are its services' (a bad build's errors are the minute model's)
_CACHE_AND_BUILD = frozenset({"ttl_s", "recommendations", "warmup", "rollback"})
# what the one service's controls reach in a chain: the edge's shedding, the entry's fleet, deadline propagation
CHAIN_CONTROLS = tuple(
    name for name in CONTROL_SPECS if name not in _WORLD_CONTROLS | _CACHE_AND_BUILD or name == "deadline_propagation"
)


def chain_initial(plan: RunPlan, controls: Controls, params: Params, seed: int) -> State:
    assert plan.graph is not None
    for name in sorted(_WORLD_CONTROLS | _CACHE_AND_BUILD):
        value = getattr(controls, name, None)
        if value is not None and value != CONTROL_SPECS[name].default:
            if name == "deadline_propagation":  # a chain opens with its graph's
                raise InvalidInput(
                    name, "a chain opens with its graph's deadline_propagation (set it in [graph]); it may change later"
                )
            check_chain_action(name)  # the one service's mechanisms: set for a chain, they would do nothing
    state = initial_state(plan, controls, params)
    world = new_chain(plan.graph, seed)
    state.vec[ST.serving] = plan.graph.services[plan.graph.entry].instances
    return state._replace(world=world)


def follow_fleet(world: ChainWorld, layout: ChainLayout, serving: int) -> None:
    """The entry's workers: its serving instances × its workers per instance. Workers removed while busy finish
    their request first (the idle count goes below zero until they do)."""
    set_instances(world, layout, layout.entry, serving)


def set_instances(world: ChainWorld, layout: ChainLayout, s: int, instances: int) -> None:
    """Service ``s`` serves with ``instances`` from now on. Pooled: its one queue has as many workers more or
    fewer (those removed while busy finish their request first: the idle count goes below zero until they do).
    Balanced: its balancer chooses among its first ``instances`` queues; one taken out of rotation gets no new
    attempt and its workers finish what it holds."""
    workers = instances * layout.services[s].workers_per_instance
    delta = workers - int(world.svc[s, SV_WORKERS])
    if not delta:
        return
    world.svc[s, SV_WORKERS] = workers
    if world.svc[s, SV_BALANCER] == BAL_POOLED:
        world.queues[world.queue_first[s], Q_FREE] += delta
    else:
        world.svc_i[s, SI_SERVING] = instances


def apply_service_control(world: ChainWorld, layout: ChainLayout, name: str, value: Any, now: float) -> ChainWorld:
    """``<service>.<setting>`` from this minute on (``now``, its start; checked already): the world's copy of the
    graph changes, the layout stays as declared (a what-if from the start replays the file). Returns the world to
    use (a changed timeout moves the timers already set into the service's list onto the heap, which may need
    room)."""
    service, setting = split_control(name)
    s = layout.names.index(service)
    if setting == "timeout_ms":
        world.svc[s, SV_TIMEOUT_S] = value / 1000.0 if value else math.inf
        waiting = timers_in(world, s)
        if waiting:
            world = with_room(world, 0, extra_events=waiting)
            requeue_timers(world, s)
    elif setting == "retries":
        world.svc[s, SV_RETRIES] = value
    elif setting == "retry_budget":
        world.svc[s, SV_BUDGET] = value
    elif setting == "hedge_after_quantile":
        world.svc[s, SV_HEDGE_Q] = value
        for e in range(len(world.edge_i)):  # its calls' hedge delays: the declared one, and read again
            if world.edge_i[e, EI_CALLER] == s:
                callee = layout.services[int(world.edge_i[e, EI_CALLEE])]
                world.edge_f[e, EF_HEDGE_DECLARED_S] = (
                    2.0 * world.edge_f[e, EF_NETWORK_S] + quantile_s(callee, value) if value else 0.0
                )
                world.edge_read_at[e] = -1
    elif setting == "breaker_k":  # its breakers' windows go on counting from where they are
        world.svc[s, SV_BREAKER_K] = value
    elif setting == "max_queue":  # those waiting beyond it stay: it refuses arrivals until the queue is below
        world.svc[s, SV_MAX_QUEUE] = value if value else math.inf
    elif setting == "limiter":
        switch_limiter(world, s, bool(value), now)
    elif setting == "lifo":  # the queue is one list, taken from its head: arrivals now join its head (or tail)
        world.svc[s, SV_LIFO] = 1.0 if value else 0.0
    else:  # instances
        set_instances(world, layout, s, int(value))
    return world


def other_instances(world: ChainWorld, layout: ChainLayout) -> int:
    """The instances of every service but the entry, as they stand (their count set at once: no boot)."""
    return sum(
        int(world.svc[s, SV_WORKERS]) // service.workers_per_instance
        for s, service in enumerate(layout.services)
        if s != layout.entry
    )


def bill_other_services(world: ChainWorld, layout: ChainLayout, params: Params, vec: Any, values: Any) -> None:
    """The minute model bills the fleet it follows, the entry's (serving and booting, double during a rollback);
    the other services' instances cost the same price an hour, from the minute they are set: the record's cost
    rate, the run's cost so far and the state's grow by them."""
    extra = other_instances(world, layout) * params.instance_price_per_hour
    values[REC.cost_per_hour] += extra
    values[REC.cost_so_far] += extra / 60.0
    vec[ST.cost_so_far] += extra / 60.0


def apply_service_faults(world: ChainWorld, faults: tuple[ServiceFault, ...], minute: int) -> None:
    """Each service's state this minute: its work slowed by the product of the active faults' slowdowns, its
    attempts failing with 1 − ∏(1 − errors); back to itself when none is active."""
    world.svc_r[:, SR_SLOW] = 1.0
    world.svc_r[:, SR_FAIL] = 0.0
    for fault in faults:
        if fault.active(minute):
            world.svc_r[fault.service, SR_SLOW] *= fault.slowdown
            ok = 1.0 - world.svc_r[fault.service, SR_FAIL]
            world.svc_r[fault.service, SR_FAIL] = 1.0 - ok * (1.0 - fault.errors)


def check_chain_action(control: str, layout: ChainLayout | None = None) -> None:
    """The one service's instance controls have no instances to act on in a chain; a service's control
    (``<service>.<setting>``) must name one of the chain's services."""
    if "." in control:
        check_service_action(
            control,
            () if layout is None else layout.names,
            None if layout is None else layout.services[layout.entry].name,
        )
        return
    if control in _WORLD_CONTROLS and control != "deadline_propagation":
        raise InvalidInput(
            control,
            "acts on the one service's instances; this run is a chain of services (its [graph]), whose fleets are "
            "declared per service",
        )
    if control in _CACHE_AND_BUILD:
        raise InvalidInput(
            control,
            "acts on the one service's cache or build; this run is a chain of services (its [graph]), whose cache "
            "and database are services of the graph (<service>.<setting>)",
        )


def chain_step(
    state: State, actions: Iterable[tuple[str, Any]], rng: Mulberry32 | None, params: Params
) -> tuple[State, MinuteRecord]:
    plan = state.plan
    layout = plan.graph
    assert layout is not None
    vec, boot, window, k = state.vec, state.boot, state.window, state.kernel
    actions = list(actions)
    for name, _ in actions:
        check_chain_action(name, layout)
    events: list[Event] = apply_to_vector(vec, boot, actions, k.params) if actions else []
    world: ChainWorld = state.world
    for name, value in actions:
        if "." in name:
            world = apply_service_control(world, layout, name, value, 60.0 * state.minute)
            events.append(Event("setting", name=name, value=value))  # the event log says it as for any setting
        elif name == "deadline_propagation":  # from this minute's requests on (those in flight keep theirs)
            world.reals[R_PROPAGATE] = 1.0 if value else 0.0
    t = state.minute
    values, slots = k.values, k.slots
    z_count = z_scale = 0.0
    if rng is not None:  # the minute model's one draw: the same traffic as the other engines
        rng.state, z_count, z_scale = normal_pair_k(rng.state)
    flags = int(k.flags[t])
    open_minute(
        k.params, t, plan.clock_start_min, flags, k.surge, z_count, z_scale, rng is not None, vec, values, slots
    )
    # the requests the edge admits (its shedding is the minute model's), rounded half up as the one service's
    arrivals = int(np.floor(values[REC.admitted_per_s] * 60.0 + 0.5))
    follow_fleet(world, layout, int(vec[ST.serving]))
    apply_service_faults(world, plan.service_faults, t)
    world = chain_minute_of(world, t, arrivals)
    ext = np.zeros(len(EXTRA_SCHEMA))
    record_chain_minute(world, layout, values, ext)
    if close_minute(k.params, t, vec, boot, window, values, slots):
        events.extend(from_slots(slots.tolist()))
    bill_other_services(world, layout, params, vec, values)
    extras: dict[str, Any] = extras_by_name(ext)
    extras.update(chain_extras(world, layout))
    record = make_record(t, plan.clock(t), values, events, extras)
    return State(t + 1, plan, vec, boot, window, k, world), record

"""The request-level engine behind ``Simulation(…, engine="request")``: the minute's opening and close are the
minute model's (``stages.open_minute``, ``stages.close_minute``); its physics are every request simulated
(``physics.request_minute``) instead of the formulas.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from oncallsim.model.chain.controls import check_service_action
from oncallsim.model.chain.engine import chain_initial, chain_step, check_chain_action
from oncallsim.model.controls import CONTROL_SPECS, Controls, apply_to_vector
from oncallsim.model.errors import InvalidInput
from oncallsim.model.events import Event, from_slots
from oncallsim.model.fields import EXT, REC, ST, extras_by_name
from oncallsim.model.kernel import P
from oncallsim.model.params import Params
from oncallsim.model.plan import RunPlan
from oncallsim.model.record import MinuteRecord
from oncallsim.model.request.balancers import BALANCERS, I_BALANCER, I_CLIENTS
from oncallsim.model.request.calls import I_BUDGET_OUT
from oncallsim.model.request.connections import connections_minute
from oncallsim.model.request.controllers import Controller, ControllerRun, check_controller
from oncallsim.model.request.discovery import I_PROTECTING, I_SELF_PROTECTION, register_initial, registry_minute
from oncallsim.model.request.drive import run_minute
from oncallsim.model.request.fleet_ops import apply_faults, apply_world_actions, check_instance_action, lay_out_fleet
from oncallsim.model.request.histogram import latency_buckets
from oncallsim.model.request.instances import HEALTH
from oncallsim.model.request.limiter import I_LIMITING
from oncallsim.model.request.outcomes import INSTANCE_HIST_BIN_S, INSTANCE_LINES, N_LIMITED
from oncallsim.model.request.physics import fill_cache
from oncallsim.model.request.queues import Q_LEN
from oncallsim.model.request.settings import configure_world, world_settings, write
from oncallsim.model.request.world import World, new_world
from oncallsim.model.rng import Mulberry32, normal_pair_k
from oncallsim.model.stages import close_minute, open_minute
from oncallsim.model.state import State, initial_state
from oncallsim.model.step import make_record
from oncallsim.model.traffic import diurnal_rate, surge_factor

__all__ = [
    "MAX_BASE_REQUESTS_PER_S",
    "MAX_PEAK_REQUESTS_PER_S",
    "RequestEngine",
    "check_traffic",
    "extras_of",
    "minute_count",
    "steady_hit_ratio",
]

# The request engine simulates every request: a minute's cost grows with its traffic (a busy minute of 2,500 req/s
# ~30 ms; 50,000 req/s ~1 s). Past this base rate one minute holds a worker process for over a second and a live
# run could not be served at the console's speeds; the minute engine's formulas take up to the parameter's own
# range (1e7). Refused when the run is built, so every surface (web, rooms, CLI, files, Gym) refuses it alike.
MAX_BASE_REQUESTS_PER_S = 20_000.0
# A surge multiplies the base rate: its peak is bounded too (the base's cap × the daily peak × a ×4 surge). Without
# it a game day's fault "surge ×9,999" asked one minute for 700 million arrivals: a MemoryError, or the kernel's OOM
# killer taking the room's worker. At this rate a minute costs a worker about two seconds (the run plays slower).
MAX_PEAK_REQUESTS_PER_S = 100_000.0

_WORLD_CONTROLS = frozenset(name for name, spec in CONTROL_SPECS.items() if spec.engines == ("request",))


def steady_hit_ratio(admitted_per_s: float, ttl_s: float, hot_objects: float) -> float:
    """rT/(1 + rT), r = λ/objects: the hit ratio (and the share of objects cached) of a TTL cache in its
    steady state (Jung, Berger, Balakrishnan 2003)."""
    rt = admitted_per_s / hot_objects * ttl_s
    return rt / (1.0 + rt)


def minute_count(requests_per_s: float) -> int:
    """The minute's number of arrivals: the minute model's (noisy) rate × 60, rounded half up."""
    return math.floor(requests_per_s * 60.0 + 0.5)


def extras_of(
    world: World, ext: np.ndarray[Any, Any], serving: int, wpi: int = 1, db_slowdown: float = 1.0
) -> dict[str, Any]:
    """The extras vector, the fleet's settings and the per-instance lines as the record's ``extras`` mapping;
    also what a zoom needs to rebuild the minute: every setting the world held and the database's slowdown."""
    out: dict[str, Any] = extras_by_name(ext)
    out["settings"] = world_settings(world)
    out["db_slowdown"] = db_slowdown
    out["balancer"] = BALANCERS[int(world.views.ints[I_BALANCER])]
    out["clients"] = int(world.views.ints[I_CLIENTS])
    out["self_protection"] = bool(world.registry.ints[I_SELF_PROTECTION])
    out["self_protection_engaged"] = bool(world.registry.ints[I_PROTECTING])
    out["workers_per_instance"] = wpi
    out["latency_buckets"], out["latency_sum_s"] = latency_buckets(world.meter.latency_hist)
    lines = {line: world.meter.instances[i, :serving].tolist() for i, line in enumerate(INSTANCE_LINES)}
    lines["speed"] = world.fleet.speed[:serving].tolist()
    if (world.fleet.base_speed[:serving] != 1.0).any():  # machines of their own speeds (a scenario's fleet)
        lines["base_speed"] = world.fleet.base_speed[:serving].tolist()
    lines["health"] = [HEALTH[h] for h in world.fleet.health[:serving].tolist()]
    lines["registered"] = world.registry.reg[:serving].tolist()
    lines["ejected"] = world.fleet.ejected[:serving].tolist()
    lines["replacing"] = [1 if r else 0 for r in world.fleet.replacing[:serving].tolist()]
    lines["in_flight"] = world.workers.inst_busy[:serving].tolist()
    half = world.queues.qs.shape[1] // 2  # each queue's sheddable list (queues.py)
    lines["queue"] = (world.queues.qs[Q_LEN, :serving] + world.queues.qs[Q_LEN, half : half + serving]).tolist()
    lines["p99_ms"] = [_p99_ms(world.meter.inst_hist[i]) for i in range(serving)]
    lines["cpu_permille"] = world.cpu.ema[:serving].round(1).tolist()  # the limiter's CPU EMA
    out["instances"] = lines
    return out


def overload_events(world: World, ext: np.ndarray[Any, Any], serving: int) -> list[Event]:
    """The limiter engaging or released, the retry budget exhausted or recovered: each a change from the
    minute before (the world remembers which held then)."""
    events = []
    limiting = int((world.meter.instances[N_LIMITED, :serving] > 0).sum())
    if limiting and not world.limiter.ints[I_LIMITING]:
        events.append(Event("limiter_engaged", n=limiting))
    elif not limiting and world.limiter.ints[I_LIMITING]:
        events.append(Event("limiter_released"))
    world.limiter.ints[I_LIMITING] = 1 if limiting else 0
    denied = float(ext[EXT.retries_denied_per_s])
    if denied > 0 and not world.calls.ints[I_BUDGET_OUT]:
        events.append(Event("retry_budget_exhausted", n=max(1, round(denied))))
    elif denied == 0 and world.calls.ints[I_BUDGET_OUT]:
        events.append(Event("retry_budget_recovered"))
    world.calls.ints[I_BUDGET_OUT] = 1 if denied > 0 else 0
    return events


def _p99_ms(hist: np.ndarray[Any, Any]) -> float | None:
    """The 99th percentile of one instance's answers in the minute (ms, 1 ms bins), None with none."""
    total = int(hist.sum())
    if total == 0:
        return None
    b = int(np.searchsorted(np.cumsum(hist), 0.99 * total))
    return float(b + 1) * INSTANCE_HIST_BIN_S * 1000.0


def check_traffic(plan: RunPlan, params: Params) -> None:
    """Refuse a plan whose traffic at its peak (the base rate × the daily peak × the surge's peak, an upper bound
    of the expected rate) the request engine could not simulate request by request: ``MAX_PEAK_REQUESTS_PER_S``.
    The message says the largest surge peak this run's base rate allows (rounded down)."""
    surge = plan.surge.peak if plan.surge is not None else 1.0
    daily = params.base_requests_per_s * (1.0 + params.diurnal_amplitude)
    if daily * surge <= MAX_PEAK_REQUESTS_PER_S:
        return
    allowed = math.floor(MAX_PEAK_REQUESTS_PER_S / daily * 10.0) / 10.0
    rate = round(daily * surge)
    raise InvalidInput(
        "peak",
        f"a surge of ×{surge:g} takes the traffic to about {rate:,} req/s; the request engine simulates every "
        f"request and takes at most {MAX_PEAK_REQUESTS_PER_S:,.0f} req/s: here a peak of at most ×{allowed:g} "
        "(the minute engine takes any)",
        "surge_peak",
        peak=surge,
        rate=rate,
        cap=MAX_PEAK_REQUESTS_PER_S,
        max=allowed,
    )


class RequestEngine:
    """Every request simulated (REQUESTS.md); the SLO, page, cost and fleet as in the minute model."""

    name = "request"
    vectorized = False

    def check_plan(self, plan: RunPlan, params: Params) -> None:
        """Refuse a plan this engine cannot play: traffic past what it simulates (``check_traffic``)."""
        check_traffic(plan, params)

    def initial(self, plan: RunPlan, controls: Controls, params: Params, seed: int = 0) -> State:
        if params.base_requests_per_s > MAX_BASE_REQUESTS_PER_S:
            raise InvalidInput(
                "base_requests_per_s",
                f"must be from 0 to {MAX_BASE_REQUESTS_PER_S:,.0f} req/s on the request engine, which simulates every "
                f"request (the minute engine takes up to 10,000,000), got {params.base_requests_per_s:g}",
            )
        self.check_plan(plan, params)
        if plan.graph is not None:
            return chain_initial(plan, controls, params, seed)
        state = initial_state(plan, controls, params)
        world = new_world(params, seed, revision=plan.revision)
        configure_world(world, controls, params)
        lay_out_fleet(world, plan.speeds, plan.weights)
        register_initial(world, controls.floor, params)
        vec = state.vec
        p = state.kernel.params
        surge = state.kernel.surge
        expected = diurnal_rate(0.0, float(plan.clock_start_min), p) * surge_factor(0.0, *surge)
        admitted = expected * (1.0 - p[P.low_priority_share] * vec[ST.shed_share])
        present = steady_hit_ratio(admitted, vec[ST.ttl_s], params.hot_objects)
        fill_cache(world.backend, world.gen, present, vec[ST.ttl_s], 0.0)
        control = ControllerRun()
        if controls.controller != "custom":  # a user's is attached next (attach_controller), else minute 0 refuses
            control.sync(world, params, 0)
        return state._replace(world=world, controller=control)

    def attach_controller(self, state: State, controller: Controller, params: Params) -> State:
        """A user's controller (checked: a ``tick_s`` in range, a ``control`` method) attached to a run about to
        start: the run's ``controller`` setting reads ``custom`` from now on."""
        if state.plan.graph is not None:
            raise InvalidInput("controller", "a controller plays on one service; this run is a chain of services")
        check_controller(controller)
        world = state.world
        control = ControllerRun(custom=controller)
        write(world, "controller", "custom")
        control.sync(world, params, state.minute)
        return state._replace(controller=control)

    def step(
        self, state: State, actions: Iterable[tuple[str, Any]], rng: Mulberry32 | None, params: Params
    ) -> tuple[State, MinuteRecord]:
        if state.plan.graph is not None:
            return chain_step(state, actions, rng, params)
        vec, boot, window = state.vec, state.boot, state.window
        k = state.kernel
        actions = list(actions)
        events: list[Event] = apply_to_vector(vec, boot, actions, k.params) if actions else []
        t = state.minute
        world = state.world
        wpi = params.workers_per_instance
        mine = [(name, value) for name, value in actions if name in _WORLD_CONTROLS]
        events.extend(apply_world_actions(world, vec, mine, t, params))
        serving = int(vec[ST.serving])
        events.extend(apply_faults(world, state.plan.faults, t, serving, wpi))
        events.extend(registry_minute(world, t, serving, params, bool(world.registry.ints[I_SELF_PROTECTION])))
        connections_minute(world, t, serving)
        control = state.controller
        if control is not None:
            control.sync(world, params, t)
        values, slots = k.values, k.slots
        z_count = z_scale = 0.0
        if rng is not None:  # the minute model's one draw: both engines see the same traffic
            rng.state, z_count, z_scale = normal_pair_k(rng.state)
        flags = int(k.flags[t])
        open_minute(
            k.params, t, state.plan.clock_start_min, flags, k.surge, z_count, z_scale, rng is not None, vec, values,
            slots,
        )  # fmt: skip
        minute = run_minute(
            k.params,
            world,
            vec,
            t,
            arrivals=minute_count(values[REC.requests_per_s]),
            flags=flags,
            record=values,
            controller=control,
        )
        world, ext = minute.world, minute.extras
        events.extend(overload_events(world, ext, serving))
        if close_minute(k.params, t, vec, boot, window, values, slots):
            events.extend(from_slots(slots.tolist()))
        extras = extras_of(world, ext, serving, wpi, float(vec[ST.db_slowdown]))
        record = make_record(t, state.plan.clock(t), values, events, extras)
        return State(t + 1, state.plan, vec, boot, window, k, world, control), record

    def check_action(self, state: State, control: str, value: Any) -> None:
        if state.plan.graph is not None:
            check_chain_action(control, state.plan.graph)
            return
        if "." in control:
            check_service_action(control, (), None)  # refused: this run is not a chain
        if (
            control == "controller"
            and value == "custom"
            and (state.controller is None or state.controller.custom is None)
        ):
            raise InvalidInput(
                "controller",
                "custom names a controller attached through the Python API (Simulation(..., controller=...)); "
                "this run has none: choose off, gradient2 or pid-shedder",
            )
        check_instance_action(state.world, int(state.vec[ST.serving]), control, value)

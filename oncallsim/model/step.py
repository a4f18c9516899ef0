"""One minute of the model: ``step(state, actions, rng, params) -> (new_state, record)``.

The order is MODEL.md §3a: the operator's actions, the scenario's events, the minute's computation from
the state at its start, then the state advanced for the next minute. Pure but for the generator, which is
passed in and advanced in a fixed order (two normals per minute when noise is on).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from oncallsim.model import cache, cost, database, deploy, slo, traffic
from oncallsim.model import events as ev
from oncallsim.model import fleet as fleet_mod
from oncallsim.model.controls import Controls, coerce_control_value
from oncallsim.model.params import Params
from oncallsim.model.queueing import queue_minute
from oncallsim.model.record import MinuteRecord
from oncallsim.model.rng import Mulberry32
from oncallsim.model.state import State

__all__ = ["apply_actions", "step"]


def apply_actions(state: State, actions: Iterable[tuple[str, Any]], params: Params) -> tuple[State, list[str]]:
    """The operator's inputs stamped with this minute, in the order given (MODEL.md §3a.1)."""
    events: list[str] = []
    controls = state.controls
    fleet = state.fleet
    warmup_left = state.warmup_left
    rollback_left = state.rollback_left
    for name, raw in actions:
        value = coerce_control_value(name, raw)
        if name == "warmup":
            if warmup_left > 0:
                events.append(ev.WARMUP_RUNNING)
            else:
                warmup_left = params.warmup_minutes
                events.append(ev.WARMUP_STARTED)
        elif name == "rollback":
            events.append(ev.ROLLBACK_RESTARTED if rollback_left > 0 else ev.ROLLBACK_STARTED)
            rollback_left = params.rollback_minutes
        else:
            controls = controls.with_value(name, value)
            events.append(ev.setting(name, value))
            if name == "floor" and fleet.size < value:
                started = value - fleet.size
                fleet = fleet.start(started, params.boot_delay_min)
                events.append(ev.floor_raised(started))
            if not controls.autoscaler and fleet.size != controls.floor:
                before = fleet.size
                fleet = fleet.match_floor(controls.floor, params.boot_delay_min)
                if fleet.size != before:
                    events.append(ev.fleet_to_floor(fleet.size - before))
    if not events:
        return state, events
    return state._replace(controls=controls, fleet=fleet, warmup_left=warmup_left, rollback_left=rollback_left), events


def step(
    state: State, actions: Iterable[tuple[str, Any]], rng: Mulberry32 | None, params: Params
) -> tuple[State, MinuteRecord]:
    """Compute minute ``state.minute`` and advance. ``rng=None`` runs without traffic noise."""
    state, events = apply_actions(state, actions, params) if actions else (state, [])
    plan = state.plan
    t = state.minute
    controls: Controls = state.controls
    fleet = state.fleet

    # 2. The scenario's own events.
    warm = state.cache_warm
    bad = state.bad_build_share
    deploying = state.deploying
    if t in plan.deploy_minutes:
        bad, deploying = deploy.start_deploy(bad, params)
        events.append(ev.DEPLOY_STARTED)
    if t in plan.flush_minutes:
        warm = 0.0
        events.append(ev.FLUSHED)

    # 3. The minute, from the state at its start.
    expected = traffic.expected_rate(t, plan.clock_start_min, params, plan.surge)
    requests = traffic.noisy_rate(expected, rng, params) if rng is not None else expected
    shed_share = controls.shed_share
    admitted = requests * (1.0 - params.low_priority_share * shed_share)
    ttl = controls.ttl_s
    hit = cache.hit_ratio(admitted, ttl, warm, params)
    warmup_active = state.warmup_left > 0
    q = database.queries_per_request(controls.recommendations, params)
    demand = database.db_demand(admitted, q, hit, warmup_active, params)
    rho = demand / params.db_capacity_qps
    query_ms = database.query_time_ms(rho, params)
    app_ms = params.app_time_ms + (params.feature_app_time_ms if controls.recommendations else 0.0)
    service_ms = app_ms * (1.0 + (params.bad_build_cpu_factor - 1.0) * bad) + (1.0 - hit) * q * query_ms
    service_s = service_ms / 1000.0
    servers = fleet.serving * params.workers_per_instance
    queue = queue_minute(admitted, service_s, servers, params.timeout_s)
    split = slo.split_errors(queue.overload_share, queue.timeout_share, bad, params)
    error_rate = split.total

    windows = slo.BurnWindows.opening(error_rate, params) if state.windows is None else state.windows.push(error_rate)
    burn = error_rate / params.error_budget
    burn_1h = windows.burn(params.burn_long_window_min, params)
    burn_5m = windows.burn(params.burn_short_window_min, params)
    budget_left = state.budget_left - burn / params.budget_period_min
    firing = slo.page_state(state.page_firing, burn_1h, burn_5m, params)
    if firing and not state.page_firing:
        events.append(ev.PAGE_FIRED)
    elif state.page_firing and not firing:
        events.append(ev.PAGE_CLEARED)

    rolling_back = state.rollback_left > 0
    cost_per_hour = cost.cost_per_hour(fleet.size, rolling_back, params)
    cost_so_far = state.cost_so_far + cost_per_hour / 60.0

    # 4. Advance the state for the next minute.
    next_warm = cache.refill(warm, database.db_headroom_factor(demand, params), warmup_active, params)
    warmup_left = state.warmup_left
    if warmup_left > 0:
        warmup_left -= 1
        if warmup_left == 0:
            events.append(ev.WARMUP_FINISHED)
    next_bad, deploying, rollback_left = deploy.advance(
        deploy.Rollout(bad, deploying, state.rollback_left), params, events
    )
    next_fleet, ready = fleet.tick()
    if ready:
        events.append(ev.instances_ready(ready))
    if controls.autoscaler:
        desired = fleet_mod.desired_fleet(
            fleet.serving, queue.utilization, controls.target_utilization, controls.floor, params
        )
        next_fleet, change = fleet_mod.autoscale(next_fleet, desired, params)
        if change > 0:
            events.append(ev.scaled_out(change))
        elif change < 0:
            events.append(ev.scaled_in(-change))
    else:
        desired = controls.floor

    # Positional, in MinuteRecord's field order (keyword binding of 46 names costs a tenth of the step).
    record = MinuteRecord(
        t,  # minute
        plan.clock(t),  # clock
        expected,  # expected_requests_per_s
        requests,  # requests_per_s
        admitted,  # admitted_per_s
        shed_share,  # shed_share
        requests - admitted,  # shed_per_s
        ttl,  # ttl_s
        controls.recommendations,  # recommendations
        warm,  # cache_warm
        hit,  # cache_hit
        cache.mean_age_s(ttl),  # mean_age_s
        warmup_active,  # warmup_active
        demand,  # db_demand_qps
        rho,  # db_utilization
        query_ms,  # query_time_ms
        service_ms,  # service_time_ms
        servers,  # servers
        servers / service_s if service_s > 0 else 0.0,  # capacity_per_s
        admitted * service_s,  # erlangs
        queue.utilization,  # utilization
        queue.wait_probability,  # wait_probability
        queue.timeout_share,  # timeout_share
        queue.overload_share,  # overload_share
        bad,  # bad_build_share
        error_rate,  # error_rate
        split.overload,  # error_overload
        split.timeout,  # error_timeout
        split.bad_build,  # error_bad_build
        queue.p99_s * 1000.0,  # p99_ms
        burn,  # burn
        burn_1h,  # burn_1h
        burn_5m,  # burn_5m
        budget_left,  # budget_left
        firing,  # page_firing
        fleet.serving,  # serving
        len(fleet.booting),  # booting
        desired,  # desired
        controls.floor,  # floor
        controls.autoscaler,  # autoscaler
        controls.target_utilization,  # target_utilization
        rolling_back,  # rollback_active
        cost_per_hour,  # cost_per_hour
        cost_so_far,  # cost_so_far
        1.0 if controls.recommendations else 0.0,  # recommendations_available
        tuple(events),  # events
    )
    # Positional, in State's field order (as the record above).
    new_state = State(
        t + 1,  # minute
        plan,  # plan
        controls,  # controls
        next_fleet,  # fleet
        next_warm,  # cache_warm
        warmup_left,  # warmup_left
        next_bad,  # bad_build_share
        deploying,  # deploying
        rollback_left,  # rollback_left
        windows,  # windows
        firing,  # page_firing
        budget_left,  # budget_left
        cost_so_far,  # cost_so_far
    )
    return new_state, record

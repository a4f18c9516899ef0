"""The minute, written once: the stages of MODEL.md §3a in order, over one run's numbers.

traffic → shedding → cache → database → service → queueing → errors → SLO → cost → advance.

``minute`` reads the state at the start of minute ``t`` (a float vector laid out by ``fields.STATE_SCHEMA``,
the booting counts and the burn window), writes the minute's record (``fields.NUMERIC_FIELDS``) and event
slot counts (``events.KERNEL_EVENTS``), and advances the state in place. Each stage is a formula of its own
module (cache, database, queueing, slo, cost, deploy, fleet, traffic). The scalar engine calls ``minute``
for its one run; the batch engine calls ``minute_runs``, a compiled loop over runs. Both are compiled
(``kernel.unmanaged``: no reference counting, as nothing here allocates; the row views of ``minute_runs``
and the arrays passed down the stages would otherwise cost two atomic counts each, half the minute's time),
so there is one copy of every formula and one copy of its order.
"""

from __future__ import annotations

from typing import Any

from oncallsim.model.cache import hit_ratio, mean_age_s, refill
from oncallsim.model.cost import cost_per_hour
from oncallsim.model.database import db_demand, db_headroom_factor, queries_per_request, query_time_ms
from oncallsim.model.deploy import advance, start_deploy
from oncallsim.model.fields import REC, ST
from oncallsim.model.fleet import autoscale, booting_count, desired_fleet, tick
from oncallsim.model.kernel import P, step, unmanaged
from oncallsim.model.queueing import queue_k
from oncallsim.model.rng import normal_pair_k
from oncallsim.model.slo import burn, page_state, push_window, split_errors
from oncallsim.model.traffic import diurnal_rate, noisy_rate, surge_factor

__all__ = [
    "DEPLOY",
    "FLUSH",
    "NO_SURGE",
    "close_minute",
    "drawn_minute",
    "formula_physics",
    "minute",
    "minute_runs",
    "open_minute",
]

DEPLOY = 1  # plan flag: a deploy starts this minute
FLUSH = 2  # plan flag: the cache is flushed this minute
BROWNOUT = 4  # plan flag: the database is slowed this minute, by (flags >> 8) / 100 times
NO_SURGE = (float("inf"), 1.0, 1.0, 1.0)  # onset never: factor 1

# event slots, in events.KERNEL_EVENTS order
_E_DEPLOY_STARTED, _E_FLUSHED, _E_PAGE_FIRED, _E_PAGE_CLEARED, _E_WARMUP_FINISHED = 0, 1, 2, 3, 4
_E_DEPLOY_FINISHED, _E_ROLLBACK_READY, _E_READY, _E_SCALED_OUT, _E_SCALED_IN = 5, 6, 7, 8, 9
_E_BROWNOUT_STARTED, _E_BROWNOUT_ENDED = 10, 11


@unmanaged
def open_minute(
    p: Any,
    t: int,
    clock_start: int,
    flags: int,
    surge: Any,
    z_count: float,
    z_scale: float,
    noisy: bool,
    st: Any,
    rec: Any,
    evs: Any,
) -> None:
    """The minute's opening, common to every engine: the scenario's events (a deploy starts, the cache is
    flushed: written into ``st``), the traffic and the shedding (written into ``rec``)."""
    for k in range(len(evs)):
        evs[k] = 0
    if flags & DEPLOY:
        st[ST.bad_build_share] = start_deploy(st[ST.bad_build_share], p)
        st[ST.deploying] = 1.0
        evs[_E_DEPLOY_STARTED] = 1
    if flags & FLUSH:
        st[ST.cache_warm] = 0.0
        evs[_E_FLUSHED] = 1
    slowdown = (flags >> 8) / 100.0 if flags & BROWNOUT else 1.0
    if slowdown != st[ST.db_slowdown]:
        if st[ST.db_slowdown] <= 1.0:
            evs[_E_BROWNOUT_STARTED] = 1
        elif slowdown <= 1.0:
            evs[_E_BROWNOUT_ENDED] = 1
        st[ST.db_slowdown] = slowdown
    shed = st[ST.shed_share]
    expected = diurnal_rate(float(t), float(clock_start), p) * surge_factor(
        float(t), surge[0], surge[1], surge[2], surge[3]
    )
    requests = noisy_rate(expected, z_count, z_scale, p) if noisy else expected
    admitted = requests * (1.0 - p[P.low_priority_share] * shed)
    rec[REC.expected_requests_per_s] = expected
    rec[REC.requests_per_s] = requests
    rec[REC.admitted_per_s] = admitted
    rec[REC.shed_share] = shed
    rec[REC.shed_per_s] = requests - admitted
    rec[REC.ttl_s] = st[ST.ttl_s]
    rec[REC.recommendations] = st[ST.recommendations]
    rec[REC.mean_age_s] = mean_age_s(st[ST.ttl_s])
    rec[REC.warmup_active] = 1.0 if st[ST.warmup_left] > 0 else 0.0
    rec[REC.bad_build_share] = st[ST.bad_build_share]
    rec[REC.serving] = st[ST.serving]
    rec[REC.servers] = st[ST.serving] * p[P.workers_per_instance]


@step
def formula_physics(p: Any, st: Any, rec: Any, ln_factorial: Any) -> None:
    """The minute model's physics (MODEL.md §3.3–3.7): cache → database → service → queueing → errors, from
    the formulas; then the cache's warmth for the next minute. The request engine replaces this stage."""
    ttl = st[ST.ttl_s]
    recommendations = st[ST.recommendations] != 0.0
    serving = int(st[ST.serving])
    warm = st[ST.cache_warm]
    warmup_active = st[ST.warmup_left] > 0
    bad = st[ST.bad_build_share]
    admitted = rec[REC.admitted_per_s]
    # Cache and database.
    hit = hit_ratio(admitted, ttl, warm, p)
    q = queries_per_request(recommendations, p)
    demand = db_demand(admitted, q, hit, warmup_active, p)
    slow = st[ST.db_slowdown]  # a brownout: each query takes ``slow`` times longer, the capacity shrinks as much
    rho = demand * slow / p[P.db_capacity_qps]
    query_ms = min(p[P.db_max_query_ms], slow * query_time_ms(rho, p))
    # Service time and the instance pool.
    app_ms = p[P.app_time_ms] + (p[P.feature_app_time_ms] if recommendations else 0.0)
    service_ms = app_ms * (1.0 + (p[P.bad_build_cpu_factor] - 1.0) * bad) + (1.0 - hit) * q * query_ms
    service_s = service_ms / 1000.0
    servers = serving * int(p[P.workers_per_instance])
    wait, timeout, overload, p99_s, utilization = queue_k(admitted, service_s, servers, p[P.timeout_s], ln_factorial)
    # Errors by cause.
    e_overload, e_timeout, e_bad = split_errors(overload, timeout, bad, p)
    rec[REC.cache_warm] = warm
    rec[REC.cache_hit] = hit
    rec[REC.db_demand_qps] = demand
    rec[REC.db_utilization] = rho
    rec[REC.query_time_ms] = query_ms
    rec[REC.service_time_ms] = service_ms
    rec[REC.capacity_per_s] = servers / service_s if service_s > 0 else 0.0
    rec[REC.erlangs] = admitted * service_s
    rec[REC.utilization] = utilization
    rec[REC.wait_probability] = wait
    rec[REC.timeout_share] = timeout
    rec[REC.overload_share] = overload
    rec[REC.error_rate] = e_overload + e_timeout + e_bad
    rec[REC.error_overload] = e_overload
    rec[REC.error_timeout] = e_timeout
    rec[REC.error_bad_build] = e_bad
    rec[REC.error_dead_instance] = 0.0  # the minute model has no instances
    rec[REC.p99_ms] = p99_s * 1000.0
    st[ST.cache_warm] = refill(warm, db_headroom_factor(demand * slow, p), warmup_active, p)


@unmanaged
def close_minute(p: Any, t: int, st: Any, boot: Any, win: Any, rec: Any, evs: Any) -> int:
    """The minute's close, common to every engine, on the physics' numbers in ``rec``: the SLO, the page,
    the cost, then the state advanced (warm-up job, rollout and rollback, booting, the autoscaler).

    Returns how many event slots are set (0: nothing happened, the common case).
    """
    floor = int(st[ST.floor])
    target = st[ST.target_utilization]
    serving = int(st[ST.serving])
    quiet = int(st[ST.quiet_minutes])
    warmup_left = int(st[ST.warmup_left])
    rollback_left = int(st[ST.rollback_left])
    was_firing = st[ST.page_firing] != 0.0
    # The SLO and the page.
    error_rate = rec[REC.error_rate]
    push_window(win, error_rate, t == 0)
    burn_now = error_rate / p[P.error_budget]
    burn_long = burn(win, int(p[P.burn_long_window_min]), p)
    burn_short = burn(win, int(p[P.burn_short_window_min]), p)
    budget_left = st[ST.budget_left] - burn_now / p[P.budget_period_min]
    firing = page_state(was_firing, burn_long, burn_short, p)
    if firing and not was_firing:
        evs[_E_PAGE_FIRED] = 1
    elif was_firing and not firing:
        evs[_E_PAGE_CLEARED] = 1
    # Cost.
    rolling_back = rollback_left > 0
    booting_now = booting_count(boot)
    cost_rate = cost_per_hour(serving + booting_now, rolling_back, p)
    cost_so_far = st[ST.cost_so_far] + cost_rate / 60.0

    # Advance the state for the next minute.
    if warmup_left > 0:
        warmup_left -= 1
        if warmup_left == 0:
            evs[_E_WARMUP_FINISHED] = 1
    next_bad, deploying, rollback_left, finished, rollback_ready = advance(
        st[ST.bad_build_share], st[ST.deploying] != 0.0, rollback_left, p
    )
    if finished:
        evs[_E_DEPLOY_FINISHED] = 1
    if rollback_ready:
        evs[_E_ROLLBACK_READY] = 1
    next_serving, ready = tick(serving, boot)
    evs[_E_READY] = ready
    if st[ST.autoscaler] != 0.0:
        desired = desired_fleet(serving, rec[REC.utilization], target, floor, p)
        next_serving, quiet, change = autoscale(next_serving, boot, quiet, desired, p)
        if change > 0:
            evs[_E_SCALED_OUT] = change
        elif change < 0:
            evs[_E_SCALED_IN] = -change
    else:
        desired = floor

    rec[REC.burn] = burn_now
    rec[REC.burn_1h] = burn_long
    rec[REC.burn_5m] = burn_short
    rec[REC.budget_left] = budget_left
    rec[REC.page_firing] = firing
    rec[REC.booting] = booting_now
    rec[REC.desired] = desired
    rec[REC.floor] = floor
    rec[REC.autoscaler] = st[ST.autoscaler]
    rec[REC.target_utilization] = target
    rec[REC.rollback_active] = rolling_back
    rec[REC.cost_per_hour] = cost_rate
    rec[REC.cost_so_far] = cost_so_far
    rec[REC.recommendations_available] = 1.0 if st[ST.recommendations] != 0.0 else 0.0

    st[ST.serving] = next_serving
    st[ST.quiet_minutes] = quiet
    st[ST.warmup_left] = warmup_left
    st[ST.bad_build_share] = next_bad
    st[ST.deploying] = deploying
    st[ST.rollback_left] = rollback_left
    st[ST.page_firing] = firing
    st[ST.budget_left] = budget_left
    st[ST.cost_so_far] = cost_so_far
    happened = 0
    for k in range(len(evs)):
        if evs[k] != 0:
            happened += 1
    return happened


@unmanaged
def minute(
    p: Any,
    t: int,
    clock_start: int,
    flags: int,
    surge: Any,
    z_count: float,
    z_scale: float,
    noisy: bool,
    st: Any,
    boot: Any,
    win: Any,
    rec: Any,
    evs: Any,
    ln_factorial: Any,
) -> int:
    """Compute minute ``t`` of one run by the formulas and advance its state (``st``, ``boot``, ``win``) in
    place: opening → physics → close. Returns how many event slots are set."""
    open_minute(p, t, clock_start, flags, surge, z_count, z_scale, noisy, st, rec, evs)
    formula_physics(p, st, rec, ln_factorial)
    return close_minute(p, t, st, boot, win, rec, evs)


@unmanaged
def drawn_minute(
    p: Any,
    t: int,
    clock_start: int,
    flags: int,
    surge: Any,
    rng_state: int,
    noisy: bool,
    st: Any,
    boot: Any,
    win: Any,
    rec: Any,
    evs: Any,
    ln_factorial: Any,
) -> tuple[int, int]:
    """``minute`` with its draws: one Box–Muller pair from the run's mulberry32 when noise is on (the model's
    only draw during a run). Returns (events set, the generator's next state)."""
    z_count = 0.0
    z_scale = 0.0
    if noisy:
        rng_state, z_count, z_scale = normal_pair_k(rng_state)
    happened = minute(p, t, clock_start, flags, surge, z_count, z_scale, noisy, st, boot, win, rec, evs, ln_factorial)
    return happened, rng_state


@unmanaged
def minute_runs(
    p: Any,
    t: int,
    clock_start: int,
    flags: int,
    surges: Any,
    rng_states: Any,
    noisy: bool,
    st: Any,
    boot: Any,
    win: Any,
    rec: Any,
    evs: Any,
    ln_factorial: Any,
) -> None:
    """``drawn_minute`` for every run of a batch: row i of the state arrays is run i; ``rec`` is field-major
    (column i is run i's record), so that each field is one contiguous row for the columns and the policies."""
    for i in range(st.shape[0]):
        _, rng_states[i] = drawn_minute(
            p, t, clock_start, flags, surges[i], rng_states[i], noisy, st[i], boot[i], win[i], rec[:, i], evs[i],
            ln_factorial,
        )  # fmt: skip

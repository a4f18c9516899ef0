"""One minute at request level: every request's path, as a compiled discrete-event loop (REQUESTS.md).

arrivals → admission (shedding) → balancer (pooled: one FIFO queue, a random free worker of any serving
instance) → instance worker (CPU, exponential) → cache (per-object expiry) → database (partitions, FIFO,
exponential) → response (timeout, bad-build errors).

The loop merges three time-ordered sources: the minute's arrivals (sorted), the heap of phase ends (one per
busy worker: CPU done or a database read done; one per warm-up query in flight) and the warm-up job's
Poisson stream. Database partitions are FIFO single servers, so a read's completion is known when it
arrives (Lindley's recursion), because reads reach a partition in time order.

A request's outcome is counted in the minute it becomes known, as a monitoring system counts it: when the
response is sent, or when the client gives up (arrival + timeout) if that comes first. Work on a request
whose client has given up continues (wasted work). The measured record fields and the extras are written
at the minute's end; the SLO, the page, the cost and the fleet then run on them (``stages.close_minute``).
"""

from __future__ import annotations

import math
from typing import Any

from oncallsim.model.fields import ST
from oncallsim.model.kernel import P, inline_step, unmanaged
from oncallsim.model.request.balancers import POOLED, answered, choose, client_of, instance_for, picked
from oncallsim.model.request.calls import (
    deadline_due,
    failed,
    open_call,
    retry_due,
    sent,
    succeeded,
    take_deadline,
    take_retry,
)
from oncallsim.model.request.disciplines import FIFO, drop, full, take
from oncallsim.model.request.generator import exponential, uniform, uniform_int
from oncallsim.model.request.heap import pop, push, replace_top
from oncallsim.model.request.instances import in_pool, refresh_views, sync_free
from oncallsim.model.request.limiter import completed, limited, tick
from oncallsim.model.request.measure import EXTRA_FIELDS, record_minute
from oncallsim.model.request.outcomes import (
    hist_add,
    inst_hist_add,
    quantile,
    second_of,
    timed_out,
    where_spent,
)
from oncallsim.model.request.queues import dequeue, enqueue, room
from oncallsim.model.request.throttle import throttled
from oncallsim.model.request.workers import free_add, free_remove
from oncallsim.model.request.world import (
    I_BALANCER,
    I_BUSY,
    I_DEADLINES,
    I_DISCIPLINE,
    I_ENABLED,
    I_FREE,
    I_HEAP,
    I_LIMITER,
    I_NBAD,
    I_NSAMPLES,
    I_QLEN,
    I_QUEUE_LIMIT,
    I_RETRIES,
    I_SEQ,
    I_THROTTLE,
    I_WCURSOR,
    I_WFREE,
    M_ABANDONED,
    M_ADMITTED,
    M_ARRIVED,
    M_BUSY,
    M_COMPLETED,
    M_DB_BUSY,
    M_HITS,
    M_LOOKUPS,
    M_MAX_QUEUE,
    M_PRESENT,
    M_QUERIES,
    M_QUERY_TIME,
    M_SERVICE,
    M_SHED,
    M_STARTED,
    M_STARTED_BAD,
    M_WAIT_COUNT,
    M_WAIT_SUM,
    M_WASTED,
    N_BAD,
    N_BUSY,
    N_ERRORS,
    N_LIMITED,
    N_SERVED,
    O_BAD,
    O_LIMITED,
    O_OVERLOAD,
    O_PENDING,
    O_REFUSED,
    O_SHED,
    O_THROTTLED,
    Q_CURSOR,
    Q_HEAD,
    Q_LEN,
    R_NEXT_STREAM,
    R_NEXT_TICK,
    R_NEXT_VIEW,
    REFUSE,
    REFUSED_S,
    S_ARRIVALS,
    S_COMPLETED,
    S_IN_FLIGHT,
    S_QUEUE,
    UP,
    WHERE_DEAD,
    WHERE_QUEUE,
    X_ARRIVAL,
    X_HIT,
    X_INSTANCE,
    X_LOW,
    X_OUTCOME,
    X_QUERIES,
    X_SERVICE,
    X_WAIT,
)

__all__ = ["EXTRA_FIELDS", "MODE_PIPELINE", "MODE_QUEUE_ONLY", "fill_cache", "quantile", "request_minute"]

MODE_PIPELINE = 0  # the whole service: shedding, cache, database, builds
MODE_QUEUE_ONLY = 1  # M/M/N: a Poisson stream, exponential service of the app time, no cache or database

FLUSH = 2  # the plan's flag (stages.FLUSH): every expiry cleared at the minute's start

_INF = math.inf


# --- the stages of a request ------------------------------------------------------------------------


@inline_step
def _start(
    p: Any,
    w: Any,
    k: int,
    x: float,
    arrival: float,
    obj: int,
    tag: int,
    client: int,
    call: int,
    mode: int,
    app_s: float,
    q_mean: float,
) -> float:
    """Worker ``k`` takes a request (an attempt of ``call``, −1 none) at time ``x``: the cache lookup, its reads,
    its CPU phase. Returns when the CPU phase ends (the caller schedules it)."""
    m = w.measures
    g = w.gen
    w.w_busy[k] = True
    w.ints[I_BUSY] += 1
    w.w_arrival[k] = arrival
    w.w_start[k] = x
    w.w_object[k] = obj
    w.w_tag[k] = tag
    w.w_client[k] = client
    w.w_call[k] = call
    instance = w.w_instance[k]
    if call >= 0 and w.c_sent[call] == arrival:  # its client learns where it is served (a timeout's cause)
        w.c_started[call] = x
        w.c_inst[call] = instance
    w.inst_busy[instance] += 1
    health = w.health[instance]
    if health != UP:  # a dead instance: refused at once, or held until the client gives up (no work done)
        return _dead_start(p, w, k, x, arrival, tag, health)
    bad = instance < w.ints[I_NBAD]
    w.w_bad[k] = bad
    m[M_STARTED] += 1.0
    if bad:
        m[M_STARTED_BAD] += 1.0
    wait = x - arrival
    hist_add(w.wait_hist, wait)
    m[M_WAIT_SUM] += wait
    m[M_WAIT_COUNT] += 1.0
    miss = False
    queries = 0
    cpu_mean = app_s
    if mode == MODE_PIPELINE:
        m[M_LOOKUPS] += 1.0
        if w.expiry[obj] > x:
            m[M_HITS] += 1.0
        else:
            miss = True
            whole = int(q_mean)
            queries = whole
            if q_mean > whole and uniform(g) < q_mean - whole:
                queries += 1
        if bad:
            cpu_mean = app_s * p[P.bad_build_cpu_factor]
    speed = w.speed[instance]
    if speed != 1.0:
        cpu_mean = cpu_mean / speed
    w.w_miss[k] = miss
    w.w_queries[k] = queries
    if tag >= 0:
        w.samples[tag, X_WAIT] = wait * 1000.0
        w.samples[tag, X_INSTANCE] = instance
        w.samples[tag, X_HIT] = -1.0 if mode != MODE_PIPELINE else (0.0 if miss else 1.0)
        w.samples[tag, X_QUERIES] = queries
    cpu = exponential(g, cpu_mean)
    w.cpu_acc[instance] += cpu  # the instance's CPU time, as its limiter samples it
    return x + cpu


@unmanaged
def _dead_start(p: Any, w: Any, k: int, x: float, arrival: float, tag: int, health: int) -> float:
    """Worker ``k`` of a dead instance takes a request: a refused connection ends in ``REFUSED_S``; a hung or
    unreachable instance holds it until its client gives up. Returns when the worker is done with it."""
    w.w_bad[k] = False
    w.w_miss[k] = False
    w.w_queries[k] = 0
    if tag >= 0:
        w.samples[tag, X_INSTANCE] = w.w_instance[k]
        w.samples[tag, X_WAIT] = (x - arrival) * 1000.0
    if health == REFUSE:
        w.w_held[k] = 1
        return x + REFUSED_S
    w.w_held[k] = 2
    gave_up = arrival + p[P.timeout_s]
    return gave_up if gave_up > x else x


@unmanaged
def _dead_complete(p: Any, w: Any, k: int, x: float, t0: float, mode: int, app_s: float, q_mean: float) -> float:
    """The end of a request on a dead instance: refused (an error at once), or its client gave up (a timeout,
    where = dead instance). A request that was in service when its instance hung waits for its client too."""
    arrival = w.w_arrival[k]
    timeout = p[P.timeout_s]
    instance = w.w_instance[k]
    tag = w.w_tag[k]
    client = w.w_client[k]
    call = w.w_call[k]
    if w.w_held[k] == 1:
        failed(w, call, arrival, O_REFUSED, REFUSED_S, False, second_of(t0, x), tag, x, t0)
        w.instances[N_ERRORS, instance] += 1.0
        inst_hist_add(w, instance, REFUSED_S)
        if client >= 0:
            answered(w, client, instance, x, REFUSED_S, False, 0.0)
    else:
        if x < arrival + timeout:  # hung in service: the client still waits
            return arrival + timeout
        if arrival + timeout > t0 or call >= 0:
            if call < 0:  # a call's timer counted its timeout
                timed_out(w, WHERE_DEAD, timeout, w.w_start[k] > arrival, second_of(t0, arrival + timeout), tag)
            w.instances[N_ERRORS, instance] += 1.0
            inst_hist_add(w, instance, timeout)
        if client >= 0:
            answered(w, client, instance, x, timeout, False, 0.0)
    w.w_held[k] = 0
    return _release(p, w, k, x, t0, mode, app_s, q_mean)


@inline_step
def _query(w: Any, x: float, part_s: float) -> float:
    """A database read arriving now at a random partition: returns when it completes (FIFO, Lindley)."""
    j = uniform_int(w.gen, len(w.db_free))
    begin = w.db_free[j] if w.db_free[j] > x else x
    d = exponential(w.gen, part_s)
    done = begin + d
    w.db_free[j] = done
    m = w.measures
    m[M_QUERIES] += 1.0
    m[M_QUERY_TIME] += done - x
    m[M_DB_BUSY] += d
    return done


@inline_step
def _take_next(p: Any, w: Any, k: int, x: float, t0: float, mode: int, app_s: float, q_mean: float) -> float:
    """A worker that just finished: the head of the queue if any (returns when its CPU phase ends), else it
    joins the free workers (returns ∞)."""
    own = w.w_instance[k]
    pooled = w.qs.shape[1] - 1
    timeout = p[P.timeout_s]
    serving = w.ints[I_ENABLED] // int(p[P.workers_per_instance])
    rotating = in_pool(w, own, serving)
    while True:  # its instance's queue first, then the balancer's (if in its rotation); the discipline may drop
        qid = own if (w.qs[Q_LEN, own] > 0 or not rotating) else pooled
        slot = _take(w, qid, x, t0)
        if slot < 0 and qid == own and rotating and w.qs[Q_LEN, pooled] > 0:
            qid = pooled
            slot = _take(w, qid, x, t0)
        if slot < 0:
            if rotating or w.ints[I_BALANCER] != POOLED:
                free_add(w, k)
            return _INF
        arrival, obj, tag, client = w.s_arrival[slot], w.s_object[slot], w.s_tag[slot], w.s_client[slot]
        call = w.s_call[slot]
        if w.ints[I_DEADLINES] != 0 and x >= arrival + timeout:  # its client gave up: no work is started
            where = WHERE_QUEUE if qid == pooled else where_spent(w, own, 1.0, 0.0)
            _abandoned(w, own, client, call, arrival, tag, x, t0, timeout, where)
            continue
        return _start(p, w, k, x, arrival, obj, tag, client, call, mode, app_s, q_mean)


@inline_step
def _take(w: Any, qid: int, x: float, t0: float) -> int:
    """FIFO right here (the default, on every completion); the other disciplines in their module. A call with
    the world costs a copy of its arrays' descriptors: the hot path avoids the big one."""
    if w.ints[I_DISCIPLINE] == FIFO:
        return dequeue(w, qid) if w.qs[Q_LEN, qid] > 0 else -1
    return take(w, qid, x, t0)


@unmanaged
def _abandoned(
    w: Any,
    instance: int,
    client: int,
    call: int,
    arrival: float,
    tag: int,
    x: float,
    t0: float,
    timeout: float,
    where: int,
) -> None:
    """Work dropped because its deadline passed (deadline propagation): the client's timeout, counted in
    its minute unless an earlier minute's end (or the call's timer) did."""
    w.measures[M_ABANDONED] += 1.0
    if arrival + timeout > t0 and call < 0:
        timed_out(w, where, timeout, True, second_of(t0, arrival + timeout), tag)
    if client >= 0:
        answered(w, client, instance, x, timeout, False, 0.0)


@inline_step
def _complete(p: Any, w: Any, k: int, x: float, t0: float, ttl: float, mode: int, app_s: float, q_mean: float) -> float:
    """Worker ``k``'s request is answered at ``x``: store on a miss, count the outcome, free the worker.
    Returns when the worker's next phase ends (∞: it is free, or no longer serving)."""
    if w.w_held[k] != 0:
        return _dead_complete(p, w, k, x, t0, mode, app_s, q_mean)
    m = w.measures
    arrival = w.w_arrival[k]
    start = w.w_start[k]
    tag = w.w_tag[k]
    if w.w_miss[k]:
        w.expiry[w.w_object[k]] = x + ttl
    service = x - start
    m[M_COMPLETED] += 1.0
    m[M_SERVICE] += service
    second = second_of(t0, x)
    w.seconds[S_COMPLETED, second] += 1.0
    instance = w.w_instance[k]
    w.instances[N_SERVED, instance] += 1.0
    w.instances[N_BUSY, instance] += service
    enabled = k < w.ints[I_ENABLED]
    if enabled:
        m[M_BUSY] += x - (start if start > t0 else t0)
    if tag >= 0:
        w.samples[tag, X_SERVICE] = service * 1000.0
    response = x - arrival
    timeout = p[P.timeout_s]
    waited = start > arrival
    call = w.w_call[k]
    ok = False
    if response > timeout:
        m[M_WASTED] += service
        if arrival + timeout > t0 or call >= 0:  # else counted by an earlier minute's end
            if call < 0:  # a call's timer counted its timeout
                where = where_spent(w, instance, start - arrival, service)
                timed_out(w, where, timeout, waited, second_of(t0, arrival + timeout), tag)
            w.instances[N_ERRORS, instance] += 1.0
            inst_hist_add(w, instance, timeout)
    elif w.w_bad[k] and uniform(w.gen) < p[P.bad_build_error_rate]:
        failed(w, call, arrival, O_BAD, response, waited, second, tag, x, t0)
        w.instances[N_ERRORS, instance] += 1.0
        inst_hist_add(w, instance, response)
    else:
        ok = True
        succeeded(w, call, arrival, response, waited, second, tag, x, t0)
        inst_hist_add(w, instance, response)
    if w.ints[I_LIMITER] != 0:
        completed(w, instance, x, response)
    client = w.w_client[k]
    if client >= 0:  # sent by a client's balancer: it learns of the response (the server's CPU in ‰)
        cpu = 1000.0 * w.inst_busy[instance] / p[P.workers_per_instance]
        answered(w, client, instance, x, response if response < timeout else timeout, ok, cpu)
    return _release(p, w, k, x, t0, mode, app_s, q_mean)


@inline_step
def _release(p: Any, w: Any, k: int, x: float, t0: float, mode: int, app_s: float, q_mean: float) -> float:
    """Worker ``k`` is done with its request: it takes the next one (returns when that one's CPU phase ends)
    or joins the free workers (∞); an instance no longer serving takes nothing new."""
    w.inst_busy[w.w_instance[k]] -= 1
    w.w_busy[k] = False
    w.ints[I_BUSY] -= 1
    w.w_tag[k] = -1
    if k < w.ints[I_ENABLED]:
        return _take_next(p, w, k, x, t0, mode, app_s, q_mean)
    return _INF


@inline_step
def _read_or_abandon(
    p: Any, w: Any, k: int, x: float, t0: float, part_s: float, mode: int, app_s: float, q_mean: float
) -> float:
    """Worker ``k``'s next database read, unless its deadline has passed (deadline propagation): then the
    work stops here, wasted, and the worker moves on."""
    arrival = w.w_arrival[k]
    timeout = p[P.timeout_s]
    if w.ints[I_DEADLINES] != 0 and x >= arrival + timeout:
        start = w.w_start[k]
        w.measures[M_WASTED] += x - start
        if k < w.ints[I_ENABLED]:
            w.measures[M_BUSY] += x - (start if start > t0 else t0)
        instance = w.w_instance[k]
        where = where_spent(w, instance, start - arrival, x - start)
        _abandoned(w, instance, w.w_client[k], w.w_call[k], arrival, w.w_tag[k], x, t0, timeout, where)
        return _release(p, w, k, x, t0, mode, app_s, q_mean)
    w.w_queries[k] -= 1
    return _query(w, x, part_s)


# --- the minute -------------------------------------------------------------------------------------


@unmanaged
def _sorted_arrivals(w: Any, count: int, t0: float) -> None:
    """``count`` arrival times uniform on [t0, t0 + 60 s), sorted, into ``w.arrivals``: normalized sums of
    exponential spacings (the order statistics of uniforms, without a sort)."""
    times = w.arrivals
    total = 0.0
    for i in range(count):
        total += exponential(w.gen, 1.0)
        times[i] = total
    total += exponential(w.gen, 1.0)
    for i in range(count):
        times[i] = t0 + 60.0 * (times[i] / total)


@unmanaged
def fill_cache(w: Any, present: float, ttl: float, t0: float) -> None:
    """A cache in its steady state: each object present with probability ``present``, its remaining TTL
    uniform on (0, ttl) (REQUESTS.md: the opening minute and a zoomed minute start so)."""
    for obj in range(len(w.expiry)):
        if uniform(w.gen) < present:
            w.expiry[obj] = t0 + uniform(w.gen) * ttl
        else:
            w.expiry[obj] = -_INF


@unmanaged
def _strand(p: Any, w: Any, t0: float, serving: int) -> None:
    """Requests waiting at instances that no longer serve, or that crashed, fail at once (their connections
    are reset)."""
    for i in range(w.qs.shape[1] - 1):
        if i < serving and w.health[i] != REFUSE:
            continue
        while w.qs[Q_LEN, i] > 0:
            slot = dequeue(w, i)
            client = w.s_client[slot]
            if client >= 0:
                answered(w, client, i, t0, 0.0, False, 0.0)
            outcome = O_OVERLOAD if i >= serving else O_REFUSED
            failed(w, w.s_call[slot], w.s_arrival[slot], outcome, 0.0, False, 0, w.s_tag[slot], t0, t0)


@unmanaged
def _open(p: Any, w: Any, st: Any, t0: float, flags: int, mode: int, app_s: float, q_mean: float) -> None:
    """The minute's start: reset the measures, the fleet's workers and builds, a flush, the queue served
    by workers that became free (new instances)."""
    w.measures[:] = 0.0
    w.latency_hist[:] = 0
    w.wait_hist[:] = 0
    w.seconds[:, :] = 0.0
    w.instances[:, :] = 0.0
    w.inst_hist[:, :] = 0
    w.ints[I_NSAMPLES] = 0
    serving = int(st[ST.serving])
    workers = serving * int(p[P.workers_per_instance])
    nbad = math.floor(st[ST.bad_build_share] * serving + 0.5) if mode == MODE_PIPELINE else 0
    w.ints[I_ENABLED] = workers
    w.ints[I_NBAD] = nbad
    for i in range(min(serving, w.instances.shape[1])):
        w.instances[N_BAD, i] = 1.0 if i < nbad else 0.0
    w.ints[I_FREE] = 0
    for k in range(len(w.w_busy)):
        w.free_pos[k] = -1
    for k in range(workers):
        if not w.w_busy[k]:
            free_add(w, k)
    refresh_views(w, t0, serving)
    if w.ints[I_BALANCER] == POOLED:
        sync_free(w, int(p[P.workers_per_instance]))
    if mode == MODE_PIPELINE:
        if flags & FLUSH:
            w.expiry[:] = -_INF
        present = 0
        for obj in range(len(w.expiry)):
            if w.expiry[obj] > t0:
                present += 1
        w.measures[M_PRESENT] = present
    _strand(p, w, t0, serving)
    wpi = int(p[P.workers_per_instance])
    for i in range(serving):  # an instance's free workers take its own queue first
        for k in range(i * wpi, (i + 1) * wpi):
            if w.qs[Q_LEN, i] == 0:
                break
            if not w.w_busy[k]:
                if w.free_pos[k] >= 0:
                    free_remove(w, k)
                push(w, _take_next(p, w, k, t0, t0, mode, app_s, q_mean), k)
    while w.ints[I_FREE] > 0 and w.qs[Q_LEN, w.qs.shape[1] - 1] > 0:
        k = w.free[uniform_int(w.gen, w.ints[I_FREE])]
        free_remove(w, k)
        push(w, _take_next(p, w, k, t0, t0, mode, app_s, q_mean), k)


@inline_step
def _arrive(
    p: Any, w: Any, st: Any, x: float, t0: float, mode: int, app_s: float, q_mean: float, sample_every: int
) -> None:
    """A request arrives at the balancer: shedding, then (with retries, as a call's first attempt) a free
    worker, the queue, or overload."""
    m = w.measures
    g = w.gen
    seq = w.ints[I_SEQ]
    w.ints[I_SEQ] = seq + 1
    tag = -1
    if sample_every > 0 and seq % sample_every == 0 and w.ints[I_NSAMPLES] < len(w.samples):
        tag = w.ints[I_NSAMPLES]
        w.ints[I_NSAMPLES] = tag + 1
        w.samples[tag, :] = 0.0
        w.samples[tag, X_ARRIVAL] = x - t0
        w.samples[tag, X_OUTCOME] = O_PENDING
        w.samples[tag, X_HIT] = -1.0
        w.samples[tag, X_INSTANCE] = -1.0
    m[M_ARRIVED] += 1.0
    second = second_of(t0, x)
    w.seconds[S_ARRIVALS, second] += 1.0
    obj = 0
    if mode == MODE_PIPELINE:
        low = uniform(g) < p[P.low_priority_share]
        if tag >= 0:
            w.samples[tag, X_LOW] = 1.0 if low else 0.0
        if low and uniform(g) < st[ST.shed_share]:
            m[M_SHED] += 1.0
            if tag >= 0:
                w.samples[tag, X_OUTCOME] = O_SHED
            return
        obj = uniform_int(g, len(w.expiry))
    m[M_ADMITTED] += 1.0
    call = -1
    if w.ints[I_RETRIES] > 0:  # the client opens a call: it may retry
        call = open_call(w, x, obj, tag, client_of(w) if w.ints[I_BALANCER] != POOLED else 0)
        sent(p, w, call, x)
    _route(p, w, x, t0, obj, tag, second, call, mode, app_s, q_mean)


@unmanaged
def _retry(p: Any, w: Any, x: float, t0: float, mode: int, app_s: float, q_mean: float) -> None:
    """A call's backoff ended: its next attempt goes to the balancer."""
    call = take_retry(w)
    sent(p, w, call, x)
    _route(p, w, x, t0, w.c_object[call], w.c_tag[call], second_of(t0, x), call, mode, app_s, q_mean)


@inline_step
def _route(
    p: Any,
    w: Any,
    x: float,
    t0: float,
    obj: int,
    tag: int,
    second: int,
    call: int,
    mode: int,
    app_s: float,
    q_mean: float,
) -> None:
    """A request (an attempt of ``call``, −1 none) at the balancer: pooled, a free worker, else the queue;
    the others choose an instance (``_dispatch``)."""
    g = w.gen
    if w.ints[I_ENABLED] == 0:
        failed(w, call, x, O_OVERLOAD, 0.0, False, second, tag, x, t0)
    elif w.ints[I_BALANCER] != POOLED:
        _dispatch(p, w, x, t0, obj, tag, second, call, mode, app_s, q_mean)
    elif w.ints[I_FREE] > 0:
        k = w.free[uniform_int(g, w.ints[I_FREE])]
        free_remove(w, k)
        push(w, _start(p, w, k, x, x, obj, tag, -1, call, mode, app_s, q_mean), k)
    elif w.ints[I_QUEUE_LIMIT] > 0 and full(w, w.qs.shape[1] - 1):
        drop(w, w.qs.shape[1] - 1, -1, tag, x, t0, call, x)
    elif room(w) > 0:
        enqueue(w, w.qs.shape[1] - 1, x, obj, tag, -1, call)
        if w.ints[I_QLEN] > w.measures[M_MAX_QUEUE]:
            w.measures[M_MAX_QUEUE] = w.ints[I_QLEN]
    else:
        failed(w, call, x, O_OVERLOAD, 0.0, False, second, tag, x, t0)


@unmanaged
def _dispatch(
    p: Any,
    w: Any,
    x: float,
    t0: float,
    obj: int,
    tag: int,
    second: int,
    call: int,
    mode: int,
    app_s: float,
    q_mean: float,
) -> None:
    """A balancer other than pooled: its client (the call's, else one at random) chooses an instance; a free
    worker there takes the request, else it waits in that instance's queue."""
    if call < 0:
        client, i = choose(w, x)
    else:
        client = w.c_client[call]
        i = instance_for(w, client, x)
    if i < 0:  # nothing in this client's rotation
        failed(w, call, x, O_OVERLOAD, 0.0, False, second, tag, x, t0)
        return
    if w.ints[I_THROTTLE] != 0 and throttled(w, client, x):  # the client rejects it itself
        failed(w, call, x, O_THROTTLED, 0.0, False, second, tag, x, t0)
        return
    picked(w, client, i)
    if w.health[i] == REFUSE:  # connection refused: the client learns at once
        answered(w, client, i, x, REFUSED_S, False, 0.0)
        if tag >= 0:
            w.samples[tag, X_INSTANCE] = i
        failed(w, call, x, O_REFUSED, REFUSED_S, False, second, tag, x, t0)
        w.instances[N_ERRORS, i] += 1.0
        inst_hist_add(w, i, REFUSED_S)
        return
    if w.ints[I_LIMITER] != 0 and limited(w, i, x):  # the instance's limiter: 429 at once
        answered(w, client, i, x, 0.0, False, 0.0)
        failed(w, call, x, O_LIMITED, 0.0, False, second, tag, x, t0)
        w.instances[N_ERRORS, i] += 1.0
        w.instances[N_LIMITED, i] += 1.0
        return
    wpi = int(p[P.workers_per_instance])
    for k in range(i * wpi, (i + 1) * wpi):
        if w.free_pos[k] >= 0:
            free_remove(w, k)
            push(w, _start(p, w, k, x, x, obj, tag, client, call, mode, app_s, q_mean), k)
            return
    if w.ints[I_QUEUE_LIMIT] > 0 and full(w, i):
        drop(w, i, client, tag, x, t0, call, x)
    elif room(w) > 0:
        enqueue(w, i, x, obj, tag, client, call)
        if w.ints[I_QLEN] > w.measures[M_MAX_QUEUE]:
            w.measures[M_MAX_QUEUE] = w.ints[I_QLEN]
    else:
        answered(w, client, i, x, 0.0, False, 0.0)
        failed(w, call, x, O_OVERLOAD, 0.0, False, second, tag, x, t0)


@unmanaged
def _warm_query(p: Any, w: Any, x: float, part_s: float, workers_total: int) -> None:
    """The warm-up job reads the next object of the hot set; it stores it when the read completes."""
    if w.ints[I_WFREE] == 0:
        return  # the job's readers are all busy: it skips this read
    w.ints[I_WFREE] -= 1
    slot = w.warm_free[w.ints[I_WFREE]]
    obj = w.ints[I_WCURSOR]
    w.ints[I_WCURSOR] = (obj + 1) % len(w.expiry)
    w.warm_object[slot] = obj
    push(w, _query(w, x, part_s), workers_total + slot)


@unmanaged
def _close(p: Any, w: Any, t0: float, t1: float, sample_every: int) -> None:
    """The minute's end: requests whose client gave up during it while still waiting or being served
    count as timeouts now (a call's timer counted its own); busy time up to the end counts toward
    utilization."""
    timeout = p[P.timeout_s]
    qs = w.qs
    pooled = qs.shape[1] - 1
    for qid in range(qs.shape[1]):  # each queue in arrival order, from the first not counted before
        slot = qs[Q_CURSOR, qid]
        where = WHERE_QUEUE if qid == pooled else where_spent(w, qid, 1.0, 0.0)
        while slot >= 0:
            gave_up = w.s_arrival[slot] + timeout
            if gave_up > t1:
                break
            if w.s_call[slot] >= 0:
                slot = w.s_next[slot]
                continue
            tag = w.s_tag[slot]
            if tag >= 0:  # still waiting when its client gave up: it waited at least the timeout
                w.samples[tag, X_WAIT] = timeout * 1000.0
            timed_out(w, where, timeout, True, second_of(t0, gave_up), tag)
            if qid != pooled:
                inst_hist_add(w, qid, timeout)
            slot = w.s_next[slot]
        qs[Q_CURSOR, qid] = slot
    enabled = w.ints[I_ENABLED]
    for k in range(len(w.w_busy)):
        if not w.w_busy[k]:
            continue
        gave_up = w.w_arrival[k] + timeout
        if t0 < gave_up <= t1 and w.w_call[k] < 0:
            start = w.w_start[k]
            where = WHERE_DEAD
            if w.w_held[k] == 0:
                where = where_spent(w, w.w_instance[k], start - w.w_arrival[k], gave_up - start)
            timed_out(w, where, timeout, start > w.w_arrival[k], second_of(t0, gave_up), w.w_tag[k])
            inst_hist_add(w, w.w_instance[k], timeout)
        if k < enabled and w.w_held[k] == 0:  # a dead instance's held connections are no work
            start = w.w_start[k]
            w.measures[M_BUSY] += t1 - (start if start > t0 else t0)
    if sample_every > 0:  # a sample belongs to its minute: forget the tags of what is still in flight
        for k in range(len(w.w_tag)):
            w.w_tag[k] = -1
        for qid in range(qs.shape[1]):
            slot = qs[Q_HEAD, qid]
            while slot >= 0:
                w.s_tag[slot] = -1
                slot = w.s_next[slot]
        for call in range(len(w.c_tag)):
            w.c_tag[call] = -1


@unmanaged
def request_minute(
    p: Any,
    w: Any,
    t: int,
    flags: int,
    st: Any,
    rec: Any,
    ext: Any,
    mode: int,
    count: int,
    rate: float,
    sample_every: int,
) -> None:
    """Simulate minute ``t`` (seconds 60t to 60t + 60 of the run) request by request.

    Reads the settings and the fleet from ``st`` (as the minute model does), ``count`` arrivals uniform in
    the minute (pipeline mode) or a Poisson stream of ``rate`` per second (queue-only mode); writes the
    measured fields of ``rec`` and the extras ``ext``. ``sample_every`` > 0 keeps every n-th arrival's path
    in ``w.samples`` (the zoom).
    """
    t0 = 60.0 * t
    t1 = t0 + 60.0
    recommendations = st[ST.recommendations] != 0.0
    app_s = (p[P.app_time_ms] + (p[P.feature_app_time_ms] if recommendations else 0.0)) / 1000.0
    q_mean = p[P.queries_per_request] + (p[P.feature_queries_per_request] if recommendations else 0.0)
    ttl = st[ST.ttl_s]
    part_s = len(w.db_free) / p[P.db_capacity_qps] * st[ST.db_slowdown]  # a brownout slows every read
    workers_total = len(w.w_busy)
    _open(p, w, st, t0, flags, mode, app_s, q_mean)

    if mode == MODE_PIPELINE:
        _sorted_arrivals(w, count, t0)
    arrivals = w.arrivals
    i = 0
    next_warm = _INF
    warm_rate = p[P.warmup_db_qps]
    if mode == MODE_PIPELINE and st[ST.warmup_left] > 0 and warm_rate > 0:
        next_warm = t0 + exponential(w.gen, 1.0 / warm_rate)
    stream_gap = 1.0 / rate if rate > 0 else _INF
    if mode == MODE_QUEUE_ONLY and w.reals[R_NEXT_STREAM] < t0:
        w.reals[R_NEXT_STREAM] = t0 + exponential(w.gen, stream_gap)
    sec = 0
    sec_next = t0 + 1.0
    while True:
        if mode == MODE_PIPELINE:
            ta = arrivals[i] if i < count else _INF
        else:
            ta = w.reals[R_NEXT_STREAM] if rate > 0 else _INF
        te = w.heap_time[0] if w.ints[I_HEAP] > 0 else _INF
        x = ta if ta < te else te
        if next_warm < x:
            x = next_warm
        td = deadline_due(w)  # the clients' timers (calls.py): ∞ without retries
        tr = retry_due(w)
        if td < x:
            x = td
        if tr < x:
            x = tr
        if x >= t1:
            break
        if x >= w.reals[R_NEXT_TICK]:  # the limiters' CPU samples
            tick(w, x, w.ints[I_ENABLED] // int(p[P.workers_per_instance]), int(p[P.workers_per_instance]))
        if x >= w.reals[R_NEXT_VIEW]:  # a balancer learns of a registry change
            refresh_views(w, x, w.ints[I_ENABLED] // int(p[P.workers_per_instance]))
            if w.ints[I_BALANCER] == POOLED:
                sync_free(w, int(p[P.workers_per_instance]))
        while x >= sec_next and sec < 60:
            w.seconds[S_QUEUE, sec] = w.ints[I_QLEN]
            w.seconds[S_IN_FLIGHT, sec] = w.ints[I_BUSY]
            sec += 1
            sec_next = t0 + sec + 1.0
        if x == te:
            ident = w.heap_id[0]
            if ident >= workers_total:  # a warm-up read completed: the object is stored
                pop(w)
                slot = ident - workers_total
                obj = w.warm_object[slot]
                if w.expiry[obj] < x + ttl:
                    w.expiry[obj] = x + ttl
                w.warm_free[w.ints[I_WFREE]] = slot
                w.ints[I_WFREE] += 1
            else:
                if w.w_queries[ident] > 0:
                    then = _read_or_abandon(p, w, ident, x, t0, part_s, mode, app_s, q_mean)
                else:
                    then = _complete(p, w, ident, x, t0, ttl, mode, app_s, q_mean)
                if then < _INF:  # the same worker's next phase: it replaces the earliest
                    replace_top(w, then, ident)
                else:
                    pop(w)
        elif x == ta:
            if mode == MODE_PIPELINE:
                i += 1
            else:
                w.reals[R_NEXT_STREAM] = x + exponential(w.gen, stream_gap)
            _arrive(p, w, st, x, t0, mode, app_s, q_mean, sample_every)
        elif x == next_warm:
            _warm_query(p, w, x, part_s, workers_total)
            next_warm = x + exponential(w.gen, 1.0 / warm_rate)
        elif x == td:
            take_deadline(p, w, x, t0)
        else:
            _retry(p, w, x, t0, mode, app_s, q_mean)
    while sec < 60:
        w.seconds[S_QUEUE, sec] = w.ints[I_QLEN]
        w.seconds[S_IN_FLIGHT, sec] = w.ints[I_BUSY]
        sec += 1
    _close(p, w, t0, t1, sample_every)
    record_minute(p, w, st, rec, ext, mode == MODE_PIPELINE, app_s)

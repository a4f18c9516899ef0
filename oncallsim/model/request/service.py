"""A request at a worker of an instance: its cache lookup, its database reads, its CPU, its answer, and the
worker moving on to the next waiting request (the stages every request takes, inlined into the minute's loop).
A dead instance's worker refuses at once or holds the request until its client gives up. The warm-up job's reads
go to the same database."""

from __future__ import annotations

import math
from typing import Any

from oncallsim.model.kernel import P, inline_step, step
from oncallsim.model.request.backend import I_WCURSOR, I_WFREE
from oncallsim.model.request.balancers import A_ERROR, A_OK, A_REFUSED, A_TIMEOUT, I_BALANCER, POOLED
from oncallsim.model.request.calls import (
    I_REVISION,
    failed,
    reply,
    succeeded,
)
from oncallsim.model.request.disciplines import (
    CODEL,
    FIFO,
    KRATOS,
    NO_PRIORITY,
    codel_target,
    drop,
    kratos_bypass,
    server_cap,
    take,
)
from oncallsim.model.request.generator import exponential, uniform, uniform_int
from oncallsim.model.request.heap import push
from oncallsim.model.request.instances import REFUSE, REFUSED_S, UP, in_pool
from oncallsim.model.request.limiter import I_CONTROLLER, I_LIMITER, completed, observed
from oncallsim.model.request.outcomes import (
    M_ABANDONED,
    M_BUSY,
    M_COMPLETED,
    M_CUT_SHORT,
    M_DB_BUSY,
    M_HITS,
    M_LOOKUPS,
    M_LOW_OK,
    M_LOW_WAIT_COUNT,
    M_LOW_WAIT_SUM,
    M_QUERIES,
    M_QUERY_TIME,
    M_SERVICE,
    M_STARTED,
    M_STARTED_BAD,
    M_WAIT_COUNT,
    M_WAIT_SUM,
    M_WASTED,
    N_BUSY,
    N_ERRORS,
    N_SERVED,
    O_BAD,
    O_REFUSED,
    S_COMPLETED,
    WHERE_DEAD,
    WHERE_QUEUE,
    X_HIT,
    X_INSTANCE,
    X_QUERIES,
    X_SERVICE,
    X_WAIT,
    hist_add,
    inst_hist_add,
    second_of,
    timed_out,
    where_spent,
)
from oncallsim.model.request.queues import (
    CQ_DROPPING,
    CQ_FIRST_ABOVE,
    I_CODEL_PRESET,
    I_DEADLINES,
    I_DISCIPLINE,
    I_PRIORITY,
    Q_HEAD,
    Q_LEN,
    base_queue,
    dequeue,
    pooled_queue,
    sheddable,
    waiting,
)
from oncallsim.model.request.stream import MODE_PIPELINE
from oncallsim.model.request.workers import I_BUSY, I_ENABLED, I_NBAD, free_add

__all__ = ["RELEASE", "complete", "query", "read_or_abandon", "release", "start", "take_next", "warm_query"]

_INF = math.inf
# what a worker's stage returns when the worker is done with its request: the loop then calls ``release``, in
# one place (its compiled body, with the next request's start, exists once); every event time is ≥ 0
RELEASE = -1.0


@inline_step
def start(
    p: Any,
    w: Any,
    k: int,
    x: float,
    arrival: float,
    obj: int,
    tag: int,
    client: int,
    call: int,
    low: bool,
    mode: int,
    app_s: float,
    q_mean: float,
) -> float:
    """Worker ``k`` takes a request (an attempt of ``call``, −1 none; ``low``: of the sheddable class) at time
    ``x``: the cache lookup, its reads, its CPU phase. Returns when the CPU phase ends (the caller schedules it)."""
    m = w.meter.measures
    g = w.gen
    w.workers.w_busy[k] = True
    w.workers.ints[I_BUSY] += 1
    w.workers.w_arrival[k] = arrival
    w.workers.w_start[k] = x
    w.workers.w_object[k] = obj
    w.workers.w_tag[k] = tag
    w.workers.w_client[k] = client
    w.workers.w_call[k] = call
    w.workers.w_low[k] = low
    instance = w.workers.w_instance[k]
    if call >= 0 and w.calls.c_sent[call] == arrival:  # its client learns where it is served (a timeout's cause)
        w.calls.c_started[call] = x
        w.calls.c_inst[call] = instance
    w.workers.inst_busy[instance] += 1
    health = w.fleet.health[instance]
    if health != UP:  # a dead instance: refused at once, or held until the client gives up (no work done)
        return _dead_start(p, w, k, x, arrival, tag, health)
    bad = instance < w.workers.ints[I_NBAD]
    w.workers.w_bad[k] = bad
    m[M_STARTED] += 1.0
    if bad:
        m[M_STARTED_BAD] += 1.0
    wait = x - arrival
    hist_add(w.meter.wait_hist, wait)
    m[M_WAIT_SUM] += wait
    m[M_WAIT_COUNT] += 1.0
    if low:
        m[M_LOW_WAIT_SUM] += wait
        m[M_LOW_WAIT_COUNT] += 1.0
    miss = False
    queries = 0
    cpu_mean = app_s
    if mode == MODE_PIPELINE:
        m[M_LOOKUPS] += 1.0
        if w.backend.expiry[obj] > x:
            m[M_HITS] += 1.0
        else:
            miss = True
            whole = int(q_mean)
            queries = whole
            if q_mean > whole and uniform(g) < q_mean - whole:
                queries += 1
        if bad:
            cpu_mean = app_s * p[P.bad_build_cpu_factor]
    speed = w.fleet.speed[instance]
    if speed != 1.0:
        cpu_mean = cpu_mean / speed
    w.workers.w_miss[k] = miss
    w.workers.w_queries[k] = queries
    if tag >= 0:
        w.meter.samples[tag, X_WAIT] = wait * 1000.0
        w.meter.samples[tag, X_INSTANCE] = instance
        w.meter.samples[tag, X_HIT] = -1.0 if mode != MODE_PIPELINE else (0.0 if miss else 1.0)
        w.meter.samples[tag, X_QUERIES] = queries
    cpu = exponential(g, cpu_mean)
    w.cpu.acc[instance] += cpu  # the instance's CPU time, as its sampler reads it
    return x + cpu


@step
def _dead_start(p: Any, w: Any, k: int, x: float, arrival: float, tag: int, health: int) -> float:
    """Worker ``k`` of a dead instance takes a request: a refused connection ends in ``REFUSED_S``; a hung or
    unreachable instance holds it until its client gives up. Returns when the worker is done with it."""
    w.workers.w_bad[k] = False
    w.workers.w_miss[k] = False
    w.workers.w_queries[k] = 0
    if tag >= 0:
        w.meter.samples[tag, X_INSTANCE] = w.workers.w_instance[k]
        w.meter.samples[tag, X_WAIT] = (x - arrival) * 1000.0
    if health == REFUSE:
        w.workers.w_held[k] = 1
        return x + REFUSED_S
    w.workers.w_held[k] = 2
    gave_up = arrival + p[P.timeout_s]
    return gave_up if gave_up > x else x


@step
def _dead_complete(p: Any, w: Any, k: int, x: float, t0: float, mode: int, app_s: float, q_mean: float) -> float:
    """The end of a request on a dead instance: refused (an error at once), or its client gave up (a timeout,
    where = dead instance). A request that was in service when its instance hung waits for its client too.
    Returns ``RELEASE`` when the worker is done with it, else when its client gives up."""
    arrival = w.workers.w_arrival[k]
    timeout = p[P.timeout_s]
    instance = w.workers.w_instance[k]
    tag = w.workers.w_tag[k]
    client = w.workers.w_client[k]
    call = w.workers.w_call[k]
    if w.workers.w_held[k] == 1:
        reply(w.views, w.breaker, w.calls, client, call, arrival, instance, x, REFUSED_S, A_REFUSED, 0.0)
        failed(
            w.calls, w.meter, w.fleet, w.gen, call, arrival, O_REFUSED, REFUSED_S, False, second_of(t0, x), tag, x, t0
        )
        w.meter.instances[N_ERRORS, instance] += 1.0
        inst_hist_add(w.meter, instance, REFUSED_S)
    else:
        if x < arrival + timeout:  # hung in service: the client still waits
            return arrival + timeout
        if arrival + timeout > t0 or call >= 0:
            if call < 0:  # a call's timer counted its timeout
                timed_out(
                    w.meter, WHERE_DEAD, timeout, w.workers.w_start[k] > arrival, second_of(t0, arrival + timeout), tag
                )
            w.meter.instances[N_ERRORS, instance] += 1.0
            inst_hist_add(w.meter, instance, timeout)
        reply(w.views, w.breaker, w.calls, client, call, arrival, instance, x, timeout, A_TIMEOUT, 0.0)
    w.workers.w_held[k] = 0
    return RELEASE


@inline_step
def query(backend: Any, gen: Any, meter: Any, x: float, part_s: float) -> float:
    """A database read arriving now at a random partition: returns when it completes (FIFO, Lindley)."""
    j = uniform_int(gen, len(backend.db_free))
    begin = backend.db_free[j] if backend.db_free[j] > x else x
    d = exponential(gen, part_s)
    done = begin + d
    backend.db_free[j] = done
    m = meter.measures
    m[M_QUERIES] += 1.0
    m[M_QUERY_TIME] += done - x
    m[M_DB_BUSY] += d
    return done


@inline_step
def take_next(p: Any, w: Any, k: int, x: float, t0: float, mode: int, app_s: float, q_mean: float) -> float:
    """A worker that just finished: the head of the queue if any (returns when its CPU phase ends), else it
    joins the free workers (returns ∞)."""
    own = w.workers.w_instance[k]
    pooled = pooled_queue(w.queues)
    timeout = p[P.timeout_s]
    serving = w.workers.ints[I_ENABLED] // int(p[P.workers_per_instance])
    rotating = in_pool(w.registry, w.fleet, own, serving)
    while True:  # its instance's queue first, then the balancer's (if in its rotation); the discipline may drop
        qid = own if (waiting(w.queues, own) > 0 or not rotating) else pooled
        slot = _take_class(w, qid, x, t0)
        if slot < 0 and qid == own and rotating and waiting(w.queues, pooled) > 0:
            qid = pooled
            slot = _take_class(w, qid, x, t0)
        if slot < 0:
            if rotating or w.views.ints[I_BALANCER] != POOLED:
                free_add(w.workers, k)
            return _INF
        arrival, obj, tag, client = (
            w.queues.s_arrival[slot],
            w.queues.s_object[slot],
            w.queues.s_tag[slot],
            w.queues.s_client[slot],
        )
        call = w.queues.s_call[slot]
        low = w.queues.s_low[slot]
        over_cap = x >= arrival + server_cap(w.queues, timeout)  # the server's own cap on its work
        gone = x >= arrival + timeout
        if over_cap and not gone:  # 504 at once, no work
            drop(w.views, w.breaker, w.calls, w.meter, w.fleet, w.gen, qid, client, tag, x, t0, call, arrival)
            continue
        if gone and (over_cap or w.queues.ints[I_DEADLINES] != 0):  # its client gave up: no work is started
            where = WHERE_QUEUE if qid == pooled else where_spent(w.fleet, own, 1.0, 0.0)
            _abandoned(w, own, client, call, arrival, tag, x, t0, timeout, where)
            continue
        return start(p, w, k, x, arrival, obj, tag, client, call, low, mode, app_s, q_mean)


@inline_step
def _take_class(w: Any, q: int, x: float, t0: float) -> int:
    """The request a free worker takes from queue ``q``: under strict priority a critical one while any waits
    (after its discipline's drops), else a sheddable one; without priority the queue's one line."""
    slot = _take(w, q, x, t0)
    if slot < 0 and w.queues.ints[I_PRIORITY] != NO_PRIORITY:
        slot = _take(w, sheddable(w.queues, q), x, t0)
    return slot


@inline_step
def _take(w: Any, qid: int, x: float, t0: float) -> int:
    """FIFO right here (the default, on every completion), and CoDel's common case (not dropping, the head
    waited less than the target: it is served and the timer resets, as ``disciplines._codel`` does); the rest in
    the disciplines' module. A call with the world costs a copy of its arrays' descriptors: the hot path avoids
    the big one."""
    kind = w.queues.ints[I_DISCIPLINE]
    if w.queues.qs[Q_LEN, qid] == 0:
        if kind == CODEL and w.queues.ints[I_CODEL_PRESET] != KRATOS:  # RFC 8289: an empty queue resets CoDel
            w.queues.cq[CQ_FIRST_ABOVE, qid] = 0.0
            w.queues.cq[CQ_DROPPING, qid] = 0.0
        return -1
    if kind == FIFO:
        return dequeue(w.queues, qid)
    if kind == CODEL:
        q = base_queue(w.queues, qid)
        busy = w.workers.ints[I_BUSY] if q == pooled_queue(w.queues) else w.workers.inst_busy[q]
        if kratos_bypass(w.queues, busy, qid):  # Kratos's codel: too few outstanding to judge
            return dequeue(w.queues, qid)
        if w.queues.cq[CQ_DROPPING, qid] == 0.0 and x - w.queues.s_arrival[w.queues.qs[Q_HEAD, qid]] < codel_target(
            w.queues
        ):
            w.queues.cq[CQ_FIRST_ABOVE, qid] = 0.0
            return dequeue(w.queues, qid)
    return take(w.queues, w.views, w.breaker, w.calls, w.meter, w.fleet, w.gen, qid, x, t0)


@step
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
    w.meter.measures[M_ABANDONED] += 1.0
    if arrival + timeout > t0 and call < 0:
        timed_out(w.meter, where, timeout, True, second_of(t0, arrival + timeout), tag)
    reply(w.views, w.breaker, w.calls, client, call, arrival, instance, x, timeout, A_TIMEOUT, 0.0)


@inline_step
def complete(p: Any, w: Any, k: int, x: float, t0: float, ttl: float, mode: int, app_s: float, q_mean: float) -> float:
    """Worker ``k``'s request is answered at ``x``: store on a miss, count the outcome. Returns ``RELEASE`` (the
    worker is done with it), or when a hung instance's worker is next due."""
    if w.workers.w_held[k] != 0:
        return _dead_complete(p, w, k, x, t0, mode, app_s, q_mean)
    m = w.meter.measures
    arrival = w.workers.w_arrival[k]
    start = w.workers.w_start[k]
    tag = w.workers.w_tag[k]
    if w.workers.w_miss[k]:
        w.backend.expiry[w.workers.w_object[k]] = x + ttl
    service = x - start
    m[M_COMPLETED] += 1.0
    m[M_SERVICE] += service
    second = second_of(t0, x)
    w.meter.seconds[S_COMPLETED, second] += 1.0
    instance = w.workers.w_instance[k]
    w.meter.instances[N_SERVED, instance] += 1.0
    w.meter.instances[N_BUSY, instance] += service
    enabled = k < w.workers.ints[I_ENABLED]
    if enabled:
        m[M_BUSY] += x - (start if start > t0 else t0)
    if tag >= 0:
        w.meter.samples[tag, X_SERVICE] = service * 1000.0
    response = x - arrival
    timeout = p[P.timeout_s]
    waited = start > arrival
    call = w.workers.w_call[k]
    client = w.workers.w_client[k]
    if response > timeout:
        how = A_TIMEOUT
    elif w.workers.w_bad[k] and uniform(w.gen) < p[P.bad_build_error_rate]:
        how = A_ERROR
    else:
        how = A_OK
    if client >= 0:  # sent by a client's balancer: it hears of the answer, with the CPU the server reports (‰)
        if w.calls.ints[I_REVISION] >= 2:
            cpu = w.cpu.sample[instance]
        else:
            cpu = 1000.0 * w.workers.inst_busy[instance] / p[P.workers_per_instance]
        rtt = response if response < timeout else timeout
        reply(w.views, w.breaker, w.calls, client, call, arrival, instance, x, rtt, how, cpu)
    if how == A_TIMEOUT:
        m[M_WASTED] += service
        if arrival + timeout > t0 or call >= 0:  # else counted by an earlier minute's end
            if call < 0:  # a call's timer counted its timeout
                where = where_spent(w.fleet, instance, start - arrival, service)
                timed_out(w.meter, where, timeout, waited, second_of(t0, arrival + timeout), tag)
            w.meter.instances[N_ERRORS, instance] += 1.0
            inst_hist_add(w.meter, instance, timeout)
    elif how == A_ERROR:
        failed(w.calls, w.meter, w.fleet, w.gen, call, arrival, O_BAD, response, waited, second, tag, x, t0)
        w.meter.instances[N_ERRORS, instance] += 1.0
        inst_hist_add(w.meter, instance, response)
    else:
        if succeeded(w.calls, w.meter, call, arrival, response, waited, second, tag, x, t0) and w.workers.w_low[k]:
            m[M_LOW_OK] += 1.0
        inst_hist_add(w.meter, instance, response)
    if w.limiter.ints[I_LIMITER] != 0:
        completed(w.limiter, instance, x, response, service)
    if w.limiter.ints[I_CONTROLLER] != 0:
        observed(w.limiter, instance, response, start - arrival, how != A_OK)
    return RELEASE


@inline_step
def release(p: Any, w: Any, k: int, x: float, t0: float, mode: int, app_s: float, q_mean: float) -> float:
    """Worker ``k`` is done with its request: it takes the next one (returns when that one's CPU phase ends)
    or joins the free workers (∞); an instance no longer serving takes nothing new."""
    w.workers.inst_busy[w.workers.w_instance[k]] -= 1
    w.workers.w_busy[k] = False
    w.workers.ints[I_BUSY] -= 1
    w.workers.w_tag[k] = -1
    if k < w.workers.ints[I_ENABLED]:
        return take_next(p, w, k, x, t0, mode, app_s, q_mean)
    return _INF


@inline_step
def read_or_abandon(
    p: Any, w: Any, k: int, x: float, t0: float, part_s: float, mode: int, app_s: float, q_mean: float
) -> float:
    """Worker ``k``'s next database read (returns when it completes), unless its deadline has passed (deadline
    propagation): then the work stops here, wasted, and the worker is done with it (``RELEASE``)."""
    arrival = w.workers.w_arrival[k]
    timeout = p[P.timeout_s]
    over_cap = x >= arrival + server_cap(w.queues, timeout)  # the server's own cap on its work
    gone = x >= arrival + timeout  # its client gave up
    capped = over_cap and not gone  # it answers 504 now
    if capped or (gone and (over_cap or w.queues.ints[I_DEADLINES] != 0)):
        start = w.workers.w_start[k]
        w.meter.measures[M_WASTED] += x - start
        w.meter.measures[M_CUT_SHORT] += x - start  # work, though no answer: the share's denominator counts it
        if k < w.workers.ints[I_ENABLED]:
            w.meter.measures[M_BUSY] += x - (start if start > t0 else t0)
        instance = w.workers.w_instance[k]
        client, call, tag = w.workers.w_client[k], w.workers.w_call[k], w.workers.w_tag[k]
        if capped:
            drop(w.views, w.breaker, w.calls, w.meter, w.fleet, w.gen, instance, client, tag, x, t0, call, arrival)
        else:
            where = where_spent(w.fleet, instance, start - arrival, x - start)
            _abandoned(w, instance, client, call, arrival, tag, x, t0, timeout, where)
        return RELEASE
    w.workers.w_queries[k] -= 1
    return query(w.backend, w.gen, w.meter, x, part_s)


@step
def warm_query(
    p: Any, backend: Any, workers: Any, gen: Any, meter: Any, x: float, part_s: float, workers_total: int
) -> None:
    """The warm-up job reads the next object of the hot set; it stores it when the read completes."""
    if backend.ints[I_WFREE] == 0:
        return  # the job's readers are all busy: it skips this read
    backend.ints[I_WFREE] -= 1
    slot = backend.warm_free[backend.ints[I_WFREE]]
    obj = backend.ints[I_WCURSOR]
    backend.ints[I_WCURSOR] = (obj + 1) % len(backend.expiry)
    backend.warm_object[slot] = obj
    push(workers, query(backend, gen, meter, x, part_s), workers_total + slot)

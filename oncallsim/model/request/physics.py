"""One minute at request level: every request's path, as a compiled discrete-event loop (REQUESTS.md).

arrivals → admission (shedding) → balancer (pooled: one FIFO queue, a random free worker of any serving
instance) → instance worker (CPU, exponential) → cache (per-object expiry) → database (partitions, FIFO,
exponential) → response (timeout, bad-build errors).

The loop merges five time-ordered sources: the minute's arrivals (sorted), the heap of phase ends (one per
busy worker: CPU done or a database read done; one per warm-up query in flight), the warm-up job's Poisson
stream, and with retries the clients' deadlines and backoffs (calls.py). Database partitions are FIFO single
servers, so a read's completion is known when it arrives (Lindley's recursion), because reads reach a partition
in time order.

A request's outcome is counted in the minute it becomes known, as a monitoring system counts it: when the
response is sent, or when the client gives up (arrival + timeout) if that comes first. Work on a request
whose client has given up continues (wasted work). The measured record fields and the extras are written
at the minute's end; the SLO, the page, the cost and the fleet then run on them (``stages.close_minute``).

The stages live by concept: ``routing`` (a request at the balancer), ``service`` (at a worker), ``calls`` (a
client's call and its retries), ``edges`` (the minute's start and end); this module is the loop.
"""

from __future__ import annotations

import math
from typing import Any

from oncallsim.model.fields import ST
from oncallsim.model.kernel import P, step, unmanaged
from oncallsim.model.request.backend import I_WFREE
from oncallsim.model.request.balancers import I_BALANCER, POOLED, R_NEXT_VIEW
from oncallsim.model.request.calls import (
    deadline_due,
    retry_due,
    take_deadline,
)
from oncallsim.model.request.cpu import R_NEXT_TICK, sample
from oncallsim.model.request.edges import close_minute, fill_cache, open_minute, sorted_arrivals
from oncallsim.model.request.generator import exponential
from oncallsim.model.request.heap import pop, replace_top
from oncallsim.model.request.instances import refresh_views, sync_free
from oncallsim.model.request.measure import EXTRA_FIELDS, record_minute
from oncallsim.model.request.outcomes import (
    S_IN_FLIGHT,
    S_QUEUE,
    quantile,
)
from oncallsim.model.request.queues import I_QLEN
from oncallsim.model.request.routing import arrive, retry, route
from oncallsim.model.request.service import RELEASE, complete, read_or_abandon, release, warm_query
from oncallsim.model.request.stream import (
    MODE_PIPELINE,
    MODE_QUEUE_ONLY,
    R_CURSOR,
    R_NEXT_STREAM,
    R_NEXT_WARM,
    R_SECOND,
)
from oncallsim.model.request.workers import I_BUSY, I_ENABLED, I_HEAP

__all__ = [
    "CLOSE_PART",
    "EXTRA_FIELDS",
    "MODE_PIPELINE",
    "MODE_QUEUE_ONLY",
    "OPEN_PART",
    "RUN_PART",
    "WHOLE_MINUTE",
    "close_request_minute",
    "fill_cache",
    "open_request_minute",
    "quantile",
    "request_minute_part",
    "run_request_minute",
]

_INF = math.inf


# the parts of a minute ``request_minute_part`` plays: its opening, its events (up to ``until``), its close
OPEN_PART, RUN_PART, CLOSE_PART = 1, 2, 4
WHOLE_MINUTE = OPEN_PART | RUN_PART | CLOSE_PART


@unmanaged
def request_minute_part(
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
    until: float,
    parts: int,
) -> None:
    """Minute ``t`` (seconds 60t to 60t + 60 of the run) request by request, or the ``parts`` of it asked for:
    the whole minute in one call (``WHOLE_MINUTE``, ``until`` its end), or — a plug-in controller's run — its
    opening, its events in segments between the controller's ticks, its close (``drive.run_minute``).

    Reads the settings and the fleet from ``st`` (as the minute model does), ``count`` arrivals uniform in the
    minute (pipeline mode) or a Poisson stream of ``rate`` per second (queue-only mode); writes the measured
    fields of ``rec`` and the extras ``ext``. ``sample_every`` > 0 keeps every n-th arrival's path in
    ``w.meter.samples`` (the zoom). One compiled entry for every part: each entry numba builds costs its Python
    and C wrappers, and one holding another's event loop had LLVM compile the loop twice (the first start's CPU).
    """
    if parts & OPEN_PART:
        open_request_minute(p, w, t, flags, st, mode, count, rate)
    if parts & RUN_PART:
        run_request_minute(p, w, t, st, mode, count, rate, sample_every, until)
    if parts & CLOSE_PART:
        close_request_minute(p, w, t, st, rec, ext, mode, sample_every)


@step
def open_request_minute(p: Any, w: Any, t: int, flags: int, st: Any, mode: int, count: int, rate: float) -> None:
    """The minute's opening: the edges' (``edges.open_minute``), its arrivals drawn, the warm-up job's first read,
    the loop's place (the next arrival, the next warm-up read, the next second sampled) in ``w.stream``."""
    t0 = 60.0 * t
    recommendations = st[ST.recommendations] != 0.0
    app_s = (p[P.app_time_ms] + (p[P.feature_app_time_ms] if recommendations else 0.0)) / 1000.0
    q_mean = p[P.queries_per_request] + (p[P.feature_queries_per_request] if recommendations else 0.0)
    open_minute(p, w, st, t0, flags, mode, app_s, q_mean)
    if mode == MODE_PIPELINE:
        sorted_arrivals(w.stream, w.gen, count, t0)
    next_warm = _INF
    warm_rate = p[P.warmup_db_qps]
    if mode == MODE_PIPELINE and st[ST.warmup_left] > 0 and warm_rate > 0:
        next_warm = t0 + exponential(w.gen, 1.0 / warm_rate)
    stream_gap = 1.0 / rate if rate > 0 else _INF
    if mode == MODE_QUEUE_ONLY and w.stream.reals[R_NEXT_STREAM] < t0:
        w.stream.reals[R_NEXT_STREAM] = t0 + exponential(w.gen, stream_gap)
    w.stream.reals[R_CURSOR] = 0.0
    w.stream.reals[R_NEXT_WARM] = next_warm
    w.stream.reals[R_SECOND] = 0.0


@step
def run_request_minute(
    p: Any, w: Any, t: int, st: Any, mode: int, count: int, rate: float, sample_every: int, until: float
) -> None:
    """The minute's events before ``until`` (at most the minute's end), from where the last call stopped."""
    t0 = 60.0 * t
    t1 = t0 + 60.0
    stop = until if until < t1 else t1
    recommendations = st[ST.recommendations] != 0.0
    app_s = (p[P.app_time_ms] + (p[P.feature_app_time_ms] if recommendations else 0.0)) / 1000.0
    q_mean = p[P.queries_per_request] + (p[P.feature_queries_per_request] if recommendations else 0.0)
    ttl = st[ST.ttl_s]
    part_s = len(w.backend.db_free) / p[P.db_capacity_qps] * st[ST.db_slowdown]  # a brownout slows every read
    workers_total = len(w.workers.w_busy)
    arrivals = w.stream.arrivals
    i = int(w.stream.reals[R_CURSOR])
    next_warm = w.stream.reals[R_NEXT_WARM]
    warm_rate = p[P.warmup_db_qps]
    stream_gap = 1.0 / rate if rate > 0 else _INF
    sec = int(w.stream.reals[R_SECOND])
    sec_next = t0 + sec + 1.0
    while True:
        if mode == MODE_PIPELINE:
            ta = arrivals[i] if i < count else _INF
        else:
            ta = w.stream.reals[R_NEXT_STREAM] if rate > 0 else _INF
        te = w.workers.heap_time[0] if w.workers.ints[I_HEAP] > 0 else _INF
        x = ta if ta < te else te
        if next_warm < x:
            x = next_warm
        td = deadline_due(w.calls)  # the clients' timers (calls.py): ∞ without retries
        tr = retry_due(w.calls)
        if td < x:
            x = td
        if tr < x:
            x = tr
        if x >= stop:
            break
        if x >= w.cpu.reals[R_NEXT_TICK]:  # the instances' CPU samples
            sample(
                w.cpu,
                x,
                w.workers.ints[I_ENABLED] // int(p[P.workers_per_instance]),
                int(p[P.workers_per_instance]),
            )
        if x >= w.views.reals[R_NEXT_VIEW]:  # a balancer learns of a registry change
            refresh_views(
                w.views, w.registry, w.fleet, w.conns, x, w.workers.ints[I_ENABLED] // int(p[P.workers_per_instance])
            )
            if w.views.ints[I_BALANCER] == POOLED:
                sync_free(w.workers, w.registry, w.fleet, int(p[P.workers_per_instance]))
        while x >= sec_next and sec < 60:
            w.meter.seconds[S_QUEUE, sec] = w.queues.ints[I_QLEN]
            w.meter.seconds[S_IN_FLIGHT, sec] = w.workers.ints[I_BUSY]
            sec += 1
            sec_next = t0 + sec + 1.0
        routing = False  # an arrival or a retry goes on to the balancer (one place, below)
        obj = 0
        tag = -1
        call = -1
        low = False
        if x == te:
            ident = w.workers.heap_id[0]
            if ident >= workers_total:  # a warm-up read completed: the object is stored
                pop(w.workers)
                slot = ident - workers_total
                obj = w.backend.warm_object[slot]
                if w.backend.expiry[obj] < x + ttl:
                    w.backend.expiry[obj] = x + ttl
                w.backend.warm_free[w.backend.ints[I_WFREE]] = slot
                w.backend.ints[I_WFREE] += 1
            else:
                if w.workers.w_queries[ident] > 0:
                    then = read_or_abandon(p, w, ident, x, t0, part_s, mode, app_s, q_mean)
                else:
                    then = complete(p, w, ident, x, t0, ttl, mode, app_s, q_mean)
                if then == RELEASE:  # done with its request: the worker takes the next one, or waits
                    then = release(p, w, ident, x, t0, mode, app_s, q_mean)
                if then < _INF:  # the same worker's next phase: it replaces the earliest
                    replace_top(w.workers, then, ident)
                else:
                    pop(w.workers)
        elif x == ta:
            if mode == MODE_PIPELINE:
                i += 1
            else:
                w.stream.reals[R_NEXT_STREAM] = x + exponential(w.gen, stream_gap)
            routing, obj, tag, call, low = arrive(p, w, st, x, t0, mode, sample_every)
        elif x == next_warm:
            warm_query(p, w.backend, w.workers, w.gen, w.meter, x, part_s, workers_total)
            next_warm = x + exponential(w.gen, 1.0 / warm_rate)
        elif x == td:
            take_deadline(p, w.calls, w.views, w.breaker, w.meter, w.fleet, w.gen, x, t0)
        else:
            call = retry(p, w, x)
            obj = w.calls.c_object[call]
            tag = w.calls.c_tag[call]
            low = w.calls.c_low[call]  # a retry keeps its request's class
            routing = True
        if routing:
            route(p, w, x, t0, obj, tag, call, low, mode, app_s, q_mean)
    w.stream.reals[R_CURSOR] = i
    w.stream.reals[R_NEXT_WARM] = next_warm
    w.stream.reals[R_SECOND] = sec


@step
def close_request_minute(p: Any, w: Any, t: int, st: Any, rec: Any, ext: Any, mode: int, sample_every: int) -> None:
    """The minute's close: its last seconds sampled, the edges' close, the record's fields and the extras."""
    t0 = 60.0 * t
    t1 = t0 + 60.0
    recommendations = st[ST.recommendations] != 0.0
    app_s = (p[P.app_time_ms] + (p[P.feature_app_time_ms] if recommendations else 0.0)) / 1000.0
    sec = int(w.stream.reals[R_SECOND])
    while sec < 60:
        w.meter.seconds[S_QUEUE, sec] = w.queues.ints[I_QLEN]
        w.meter.seconds[S_IN_FLIGHT, sec] = w.workers.ints[I_BUSY]
        sec += 1
    close_minute(p, w, t0, t1, sample_every)
    record_minute(p, w, st, rec, ext, mode == MODE_PIPELINE, app_s)

"""The minute's edges: its sorted arrivals, a cache in its steady state, the start (the fleet's workers and
builds, a flush, requests stranded at instances that stopped serving, queues served by workers that became
free) and the end (the timeouts of what is still waiting or in service, busy time up to the end)."""

from __future__ import annotations

import math
from typing import Any

from oncallsim.model.fields import ST
from oncallsim.model.kernel import P, step, unmanaged
from oncallsim.model.request.balancers import A_REFUSED, I_BALANCER, POOLED
from oncallsim.model.request.calls import (
    I_REVISION,
    failed,
    reply,
)
from oncallsim.model.request.generator import exponential, uniform, uniform_int
from oncallsim.model.request.heap import push
from oncallsim.model.request.instances import REFUSE, refresh_views, sync_free
from oncallsim.model.request.outcomes import (
    I_NSAMPLES,
    M_BUSY,
    M_PRESENT,
    N_BAD,
    O_OVERLOAD,
    O_REFUSED,
    WHERE_DEAD,
    WHERE_QUEUE,
    X_WAIT,
    inst_hist_add,
    second_of,
    timed_out,
    where_spent,
)
from oncallsim.model.request.queues import Q_CURSOR, Q_HEAD, Q_LEN, base_queue, dequeue, pooled_queue, waiting
from oncallsim.model.request.service import take_next
from oncallsim.model.request.stream import MODE_PIPELINE
from oncallsim.model.request.workers import I_ENABLED, I_FREE, I_NBAD, free_add, free_remove

__all__ = ["close_minute", "fill_cache", "open_minute", "sorted_arrivals"]

FLUSH = 2  # the plan's flag (stages.FLUSH): every expiry cleared at the minute's start

_INF = math.inf


@step
def sorted_arrivals(stream: Any, gen: Any, count: int, t0: float) -> None:
    """``count`` arrival times uniform on [t0, t0 + 60 s), sorted, into ``stream.arrivals``: normalized sums of
    exponential spacings (the order statistics of uniforms, without a sort)."""
    times = stream.arrivals
    total = 0.0
    for i in range(count):
        total += exponential(gen, 1.0)
        times[i] = total
    total += exponential(gen, 1.0)
    for i in range(count):
        times[i] = t0 + 60.0 * (times[i] / total)


@unmanaged
def fill_cache(backend: Any, gen: Any, present: float, ttl: float, t0: float) -> None:
    """A cache in its steady state: each object present with probability ``present``, its remaining TTL
    uniform on (0, ttl) (REQUESTS.md: the opening minute and a zoomed minute start so)."""
    for obj in range(len(backend.expiry)):
        if uniform(gen) < present:
            backend.expiry[obj] = t0 + uniform(gen) * ttl
        else:
            backend.expiry[obj] = -_INF


@step
def strand(p: Any, w: Any, t0: float, serving: int) -> None:
    """Requests waiting at instances that no longer serve, or that crashed, fail at once (their connections
    are reset)."""
    pooled = pooled_queue(w.queues)
    for column in range(w.queues.qs.shape[1]):  # each instance's lists (critical, then sheddable)
        i = base_queue(w.queues, column)
        if i == pooled or (i < serving and w.fleet.health[i] != REFUSE):
            continue
        while w.queues.qs[Q_LEN, column] > 0:
            slot = dequeue(w.queues, column)
            client = w.queues.s_client[slot]
            sent_at = w.queues.s_arrival[slot]  # its connection reset: the client hears at once
            waited = t0 - sent_at if w.calls.ints[I_REVISION] >= 2 else 0.0  # revision 1 heard it as instant
            reply(w.views, w.breaker, w.calls, client, w.queues.s_call[slot], sent_at, i, t0, waited, A_REFUSED, 0.0)
            outcome = O_OVERLOAD if i >= serving else O_REFUSED
            failed(
                w.calls,
                w.meter,
                w.fleet,
                w.gen,
                w.queues.s_call[slot],
                w.queues.s_arrival[slot],
                outcome,
                0.0,
                False,
                0,
                w.queues.s_tag[slot],
                t0,
                t0,
            )


@step
def open_minute(p: Any, w: Any, st: Any, t0: float, flags: int, mode: int, app_s: float, q_mean: float) -> None:
    """The minute's start: reset the measures, the fleet's workers and builds, a flush, the queue served
    by workers that became free (new instances)."""
    w.meter.measures[:] = 0.0
    w.meter.latency_hist[:] = 0
    w.meter.wait_hist[:] = 0
    w.meter.seconds[:, :] = 0.0
    w.meter.instances[:, :] = 0.0
    w.meter.inst_hist[:, :] = 0
    w.meter.ints[I_NSAMPLES] = 0
    serving = int(st[ST.serving])
    workers = serving * int(p[P.workers_per_instance])
    nbad = math.floor(st[ST.bad_build_share] * serving + 0.5) if mode == MODE_PIPELINE else 0
    w.workers.ints[I_ENABLED] = workers
    w.workers.ints[I_NBAD] = nbad
    for i in range(min(serving, w.meter.instances.shape[1])):
        w.meter.instances[N_BAD, i] = 1.0 if i < nbad else 0.0
    w.workers.ints[I_FREE] = 0
    for k in range(len(w.workers.w_busy)):
        w.workers.free_pos[k] = -1
    for k in range(workers):
        if not w.workers.w_busy[k]:
            free_add(w.workers, k)
    refresh_views(w.views, w.registry, w.fleet, w.conns, t0, serving)
    if w.views.ints[I_BALANCER] == POOLED:
        sync_free(w.workers, w.registry, w.fleet, int(p[P.workers_per_instance]))
    if mode == MODE_PIPELINE:
        if flags & FLUSH:
            w.backend.expiry[:] = -_INF
        present = 0
        for obj in range(len(w.backend.expiry)):
            if w.backend.expiry[obj] > t0:
                present += 1
        w.meter.measures[M_PRESENT] = present
    strand(p, w, t0, serving)
    wpi = int(p[P.workers_per_instance])
    for i in range(serving):  # an instance's free workers take its own queue first
        for k in range(i * wpi, (i + 1) * wpi):
            if waiting(w.queues, i) == 0:
                break
            if not w.workers.w_busy[k]:
                if w.workers.free_pos[k] >= 0:
                    free_remove(w.workers, k)
                push(w.workers, take_next(p, w, k, t0, t0, mode, app_s, q_mean), k)
    while w.workers.ints[I_FREE] > 0 and waiting(w.queues, pooled_queue(w.queues)) > 0:
        k = w.workers.free[uniform_int(w.gen, w.workers.ints[I_FREE])]
        free_remove(w.workers, k)
        push(w.workers, take_next(p, w, k, t0, t0, mode, app_s, q_mean), k)


@step
def close_minute(p: Any, w: Any, t0: float, t1: float, sample_every: int) -> None:
    """The minute's end: requests whose client gave up during it while still waiting or being served
    count as timeouts now (a call's timer counted its own); busy time up to the end counts toward
    utilization."""
    timeout = p[P.timeout_s]
    qs = w.queues.qs
    pooled = pooled_queue(w.queues)
    for column in range(qs.shape[1]):  # each list in arrival order, from the first not counted before
        qid = base_queue(w.queues, column)
        slot = qs[Q_CURSOR, column]
        where = WHERE_QUEUE if qid == pooled else where_spent(w.fleet, qid, 1.0, 0.0)
        while slot >= 0:
            gave_up = w.queues.s_arrival[slot] + timeout
            if gave_up > t1:
                break
            if w.queues.s_call[slot] >= 0:
                slot = w.queues.s_next[slot]
                continue
            tag = w.queues.s_tag[slot]
            if tag >= 0:  # still waiting when its client gave up: it waited at least the timeout
                w.meter.samples[tag, X_WAIT] = timeout * 1000.0
            timed_out(w.meter, where, timeout, True, second_of(t0, gave_up), tag)
            if qid != pooled:
                inst_hist_add(w.meter, qid, timeout)
            slot = w.queues.s_next[slot]
        qs[Q_CURSOR, column] = slot
    enabled = w.workers.ints[I_ENABLED]
    for k in range(len(w.workers.w_busy)):
        if not w.workers.w_busy[k]:
            continue
        gave_up = w.workers.w_arrival[k] + timeout
        if t0 < gave_up <= t1 and w.workers.w_call[k] < 0:
            start = w.workers.w_start[k]
            where = WHERE_DEAD
            if w.workers.w_held[k] == 0:
                where = where_spent(w.fleet, w.workers.w_instance[k], start - w.workers.w_arrival[k], gave_up - start)
            timed_out(
                w.meter, where, timeout, start > w.workers.w_arrival[k], second_of(t0, gave_up), w.workers.w_tag[k]
            )
            inst_hist_add(w.meter, w.workers.w_instance[k], timeout)
        if k < enabled and w.workers.w_held[k] == 0:  # a dead instance's held connections are no work
            start = w.workers.w_start[k]
            w.meter.measures[M_BUSY] += t1 - (start if start > t0 else t0)
    if sample_every > 0:  # a sample belongs to its minute: forget the tags of what is still in flight
        for k in range(len(w.workers.w_tag)):
            w.workers.w_tag[k] = -1
        for qid in range(qs.shape[1]):
            slot = qs[Q_HEAD, qid]
            while slot >= 0:
                w.queues.s_tag[slot] = -1
                slot = w.queues.s_next[slot]
        for call in range(len(w.calls.c_tag)):
            w.calls.c_tag[call] = -1

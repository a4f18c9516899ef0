"""A request at the balancer: admission (shedding), the client's call when it may retry, and the route to a
worker — a free one, a queue, or an error at once (overload, a refused connection, the limiter, a full queue,
the client's own throttling)."""

from __future__ import annotations

import math
from typing import Any

from oncallsim.model.fields import ST
from oncallsim.model.kernel import P, inline_step, unmanaged
from oncallsim.model.request.balancers import POOLED, answered, choose, client_of, instance_for, picked
from oncallsim.model.request.calls import (
    failed,
    open_call,
    sent,
    take_retry,
)
from oncallsim.model.request.disciplines import drop, full
from oncallsim.model.request.generator import uniform, uniform_int
from oncallsim.model.request.heap import push
from oncallsim.model.request.limiter import limited
from oncallsim.model.request.outcomes import (
    inst_hist_add,
    second_of,
)
from oncallsim.model.request.queues import enqueue, room
from oncallsim.model.request.service import start
from oncallsim.model.request.throttle import throttled
from oncallsim.model.request.workers import free_remove
from oncallsim.model.request.world import (
    I_BALANCER,
    I_ENABLED,
    I_FREE,
    I_LIMITER,
    I_NSAMPLES,
    I_QLEN,
    I_QUEUE_LIMIT,
    I_RETRIES,
    I_SEQ,
    I_THROTTLE,
    M_ADMITTED,
    M_ARRIVED,
    M_MAX_QUEUE,
    M_SHED,
    MODE_PIPELINE,
    N_ERRORS,
    N_LIMITED,
    O_LIMITED,
    O_OVERLOAD,
    O_PENDING,
    O_REFUSED,
    O_SHED,
    O_THROTTLED,
    REFUSE,
    REFUSED_S,
    S_ARRIVALS,
    X_ARRIVAL,
    X_HIT,
    X_INSTANCE,
    X_LOW,
    X_OUTCOME,
)

__all__ = ["arrive", "retry"]

_INF = math.inf


@inline_step
def arrive(
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
def retry(p: Any, w: Any, x: float, t0: float, mode: int, app_s: float, q_mean: float) -> None:
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
        push(w, start(p, w, k, x, x, obj, tag, -1, call, mode, app_s, q_mean), k)
    elif w.ints[I_QUEUE_LIMIT] > 0 and full(w, w.qs.shape[1] - 1):
        drop(w, w.qs.shape[1] - 1, -1, tag, x, t0, call, x)
    elif room(w) > 0:
        enqueue(w, w.qs.shape[1] - 1, x, obj, tag, -1, call)
        if w.ints[I_QLEN] > w.measures[M_MAX_QUEUE]:
            w.measures[M_MAX_QUEUE] = w.ints[I_QLEN]
    else:
        failed(w, call, x, O_OVERLOAD, 0.0, False, second, tag, x, t0)


@inline_step
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
            push(w, start(p, w, k, x, x, obj, tag, client, call, mode, app_s, q_mean), k)
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

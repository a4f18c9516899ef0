"""A request at the balancer: admission (shedding), the client's call when it may retry, and the route to a
worker — a free one, a queue, or an error at once (overload, a refused connection, the limiter, a full queue,
the client's own throttling)."""

from __future__ import annotations

import math
from typing import Any

from oncallsim.model.fields import ST
from oncallsim.model.kernel import P, inline_step, step
from oncallsim.model.request.balancers import (
    A_DROPPED,
    A_LIMITED,
    A_REFUSED,
    I_BALANCER,
    POOLED,
    answered,
    choose,
    client_of,
    instance_for,
    picked,
)
from oncallsim.model.request.breaker import I_BREAKER, rejects
from oncallsim.model.request.calls import (
    I_RETRIES,
    I_REVISION,
    failed,
    open_call,
    sent,
    take_retry,
)
from oncallsim.model.request.connections import I_REVISION as C_REVISION
from oncallsim.model.request.connections import unacknowledged
from oncallsim.model.request.disciplines import displace, drop, make_room
from oncallsim.model.request.generator import uniform, uniform_int
from oncallsim.model.request.heap import push
from oncallsim.model.request.instances import OFFLINE, REFUSE, REFUSED_S
from oncallsim.model.request.limiter import I_CONTROLLER, I_LIMITER, controller_rejects, limited, throttled
from oncallsim.model.request.outcomes import (
    I_NSAMPLES,
    I_SEQ,
    M_ADMITTED,
    M_ARRIVED,
    M_LOW_ADMITTED,
    M_MAX_QUEUE,
    M_SHED,
    N_ERRORS,
    N_LIMITED,
    O_LIMITED,
    O_OVERLOAD,
    O_PENDING,
    O_REFUSED,
    O_SHED,
    O_THROTTLED,
    S_ARRIVALS,
    X_ARRIVAL,
    X_HIT,
    X_INSTANCE,
    X_LOW,
    X_OUTCOME,
    inst_hist_add,
    second_of,
)
from oncallsim.model.request.queues import I_PRIORITY, I_QLEN, I_QUEUE_LIMIT, enqueue_as, pooled_queue, room
from oncallsim.model.request.service import start
from oncallsim.model.request.stream import MODE_PIPELINE
from oncallsim.model.request.workers import I_ENABLED, I_FREE, free_remove

__all__ = ["arrive", "retry", "route"]

_INF = math.inf


@inline_step
def arrive(
    p: Any, w: Any, st: Any, x: float, t0: float, mode: int, sample_every: int
) -> tuple[bool, int, int, int, bool]:
    """A request arrives at the balancer: its class (the low-priority share is sheddable), shedding, then (with
    retries) the client opens a call for it. Returns (admitted, object, sample tag, call, sheddable): an admitted
    request goes on to ``route`` (one place in the loop routes arrivals and retries alike, so its compiled body
    exists once). Queue-only mode draws a class only under a queue priority (its stream stays as it was)."""
    m = w.meter.measures
    g = w.gen
    seq = w.meter.ints[I_SEQ]
    w.meter.ints[I_SEQ] = seq + 1
    tag = -1
    if sample_every > 0 and seq % sample_every == 0 and w.meter.ints[I_NSAMPLES] < len(w.meter.samples):
        tag = w.meter.ints[I_NSAMPLES]
        w.meter.ints[I_NSAMPLES] = tag + 1
        w.meter.samples[tag, :] = 0.0
        w.meter.samples[tag, X_ARRIVAL] = x - t0
        w.meter.samples[tag, X_OUTCOME] = O_PENDING
        w.meter.samples[tag, X_HIT] = -1.0
        w.meter.samples[tag, X_INSTANCE] = -1.0
    m[M_ARRIVED] += 1.0
    w.meter.seconds[S_ARRIVALS, second_of(t0, x)] += 1.0
    obj = 0
    low = False
    if mode == MODE_PIPELINE:
        low = uniform(g) < p[P.low_priority_share]
        if tag >= 0:
            w.meter.samples[tag, X_LOW] = 1.0 if low else 0.0
        if low and uniform(g) < st[ST.shed_share]:
            m[M_SHED] += 1.0
            if tag >= 0:
                w.meter.samples[tag, X_OUTCOME] = O_SHED
            return False, obj, tag, -1, low
        obj = uniform_int(g, len(w.backend.expiry))
    elif w.queues.ints[I_PRIORITY] != 0:
        low = uniform(g) < p[P.low_priority_share]
        if tag >= 0:
            w.meter.samples[tag, X_LOW] = 1.0 if low else 0.0
    m[M_ADMITTED] += 1.0
    if low:
        m[M_LOW_ADMITTED] += 1.0
    call = -1
    own = w.views.ints[I_BALANCER] != POOLED  # the client balances on its own: it keeps a timer per attempt
    if w.calls.ints[I_RETRIES] > 0 or (own and w.calls.ints[I_REVISION] >= 2):  # the client opens a call
        call = open_call(w.calls, x, obj, tag, client_of(w.views, w.gen) if own else 0, low)
        sent(p, w.calls, w.meter, call, x)
    return True, obj, tag, call, low


@step
def retry(p: Any, w: Any, x: float) -> int:
    """A call's backoff ended: its next attempt (of the call's class, ``calls.c_low``) leaves for the balancer
    (``route``). Returns the call."""
    call = take_retry(w.calls)
    sent(p, w.calls, w.meter, call, x)
    return call


@inline_step
def route(
    p: Any,
    w: Any,
    x: float,
    t0: float,
    obj: int,
    tag: int,
    call: int,
    low: bool,
    mode: int,
    app_s: float,
    q_mean: float,
) -> None:
    """A request (an attempt of ``call``, −1 none; ``low``: sheddable) at the balancer: pooled, a free worker,
    else the queue; the others choose an instance (``_dispatch``). One place starts a worker and one fails the
    request."""
    second = second_of(t0, x)
    k = -1
    client = -1
    outcome = O_OVERLOAD  # what it fails with, if nothing takes it; −1: it waits, or was dropped
    response = 0.0
    pooled = pooled_queue(w.queues)
    if w.workers.ints[I_ENABLED] == 0:
        pass
    elif w.views.ints[I_BALANCER] != POOLED:
        k, client, outcome, response = _dispatch(p, w, x, t0, obj, tag, call, low)
    elif w.limiter.ints[I_CONTROLLER] != 0 and throttled(w.limiter, w.gen):  # the controller's client throttle
        outcome = O_THROTTLED
    elif w.workers.ints[I_FREE] > 0:
        k = w.workers.free[uniform_int(w.gen, w.workers.ints[I_FREE])]
        free_remove(w.workers, k)
    elif w.queues.ints[I_QUEUE_LIMIT] > 0 and not make_room(
        w.queues, w.views, w.breaker, w.calls, w.meter, w.fleet, w.gen, pooled, low, x, t0
    ):
        drop(w.views, w.breaker, w.calls, w.meter, w.fleet, w.gen, pooled, -1, tag, x, t0, call, x)
        outcome = -1
    elif room(w.queues) > 0:
        enqueue_as(w.queues, pooled, x, obj, tag, -1, call, low)
        if w.queues.ints[I_QLEN] > w.meter.measures[M_MAX_QUEUE]:
            w.meter.measures[M_MAX_QUEUE] = w.queues.ints[I_QLEN]
        outcome = -1
    if k >= 0:
        push(w.workers, start(p, w, k, x, x, obj, tag, client, call, low, mode, app_s, q_mean), k)
    elif outcome >= 0:
        failed(w.calls, w.meter, w.fleet, w.gen, call, x, outcome, response, False, second, tag, x, t0)


@inline_step
def _dispatch(
    p: Any, w: Any, x: float, t0: float, obj: int, tag: int, call: int, low: bool
) -> tuple[int, int, int, float]:
    """A balancer other than pooled: its client (the call's, else one at random) chooses an instance. Returns
    (a free worker there, −1 none; the client; the outcome the request fails with, −1 none; its response
    time): the request waits in that instance's queue when no worker is free. Under strict priority a critical
    request the limiter refuses displaces the newest sheddable one waiting there instead (``displace``)."""
    if call < 0:
        client, i = choose(w.views, w.gen, x)
    else:
        client = w.calls.c_client[call]
        i = instance_for(w.views, w.gen, client, x)
    if i < 0:  # nothing in this client's rotation
        return -1, client, O_OVERLOAD, 0.0
    if w.breaker.ints[I_BREAKER] != 0 and rejects(w.breaker, w.gen, client, x):  # the client's breaker rejects it
        return -1, client, O_THROTTLED, 0.0
    if w.limiter.ints[I_CONTROLLER] != 0 and throttled(w.limiter, w.gen):  # the controller's client throttle
        return -1, client, O_THROTTLED, 0.0
    picked(w.views, client, i)
    if call >= 0:
        w.calls.c_picked[call] = i
    if w.fleet.health[i] == OFFLINE and w.conns.ints[C_REVISION] >= 2:  # nothing comes back: TCP's clock runs
        unacknowledged(w.conns, w.views, client, i, x)
    if w.fleet.health[i] == REFUSE:  # connection refused: the client learns at once
        answered(w.views, w.breaker, client, i, x, REFUSED_S, A_REFUSED, 0.0)
        if tag >= 0:
            w.meter.samples[tag, X_INSTANCE] = i
        w.meter.instances[N_ERRORS, i] += 1.0
        inst_hist_add(w.meter, i, REFUSED_S)
        return -1, client, O_REFUSED, REFUSED_S
    if (
        w.limiter.ints[I_LIMITER] != 0
        and limited(w.limiter, w.cpu, w.workers, w.queues, i, x)
        and (low or not displace(w.queues, w.views, w.breaker, w.calls, w.meter, w.fleet, w.gen, i, x, t0))
    ):  # the instance's limiter: 429 at once
        answered(w.views, w.breaker, client, i, x, 0.0, A_LIMITED, 0.0)
        w.meter.instances[N_ERRORS, i] += 1.0
        w.meter.instances[N_LIMITED, i] += 1.0
        return -1, client, O_LIMITED, 0.0
    if w.limiter.ints[I_CONTROLLER] != 0 and controller_rejects(w.limiter, w.workers, w.queues, w.gen, i):
        answered(w.views, w.breaker, client, i, x, 0.0, A_LIMITED, 0.0)  # the controller's limit or shedding: 429
        w.meter.instances[N_ERRORS, i] += 1.0
        w.meter.instances[N_LIMITED, i] += 1.0
        return -1, client, O_LIMITED, 0.0
    wpi = int(p[P.workers_per_instance])
    for k in range(i * wpi, (i + 1) * wpi):
        if w.workers.free_pos[k] >= 0:
            free_remove(w.workers, k)
            return k, client, -1, 0.0
    if w.queues.ints[I_QUEUE_LIMIT] > 0 and not make_room(
        w.queues, w.views, w.breaker, w.calls, w.meter, w.fleet, w.gen, i, low, x, t0
    ):
        drop(w.views, w.breaker, w.calls, w.meter, w.fleet, w.gen, i, client, tag, x, t0, call, x)
        return -1, client, -1, 0.0
    if room(w.queues) > 0:
        enqueue_as(w.queues, i, x, obj, tag, client, call, low)
        if w.queues.ints[I_QLEN] > w.meter.measures[M_MAX_QUEUE]:
            w.meter.measures[M_MAX_QUEUE] = w.queues.ints[I_QLEN]
        return -1, client, -1, 0.0
    answered(w.views, w.breaker, client, i, x, 0.0, A_DROPPED, 0.0)
    return -1, client, O_OVERLOAD, 0.0

"""One minute of a chain of services, request by request: a compiled discrete-event loop (docs/graphs.md).

The minute's arrivals (uniform in the minute, sorted) reach the entry service; every other step is an event
on one heap ordered by time, then by the order pushed (an attempt reaching a service, its own work done, an
answer reaching the caller, a hedge's delay, a cancellation reaching a callee, a timer at a caller's inherited
deadline), or in a timer list (world.py: a caller's timer at its callee's timeout, a client's deadline). A
service is one queue in front of all its workers (pooled), or a queue in front of each instance's, the one an
arriving attempt joins chosen by its balancer (balancer.py); an attempt waits for a worker, does its own work,
then sends its calls stage by stage; unless the service is asynchronous its worker stays held meanwhile.

Deadlines: an entry request carries the clients' deadline (or the entry's timeout, if sooner); a call carries
its caller's deadline, or sooner its callee's per-attempt timeout from the moment it is sent. A callee refuses
work whose deadline has passed (on arrival, and again when a worker takes it), abandons it between stages once
passed; the caller gives up on the copy at that deadline and cancels it (the cancellation travels the call's
network). A failed call is retried at once while the caller's retries, its budget (the share of its calls over
the last ``BUDGET_WINDOW_S`` that may be retries) and the deadline allow. A hedging caller sends a second copy
of a try that has not answered after the callee's latency quantile (as it has seen it: the last
``HEDGE_WINDOW`` answers of first copies; the declared quantile until ``HEDGE_MIN_SEEN``); the first success
wins, the other copy is cancelled. A caller with a breaker (one per callee: Google SRE's adaptive throttling)
may reject a copy itself before it is sent: the try fails at once, as any failed try (docs/graphs.md, "Breakers,
limits and queues"); without one, nothing is drawn or counted for it.

The loop owns the order of events and what a service and a call do; each mechanism it consults keeps its own
state in its own module: heap.py (the pending events and the edges' lists), attempts.py (the pools of attempts
and calls), balancer.py (which queue an arrival joins), timers.py (the timer lists), budget.py (retry budgets),
hedging.py (when to hedge), breaker.py, limiter.py (BBR), origins.py (where a failure began), trace.py (the
zoom's spans), bins.py (latency bins).

An outcome is counted in the minute it becomes known. The semantics are those of the separate oracle
``verify/chains.py`` (plain Python, one heap), which the tests and ``oncallsim validate`` check this against.
"""

from __future__ import annotations

import math
from typing import Any

from oncallsim.model.chain.attempts import copy_alive, free_calls, maybe_free, new_attempt, new_call
from oncallsim.model.chain.balancer import choose_queue
from oncallsim.model.chain.bins import hist_bin
from oncallsim.model.chain.breaker import breaker_mark, breaker_rejects
from oncallsim.model.chain.budget import budget_allows, budget_roll
from oncallsim.model.chain.heap import push, push_net, take_event
from oncallsim.model.chain.hedging import hedge_delay, saw
from oncallsim.model.chain.layout import (
    DIST_CONSTANT,
    DIST_EXPONENTIAL,
    EF_NETWORK_S,
    EF_PROBABILITY,
    EI_CALLEE,
    EI_CALLER,
    EI_COPIES,
    SV_ASYNC,
    SV_BBR,
    SV_BREAKER_K,
    SV_DIST,
    SV_HEDGE_Q,
    SV_LIFO,
    SV_MAX_QUEUE,
    SV_MEAN_S,
    SV_MU,
    SV_RETRIES,
    SV_SIGMA,
    SV_TIMEOUT_S,
)
from oncallsim.model.chain.limiter import bbr_completed, bbr_sheds, cpu_roll
from oncallsim.model.chain.origins import blocker, unhold_stage, where
from oncallsim.model.chain.timers import add_timer, untime
from oncallsim.model.chain.trace import span_at, span_caller, span_end, span_open
from oncallsim.model.chain.world import (
    A_ALIVE,
    A_CALL,
    A_CANCELLED,
    A_FIRST,
    A_GEN,
    A_HEDGE,
    A_HELD_STAGE,
    A_HOLDS,
    A_OK,
    A_ORIGIN,
    A_PENDING,
    A_PHASE,
    A_QNEXT,
    A_QUEUE,
    A_SPAN,
    A_STAGE,
    A_SVC,
    A_TIMED,
    A_TNEXT,
    A_TPREV,
    AR_ARRIVED,
    AR_DEADLINE,
    AR_SENT,
    AR_STARTED,
    BUDGET_WINDOW_S,
    C_COPY1,
    C_COPY2,
    C_DONE,
    C_EDGE,
    C_GEN,
    C_GEN1,
    C_GEN2,
    C_HEDGED,
    C_NEXT,
    C_ORIGIN,
    C_PARENT,
    C_RETRIES,
    C_SPAN,
    C_TRY,
    CALLER_ANSWERED,
    CALLER_CANCELLED,
    CALLER_TIMED_OUT,
    CALLING,
    E_AUX,
    E_GEN,
    E_KIND,
    E_OBJ,
    EV_CANCEL,
    EV_HEDGE,
    EV_OWN_DONE,
    EV_REACH,
    EV_REPLY,
    EV_TIMER,
    FINISHED,
    I_AFREE,
    I_CFREE,
    I_COUNT,
    I_EFREE,
    I_ENTRY,
    I_HEAP,
    I_NEXT,
    I_QHEAP,
    I_QUEUED,
    I_TMOVED,
    KEY_NODE_MASK,
    KIND_FIRST,
    KIND_HEDGE,
    KIND_RETRY,
    M_ATTEMPTS,
    M_BEGUN,
    M_BUSY_S,
    M_CANCELLED,
    M_DENIED,
    M_FAILED,
    M_HEDGES,
    M_LIMITED,
    M_QUEUE_FULL,
    M_REFUSED,
    M_REJECTED,
    M_RETRIES,
    M_STARTED,
    M_SUCCEEDED,
    M_TIMEOUTS,
    M_WAIT_S,
    M_WASTED_S,
    MC_DEADLINE,
    MC_DECIDED,
    MC_ERROR,
    MC_OK,
    MC_SUM_US,
    OTEL_BOUNDS_S,
    OUT_CANCELLED,
    OUT_FAILED,
    OUT_OK,
    OUT_REFUSED,
    Q_FREE,
    Q_HEAD,
    Q_LEN,
    Q_OUT,
    Q_TAIL,
    R_DEADLINE,
    R_PROPAGATE,
    SI_BUSY,
    SI_QLEN,
    SR_CPU_ACC,
    SR_FAIL,
    SR_SINCE,
    SR_SLOW,
    T_REQUEST,
    TI_EVERY,
    TR_ARRIVED,
    TR_DEADLINE,
    TR_START,
    TR_WORKED,
    WORKING,
)
from oncallsim.model.kernel import inline_step, step, unmanaged
from oncallsim.model.request.generator import exponential, uniform

__all__ = ["DONE", "NEED_ROOM", "chain_minute", "draw_arrivals"]

DONE, NEED_ROOM = 0, 1
_INF = math.inf
_OTEL = len(OTEL_BOUNDS_S)

# --- measures ---------------------------------------------------------------------------------------------------


@step
def busy_change(w: Any, s: int, x: float, delta: int) -> None:
    w.m_svc[s, M_BUSY_S] += w.svc_i[s, SI_BUSY] * (x - w.svc_r[s, SR_SINCE])
    w.svc_r[s, SR_SINCE] = x
    w.svc_i[s, SI_BUSY] += delta


@step
def answer(w: Any, x: float, a: int, ok: bool, at_deadline: bool, origin: int) -> None:
    """An entry request's answer reaches its client (once: the first of its answer and its deadline); a failure
    is counted at ``origin``, the service where it began."""
    if w.att_i[a, A_ALIVE] == 0:
        return
    w.att_i[a, A_ALIVE] = 0
    untime(w, a)
    span_caller(w, a, CALLER_TIMED_OUT if at_deadline else CALLER_ANSWERED, x)
    latency = x - w.att_r[a, AR_ARRIVED]
    mc = w.m_client
    mc[MC_DECIDED] += 1
    if ok:
        mc[MC_OK] += 1
    elif at_deadline:
        mc[MC_DEADLINE] += 1
    else:
        mc[MC_ERROR] += 1
    if not ok:
        w.m_svc[origin, M_BEGUN] += 1
    mc[MC_SUM_US] += int(latency * 1e6 + 0.5)
    w.c_hist[hist_bin(latency)] += 1
    k = 0
    while k < _OTEL and latency >= OTEL_BOUNDS_S[k]:
        k += 1
    w.c_otel[k] += 1


# --- a service --------------------------------------------------------------------------------------------------


@step
def work_s(w: Any, s: int) -> float:
    dist = int(w.svc[s, SV_DIST])
    mean = w.svc[s, SV_MEAN_S]
    slow = w.svc_r[s, SR_SLOW]
    if dist == DIST_CONSTANT:
        return mean * slow
    if dist == DIST_EXPONENTIAL:
        return exponential(w.gen, mean) * slow
    u1 = 1.0 - uniform(w.gen)  # Box–Muller: (0, 1] so the log is finite
    u2 = uniform(w.gen)
    z = math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)
    return math.exp(w.svc[s, SV_MU] + w.svc[s, SV_SIGMA] * z) * slow


@inline_step
def done_here(w: Any, a: int) -> None:
    """The attempt is finished at its service (answered, refused, dropped or abandoned): no longer outstanding at
    the queue it was given to (balancer.py)."""
    w.att_i[a, A_PHASE] = FINISHED
    q = w.att_i[a, A_QUEUE]
    if q >= 0:
        w.queues[q, Q_OUT] -= 1


@step
def turned_away(w: Any, x: float, a: int, s: int, queued: bool) -> bool:
    """An attempt arriving, or taken from the queue (``queued``): dropped if its caller gave up, refused (an error
    answer) if its deadline has passed — a failure that began at ``s`` on arrival, and where its wait began
    (``blocker``) if it had queued. True when it was."""
    if w.att_i[a, A_CANCELLED]:
        w.m_svc[s, M_CANCELLED] += 1
        done_here(w, a)
        span_end(w, a, OUT_CANCELLED, x)
        maybe_free(w, a)
        return True
    if x >= w.att_r[a, AR_DEADLINE]:
        w.m_svc[s, M_REFUSED] += 1
        w.att_i[a, A_ORIGIN] = blocker(w, s) if queued else s
        refuse(w, x, a)
        return True
    return False


@step
def reach(w: Any, x: float, a: int) -> None:
    """An attempt reaches its service: dropped if its caller gave up, refused if its deadline has passed, shed by
    the service's limiter, refused if the queue its balancer chooses is full (``max_queue`` waiting and no worker
    idle behind it), else queued there (and taken at once if a worker is idle)."""
    s = w.att_i[a, A_SVC]
    w.att_r[a, AR_ARRIVED] = x
    span_at(w, a, TR_ARRIVED, x)
    w.m_svc[s, M_ATTEMPTS] += 1
    if turned_away(w, x, a, s, False):
        return
    if w.svc[s, SV_BBR] != 0.0 and bbr_sheds(w, s, x):
        w.m_svc[s, M_LIMITED] += 1
        w.att_i[a, A_ORIGIN] = s  # its own CPU is the bottleneck
        w.att_i[a, A_OK] = 2  # refused for overload (Kratos's 429)
        refuse(w, x, a)
        return
    q = choose_queue(w, s)
    if w.queues[q, Q_LEN] >= w.svc[s, SV_MAX_QUEUE] and w.queues[q, Q_FREE] <= 0:  # its queue is full
        w.m_svc[s, M_QUEUE_FULL] += 1
        w.att_i[a, A_ORIGIN] = blocker(w, s)  # as a wait for a worker that ran out
        w.att_i[a, A_OK] = 2  # refused for overload: an error its callers' breakers count as accepted
        refuse(w, x, a)
        return
    w.att_i[a, A_QUEUE] = q
    w.queues[q, Q_OUT] += 1
    if w.svc[s, SV_LIFO] != 0.0:  # at the head: the next a worker takes
        head = w.queues[q, Q_HEAD]
        w.att_i[a, A_QNEXT] = head
        w.queues[q, Q_HEAD] = a
        if head < 0:
            w.queues[q, Q_TAIL] = a
    else:
        tail = w.queues[q, Q_TAIL]
        if tail >= 0:
            w.att_i[tail, A_QNEXT] = a
        else:
            w.queues[q, Q_HEAD] = a
        w.queues[q, Q_TAIL] = a
        w.att_i[a, A_QNEXT] = -1
    w.queues[q, Q_LEN] += 1
    w.svc_i[s, SI_QLEN] += 1
    w.ints[I_QUEUED] += 1
    dequeue(w, x, s, q)


@step
def dequeue(w: Any, x: float, s: int, q: int) -> None:
    """Idle workers behind queue ``q`` (of service ``s``) take its attempts from its head (the oldest, or under
    LIFO the newest); one cancelled or past its deadline is dropped."""
    while w.queues[q, Q_FREE] > 0 and w.queues[q, Q_LEN] > 0:
        a = w.queues[q, Q_HEAD]
        w.queues[q, Q_HEAD] = w.att_i[a, A_QNEXT]
        if w.queues[q, Q_HEAD] < 0:
            w.queues[q, Q_TAIL] = -1
        w.queues[q, Q_LEN] -= 1
        w.svc_i[s, SI_QLEN] -= 1
        w.ints[I_QUEUED] -= 1
        if turned_away(w, x, a, s, True):
            continue
        w.queues[q, Q_FREE] -= 1
        busy_change(w, s, x, 1)
        w.att_i[a, A_HOLDS] = 1
        w.att_i[a, A_PHASE] = WORKING
        w.m_svc[s, M_STARTED] += 1
        w.m_svc[s, M_WAIT_S] += x - w.att_r[a, AR_ARRIVED]
        span_at(w, a, TR_START, x)
        w.att_r[a, AR_STARTED] = x
        work = work_s(w, s)
        if w.svc[s, SV_BBR] != 0.0:  # its CPU: the work counted whole as it starts
            cpu_roll(w, s, x)
            w.svc_r[s, SR_CPU_ACC] += work
        push(w, x + work, EV_OWN_DONE, a, w.att_i[a, A_GEN], 0)


@step
def refuse(w: Any, x: float, a: int) -> None:
    """An attempt refused before any work (its deadline passed): it holds no worker and has made no call, so
    its error answer goes back at once (a step apart from ``finish``, which may release a worker)."""
    done_here(w, a)
    span_end(w, a, OUT_REFUSED, x)
    reply_with(w, x, a, False)


@step
def reply_with(w: Any, x: float, a: int, ok: bool) -> None:
    """A finished attempt's answer goes back: to the client of an entry request, else over the call's network
    to a caller still waiting (one that gave up gets nothing: the attempt is given back)."""
    c = w.att_i[a, A_CALL]
    if c < 0:
        if x <= w.att_r[a, AR_DEADLINE]:
            origin = w.att_i[a, A_ORIGIN]
            answer(w, x, a, ok, False, origin if origin >= 0 else w.att_i[a, A_SVC])
    elif w.att_i[a, A_ALIVE]:
        if ok:  # else 0, or 2 when it was refused for overload (set before)
            w.att_i[a, A_OK] = 1
        e = w.call_i[c, C_EDGE]
        push_net(w, e, x + w.edge_f[e, EF_NETWORK_S], EV_REPLY, a, w.att_i[a, A_GEN])
    maybe_free(w, a)


@step
def release(w: Any, x: float, a: int) -> None:
    """The attempt's worker is let go; its time held is wasted work if nobody waits for the attempt any more (its
    caller gave up on it, or its client left: the answer it works towards will be thrown away)."""
    if w.att_i[a, A_HOLDS]:
        unhold_stage(w, a)
        w.att_i[a, A_HOLDS] = 0
        s = w.att_i[a, A_SVC]
        q = w.att_i[a, A_QUEUE]
        if w.att_i[a, A_ALIVE] == 0 or w.att_i[a, A_CANCELLED]:
            w.m_svc[s, M_WASTED_S] += x - w.att_r[a, AR_STARTED]
        busy_change(w, s, x, -1)
        w.queues[q, Q_FREE] += 1
        dequeue(w, x, s, q)


@step
def own_done(w: Any, x: float, a: int) -> None:
    s = w.att_i[a, A_SVC]
    if w.att_i[a, A_CANCELLED]:  # given up on while it worked: the work is wasted, the worker freed
        done_here(w, a)
        if w.svc[s, SV_BBR] != 0.0:
            bbr_completed(w, s, x, a)
        span_at(w, a, TR_WORKED, x)
        span_end(w, a, OUT_CANCELLED, x)
        release(w, x, a)
        maybe_free(w, a)
        return
    span_at(w, a, TR_WORKED, x)
    fail = w.svc_r[s, SR_FAIL]
    if fail > 0.0 and uniform(w.gen) < fail:
        w.att_i[a, A_ORIGIN] = s  # its own error
        finish(w, x, a, False)
        return
    w.att_i[a, A_PHASE] = CALLING
    if w.svc[s, SV_ASYNC] != 0.0:
        release(w, x, a)
    next_stage(w, x, a)


@step
def next_stage(w: Any, x: float, a: int) -> None:
    """The attempt's next stage of calls (each call with a probability drawn now), or its answer after the last;
    abandoned once its deadline has passed."""
    s = w.att_i[a, A_SVC]
    unhold_stage(w, a)
    while True:
        if x >= w.att_r[a, AR_DEADLINE]:
            w.att_i[a, A_ORIGIN] = s  # abandoned here, its deadline passed
            finish(w, x, a, False)
            return
        stage = w.att_i[a, A_STAGE] + 1
        w.att_i[a, A_STAGE] = stage
        g = w.stage_first[s] + stage
        if g >= w.stage_first[s + 1]:
            finish(w, x, a, True)
            return
        first = -1
        pending = 0
        for e in range(w.stage_edges[g + 1] - 1, w.stage_edges[g] - 1, -1):  # built backwards: sent in order
            copies = w.edge_i[e, EI_COPIES]
            p = w.edge_f[e, EF_PROBABILITY]
            if p >= 0.0 and not uniform(w.gen) < p:
                copies = 0
            for _ in range(copies):
                c = new_call(w, a, e)
                w.call_i[c, C_NEXT] = first
                first = c
                pending += 1
        if pending == 0:
            continue  # every call of this stage drawn away
        w.att_i[a, A_FIRST] = first
        w.att_i[a, A_PENDING] = pending
        c = first
        while c >= 0 and w.att_i[a, A_PHASE] == CALLING:
            after = w.call_i[c, C_NEXT]
            send(w, x, c, False)
            c = after
        if w.att_i[a, A_PHASE] == CALLING and w.att_i[a, A_HOLDS]:  # its worker waits on this stage
            w.att_i[a, A_HELD_STAGE] = g
            w.stage_held[g] += 1
        return


@step
def finish(w: Any, x: float, a: int, ok: bool) -> None:
    """The attempt's answer: its calls cancelled, its worker released, the answer sent back (to the client, for
    an entry request)."""
    if w.att_i[a, A_PHASE] == FINISHED:
        return
    done_here(w, a)
    s = w.att_i[a, A_SVC]
    if w.svc[s, SV_BBR] != 0.0:
        bbr_completed(w, s, x, a)
    if ok:
        w.m_svc[s, M_SUCCEEDED] += 1
        w.m_hist[s, hist_bin(x - w.att_r[a, AR_ARRIVED])] += 1
    else:
        w.m_svc[s, M_FAILED] += 1
    span_end(w, a, OUT_OK if ok else OUT_FAILED, x)
    cancel_calls(w, x, a)
    release(w, x, a)
    reply_with(w, x, a, ok)


@step
def cancel(w: Any, x: float, a: int) -> None:
    """Its caller gave up (or another copy won): a queued or travelling attempt is dropped when it is reached,
    one at work stops when its work ends, one waiting on calls stops now and cancels them."""
    if w.att_i[a, A_CANCELLED] or w.att_i[a, A_PHASE] == FINISHED:
        return
    w.att_i[a, A_CANCELLED] = 1
    phase = w.att_i[a, A_PHASE]
    if phase == CALLING:
        done_here(w, a)
        w.m_svc[w.att_i[a, A_SVC], M_CANCELLED] += 1
        if w.svc[w.att_i[a, A_SVC], SV_BBR] != 0.0:
            bbr_completed(w, w.att_i[a, A_SVC], x, a)
        span_end(w, a, OUT_CANCELLED, x)
        cancel_calls(w, x, a)
        release(w, x, a)
        maybe_free(w, a)
    elif phase == WORKING:
        w.m_svc[w.att_i[a, A_SVC], M_CANCELLED] += 1


@step
def drop_copy(w: Any, x: float, a: int, accepted: bool) -> None:
    """The caller gives up on a copy it still awaited: the cancellation travels the call's network. Its breaker
    counts it (``accepted``: cancelled because another copy won or the caller no longer needs it, which Kratos
    does not count as a failure; not: it timed out)."""
    w.att_i[a, A_ALIVE] = 0
    untime(w, a)
    span_caller(w, a, CALLER_CANCELLED, x)
    c = w.att_i[a, A_CALL]
    e = w.call_i[c, C_EDGE]
    if w.svc[w.edge_i[e, EI_CALLER], SV_BREAKER_K] > 0.0:
        breaker_mark(w, x, e, accepted)
    push_net(w, e, x + w.edge_f[e, EF_NETWORK_S], EV_CANCEL, a, w.att_i[a, A_GEN])
    maybe_free(w, a)


@step
def cancel_calls(w: Any, x: float, a: int) -> None:
    c = w.att_i[a, A_FIRST]
    while c >= 0:
        if not w.call_i[c, C_DONE]:
            w.call_i[c, C_DONE] = 1
            if copy_alive(w, w.call_i[c, C_COPY1], w.call_i[c, C_GEN1]):
                drop_copy(w, x, w.call_i[c, C_COPY1], True)
            if copy_alive(w, w.call_i[c, C_COPY2], w.call_i[c, C_GEN2]):
                drop_copy(w, x, w.call_i[c, C_COPY2], True)
        c = w.call_i[c, C_NEXT]
    free_calls(w, a)


# --- a call ---------------------------------------------------------------------------------------------------


@step
def send(w: Any, x: float, c: int, hedge: bool) -> None:
    """A try of call ``c`` (or its hedge) goes out: the callee's attempt travels the network; the caller's timer
    is set at the attempt's deadline; a hedging caller sets the hedge's delay."""
    parent = w.call_i[c, C_PARENT]
    e = w.call_i[c, C_EDGE]
    callee = w.edge_i[e, EI_CALLEE]
    caller = w.att_i[parent, A_SVC]
    while True:  # a try its caller's breaker rejects fails at once, and may be retried at once
        if x >= w.att_r[parent, AR_DEADLINE]:
            w.call_i[c, C_ORIGIN] = caller  # the caller's deadline passed
            call_failed(w, x, c)
            return
        if w.svc[caller, SV_BREAKER_K] <= 0.0 or not breaker_rejects(w, x, e):
            break
        w.m_svc[caller, M_REJECTED] += 1
        breaker_mark(w, x, e, False)  # counted, as Kratos does, so that the drop ratio rises
        if hedge:
            return  # no hedge: the first copy is still awaited
        budget_roll(w, caller, x)  # a call made, as a try that reached the callee
        w.budget[caller, int(x) % BUDGET_WINDOW_S] += 1
        w.call_i[c, C_TRY] += 1
        w.call_i[c, C_HEDGED] = 0
        w.call_i[c, C_COPY1] = -1
        w.call_i[c, C_COPY2] = -1
        w.call_i[c, C_ORIGIN] = callee  # rejected because the callee has been failing
        if not retry_allowed(w, x, c):
            call_failed(w, x, c)
            return
    deadline = w.att_r[parent, AR_DEADLINE] if w.reals[R_PROPAGATE] != 0.0 else _INF
    limit = x + w.svc[callee, SV_TIMEOUT_S]
    if limit < deadline:
        deadline = limit
    a = new_attempt(w, callee, deadline, c, 1 if hedge else 0, x)
    gen = w.att_i[a, A_GEN]
    if hedge:
        w.call_i[c, C_HEDGED] = 1
        w.call_i[c, C_COPY2] = a
        w.call_i[c, C_GEN2] = gen
        w.m_svc[caller, M_HEDGES] += 1
    else:
        budget_roll(w, caller, x)
        w.budget[caller, int(x) % BUDGET_WINDOW_S] += 1
        w.call_i[c, C_TRY] += 1
        w.call_i[c, C_HEDGED] = 0
        w.call_i[c, C_COPY1] = a
        w.call_i[c, C_GEN1] = gen
        w.call_i[c, C_COPY2] = -1
        if w.svc[caller, SV_HEDGE_Q] > 0.0:
            push(w, x + hedge_delay(w, e), EV_HEDGE, c, w.call_i[c, C_GEN], w.call_i[c, C_TRY])
    ps = w.att_i[parent, A_SPAN]
    if ps >= 0:  # a traced request's attempt: its call's copies are spans of the same request
        try_no = w.call_i[c, C_TRY]
        kind = KIND_HEDGE if hedge else KIND_RETRY if try_no > 1 else KIND_FIRST
        row = span_open(w, a, w.tr_i[ps, T_REQUEST], ps, kind, try_no, w.call_i[c, C_SPAN], x)
        if w.call_i[c, C_SPAN] < 0:
            w.call_i[c, C_SPAN] = row
    push_net(w, e, x + w.edge_f[e, EF_NETWORK_S], EV_REACH, a, gen)
    if deadline == _INF:  # no timeout and nothing propagated: the caller waits for the answer
        pass
    elif deadline == limit:  # at the callee's own timeout: in its list, in order
        add_timer(w, callee, a)
    else:  # at what is left of the caller's deadline
        push(w, deadline, EV_TIMER, a, gen, 0)


@step
def hedge(w: Any, x: float, c: int, try_no: int) -> None:
    if w.call_i[c, C_DONE] or w.call_i[c, C_TRY] != try_no or w.call_i[c, C_HEDGED]:
        return
    if not copy_alive(w, w.call_i[c, C_COPY1], w.call_i[c, C_GEN1]):
        return
    send(w, x, c, True)


@step
def timer(w: Any, x: float, a: int) -> None:
    """The caller's wait for a copy ends at its deadline: given up on, cancelled, and maybe retried."""
    if w.att_i[a, A_ALIVE] == 0:
        return
    c = w.att_i[a, A_CALL]
    w.m_svc[w.att_i[w.call_i[c, C_PARENT], A_SVC], M_TIMEOUTS] += 1
    span_caller(w, a, CALLER_TIMED_OUT, x)
    w.call_i[c, C_ORIGIN] = where(w, a)
    drop_copy(w, x, a, False)
    copy_failed(w, x, c)


@step
def client_timer(w: Any, x: float, a: int) -> None:
    """The client's deadline: no answer yet is a timeout; the request is cancelled."""
    if w.att_i[a, A_ALIVE]:
        answer(w, x, a, False, True, where(w, a))
        if w.reals[R_PROPAGATE] != 0.0:  # else the client's going reaches nobody: the entry works on
            cancel(w, x, a)
        maybe_free(w, a)


@step
def reply(w: Any, x: float, a: int) -> None:
    """A copy's answer reaches its caller: a failure may be retried; the first success settles the call, the
    other copy is cancelled, and the last call of a stage moves its caller to the next stage."""
    if w.att_i[a, A_ALIVE] == 0:
        return  # given up on already (its deadline, or another copy won)
    w.att_i[a, A_ALIVE] = 0
    untime(w, a)
    span_caller(w, a, CALLER_ANSWERED, x)
    c = w.att_i[a, A_CALL]
    callee = w.att_i[a, A_SVC]
    e = w.call_i[c, C_EDGE]
    if w.svc[w.edge_i[e, EI_CALLER], SV_BREAKER_K] > 0.0:
        breaker_mark(w, x, e, w.att_i[a, A_OK] != 0)  # a refusal for overload is accepted (a 429, as Kratos)
    if w.att_i[a, A_OK] != 1:
        origin = w.att_i[a, A_ORIGIN]
        w.call_i[c, C_ORIGIN] = origin if origin >= 0 else callee
        maybe_free(w, a)
        copy_failed(w, x, c)
        return
    if not w.att_i[a, A_HEDGE]:
        saw(w, callee, x - w.att_r[a, AR_SENT])
    maybe_free(w, a)
    if w.call_i[c, C_DONE]:
        return
    w.call_i[c, C_DONE] = 1
    for k in range(2):
        other = w.call_i[c, C_COPY1] if k == 0 else w.call_i[c, C_COPY2]
        gen = w.call_i[c, C_GEN1] if k == 0 else w.call_i[c, C_GEN2]
        if other != a and copy_alive(w, other, gen):
            if not w.att_i[other, A_HEDGE]:  # a first copy its hedge beat: seen as at least this long
                saw(w, callee, x - w.att_r[other, AR_SENT])
            drop_copy(w, x, other, True)
    parent = w.call_i[c, C_PARENT]
    if w.att_i[parent, A_PHASE] != CALLING:
        return
    w.att_i[parent, A_PENDING] -= 1
    if w.att_i[parent, A_PENDING] == 0:
        free_calls(w, parent)
        next_stage(w, x, parent)


@step
def copy_failed(w: Any, x: float, c: int) -> None:
    """A copy failed (an error answer, or no answer by its deadline): when no other copy of the try is awaited,
    the caller retries while its retries, its budget and the deadline allow, else the call fails."""
    if w.call_i[c, C_DONE]:
        return
    if copy_alive(w, w.call_i[c, C_COPY1], w.call_i[c, C_GEN1]):
        return
    if copy_alive(w, w.call_i[c, C_COPY2], w.call_i[c, C_GEN2]):
        return
    if retry_allowed(w, x, c):
        send(w, x, c, False)
        return
    call_failed(w, x, c)


@step
def retry_allowed(w: Any, x: float, c: int) -> bool:
    """Whether the failed try of call ``c`` is retried: its caller's retries, its budget and its deadline allow
    (the retry counted in the budget and the minute when it does, a refusal by the budget counted too)."""
    parent = w.call_i[c, C_PARENT]
    caller = w.att_i[parent, A_SVC]
    if w.call_i[c, C_RETRIES] < w.svc[caller, SV_RETRIES] and x < w.att_r[parent, AR_DEADLINE]:
        if budget_allows(w, caller, x):
            w.call_i[c, C_RETRIES] += 1
            w.budget[caller, BUDGET_WINDOW_S + int(x) % BUDGET_WINDOW_S] += 1
            w.m_svc[caller, M_RETRIES] += 1
            return True
        w.m_svc[caller, M_DENIED] += 1
    return False


@step
def call_failed(w: Any, x: float, c: int) -> None:
    """The call failed for good: so does its caller's attempt, the failure beginning where its last try's did."""
    w.call_i[c, C_DONE] = 1
    parent = w.call_i[c, C_PARENT]
    if w.att_i[parent, A_PHASE] == CALLING:
        origin = w.call_i[c, C_ORIGIN]
        w.att_i[parent, A_ORIGIN] = origin if origin >= 0 else w.att_i[parent, A_SVC]
        finish(w, x, parent, False)


# --- the minute -------------------------------------------------------------------------------------------------


@unmanaged
def draw_arrivals(w: Any, count: int, t0: float) -> None:
    """The minute's ``count`` arrivals, uniform in [t0, t0 + 60) and sorted: exponential spacings normalised
    (the order statistics of uniforms, without a sort)."""
    total = 0.0
    for k in range(count):
        total += exponential(w.gen, 1.0)
        w.arrivals[k] = total
    total += exponential(w.gen, 1.0)
    for k in range(count):
        w.arrivals[k] = t0 + 60.0 * w.arrivals[k] / total
    w.ints[I_COUNT] = count
    w.ints[I_NEXT] = 0


@unmanaged
def chain_minute(w: Any, t0: float, t1: float, need_a: int, need_c: int, need_h: int) -> int:
    """Run the minute's events up to ``t1`` (the arrivals drawn by ``draw_arrivals``). Returns ``NEED_ROOM``
    when the next event could need more attempts, calls or heap entries than are left (given as ``need_*``,
    apart from the queued attempts' replies): Python grows the world and calls again, and the minute goes on
    where it stopped. ``DONE`` at the minute's end, the busy time counted up to ``t1``."""
    entry = w.ints[I_ENTRY]
    client_deadline = w.reals[R_DEADLINE]
    entry_timeout = w.svc[entry, SV_TIMEOUT_S]
    if entry_timeout < client_deadline:
        client_deadline = entry_timeout
    count = w.ints[I_COUNT]
    if w.ints[I_NEXT] == 0:  # the minute's start: workers added since (the entry's fleet scaled) take the queue
        for s in range(len(w.svc_i)):
            for q in range(w.queue_first[s], w.queue_first[s + 1]):
                dequeue(w, t0, s, q)
    lists = len(w.timers)
    clients = lists - 1
    propagate = w.reals[R_PROPAGATE] != 0.0
    every = w.tr_ints[TI_EVERY]  # the zoom's sampling (0: no trace)
    w.ints[I_TMOVED] = 1
    tt = _INF
    due = -1
    while True:
        if w.ints[I_AFREE] < need_a or w.ints[I_CFREE] < need_c or w.ints[I_EFREE] < need_h + w.ints[I_QUEUED]:
            return NEED_ROOM
        i = w.ints[I_NEXT]
        ta = w.arrivals[i] if i < count else _INF
        te = _INF
        top = -1
        if w.ints[I_HEAP] > 0:
            te = w.h_time[0]
            top = w.h_key[0]
        if w.ints[I_QHEAP] > 0:
            tq = w.q_time[0]
            if tq < te or (tq == te and w.q_key[0] < top):
                te = tq
                top = w.q_key[0]
        if w.ints[I_TMOVED]:  # the earliest timer looked for again only when a list's head has changed
            w.ints[I_TMOVED] = 0
            tt = _INF
            due = -1
            for lst in range(lists):
                head = w.timers[lst, 0]
                if head < 0:
                    continue
                # a client's timer: its arrival (AR_SENT) + the deadline (its request may know none of it)
                due_at = w.att_r[head, AR_SENT] + client_deadline if lst == clients else w.att_r[head, AR_DEADLINE]
                if due_at < tt:
                    tt = due_at
                    due = lst
        if ta <= te and ta < tt:
            if ta >= t1:
                break
            w.ints[I_NEXT] = i + 1
            a = new_attempt(w, entry, ta + client_deadline if propagate else _INF, -1, 0, ta)
            if every > 0 and i % every == 0:  # a sampled request: the client's deadline, if it propagates or not
                row = span_open(w, a, i, -1, KIND_FIRST, 1, -1, ta)
                if row >= 0:
                    w.tr_r[row, TR_DEADLINE] = ta + client_deadline
            add_timer(w, clients, a)
            reach(w, ta, a)
            continue
        if tt <= te:  # a timer set when its attempt was sent: before any event of the same time pushed since
            if tt >= t1:
                break
            a = w.timers[due, 0]
            after = w.att_i[a, A_TNEXT]
            w.timers[due, 0] = after
            w.ints[I_TMOVED] = 1
            if after >= 0:
                w.att_i[after, A_TPREV] = -1
            else:
                w.timers[due, 1] = -1
            w.att_i[a, A_TIMED] = 0
            if due == clients:
                client_timer(w, tt, a)
            else:
                timer(w, tt, a)
            maybe_free(w, a)
            continue
        if te >= t1:
            break
        node = top & KEY_NODE_MASK
        kind = w.ev_i[node, E_KIND]
        obj = w.ev_i[node, E_OBJ]
        gen = w.ev_i[node, E_GEN]
        aux = w.ev_i[node, E_AUX]
        take_event(w, node)
        if kind == EV_HEDGE:
            if w.call_i[obj, C_GEN] == gen:
                hedge(w, te, obj, aux)
            continue
        if w.att_i[obj, A_GEN] != gen:
            continue  # an event for an attempt since given back
        if kind == EV_REACH:
            reach(w, te, obj)
        elif kind == EV_OWN_DONE:
            own_done(w, te, obj)
        elif kind == EV_REPLY:
            reply(w, te, obj)
        elif kind == EV_TIMER:
            timer(w, te, obj)
        else:  # EV_CANCEL
            cancel(w, te, obj)
    for s in range(len(w.svc_i)):
        busy_change(w, s, t1, 0)
    return DONE

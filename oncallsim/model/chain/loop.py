"""One minute of a chain of services, request by request: a compiled discrete-event loop (docs/graphs.md).

The minute's arrivals (uniform in the minute, sorted) reach the entry service; every other step is an event
on one heap ordered by time, then by the order pushed (an attempt reaching a service, its own work done, an
answer reaching the caller, a hedge's delay, a cancellation reaching a callee, a timer at a caller's inherited
deadline), or in a timer list (world.py: a caller's timer at its callee's timeout, a client's deadline). A
service is one FIFO queue in front of its workers; an attempt waits for a worker, does its own work, then sends
its calls stage by stage; unless the service is asynchronous its worker stays held meanwhile.

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

An outcome is counted in the minute it becomes known. The semantics are those of the separate oracle
``verify/chains.py`` (plain Python, one heap), which the tests and ``oncallsim validate`` check this against.
"""

from __future__ import annotations

import math
import struct
from typing import Any

import numpy as np
import numpy.typing as npt

from oncallsim.model.chain.layout import (
    BREAKER_BUCKETS,
    DIST_CONSTANT,
    DIST_EXPONENTIAL,
    EF_HEDGE_DECLARED_S,
    EF_NETWORK_S,
    EF_PROBABILITY,
    EI_CALLEE,
    EI_CALLER,
    EI_COPIES,
    EI_PAIR,
    SV_ASYNC,
    SV_BBR,
    SV_BREAKER_BUCKET_S,
    SV_BREAKER_K,
    SV_BREAKER_MIN,
    SV_BUDGET,
    SV_DIST,
    SV_HEDGE_Q,
    SV_LIFO,
    SV_MAX_QUEUE,
    SV_MEAN_S,
    SV_MU,
    SV_RETRIES,
    SV_SIGMA,
    SV_TIMEOUT_S,
    SV_WORKERS,
)
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
    BBR_BUCKET_S,
    BBR_BUCKETS,
    BBR_COOL_DOWN_S,
    BBR_THRESHOLD,
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
    CALLER_WAITING,
    CALLING,
    CPU_DECAY,
    CPU_TICK_S,
    E_AUX,
    E_GEN,
    E_KIND,
    E_LIST,
    E_NEXT,
    E_OBJ,
    E_SEQ,
    EV_CANCEL,
    EV_HEDGE,
    EV_OWN_DONE,
    EV_REACH,
    EV_REPLY,
    EV_TIMER,
    FINISHED,
    HEDGE_MIN_SEEN,
    HEDGE_REFRESH,
    HEDGE_WINDOW,
    HIST_BINS,
    HIST_FLOOR_S,
    HIST_RATIO,
    I_AFREE,
    I_CFREE,
    I_COUNT,
    I_EFREE,
    I_ENTRY,
    I_HEAP,
    I_NEXT,
    I_QHEAP,
    I_QUEUED,
    I_SEQ,
    I_TMOVED,
    KEY_NODE_BITS,
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
    MC_DEADLINE,
    MC_DECIDED,
    MC_ERROR,
    MC_OK,
    MC_SUM_US,
    OTEL_BOUNDS_S,
    OUT_CANCELLED,
    OUT_FAILED,
    OUT_OK,
    OUT_OPEN,
    OUT_REFUSED,
    R_DEADLINE,
    R_PROPAGATE,
    SI_BUDGET_SECOND,
    SI_BUSY,
    SI_FREE,
    SI_HEAD,
    SI_QLEN,
    SI_SEEN,
    SI_TAIL,
    SR_CPU_ACC,
    SR_CPU_EMA,
    SR_CPU_LAST,
    SR_CPU_TICK,
    SR_DROP_AT,
    SR_FAIL,
    SR_SINCE,
    SR_SLOW,
    T_CALLER,
    T_GROUP,
    T_KIND,
    T_OUTCOME,
    T_PARENT,
    T_REQUEST,
    T_SVC,
    T_TRY,
    TI_EVERY,
    TI_LOST,
    TI_ROWS,
    TR_ARRIVED,
    TR_CALLER_END,
    TR_COLUMNS,
    TR_DEADLINE,
    TR_END,
    TR_SENT,
    TR_START,
    TR_WORKED,
    WAITING,
    WORKING,
)
from oncallsim.model.kernel import inline_step, step, unmanaged
from oncallsim.model.request.generator import exponential, uniform

__all__ = ["DONE", "NEED_ROOM", "chain_minute", "draw_arrivals", "requeue_timers"]

DONE, NEED_ROOM = 0, 1
_INF = math.inf
_LOG_RATIO = math.log(HIST_RATIO)
_OTEL = len(OTEL_BOUNDS_S)
_NAN = math.nan

# --- the events: a heap ordered by (time, order pushed), and the edges' lists (world.py) ------------------------


@inline_step
def heap_up(ht: Any, hk: Any, i: int, time: float, key: int) -> None:
    """Put the entry (time, key) in the hole at ``i`` of the heap ``ht``, ``hk``, moving it up past the later
    entries above."""
    while i > 0:
        parent = (i - 1) >> 1
        pt = ht[parent]
        if pt < time or (pt == time and hk[parent] < key):
            break
        ht[i] = pt
        hk[i] = hk[parent]
        i = parent
    ht[i] = time
    hk[i] = key


@inline_step
def heap_down(ht: Any, hk: Any, n: int, time: float, key: int) -> None:
    """Put the entry (time, key) at the top of the heap's ``n`` entries, moving it down past the earlier ones."""
    i = 0
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n:
            t1 = ht[c]
            t2 = ht[c + 1]
            if t2 == t1:  # rare: by the order pushed
                c += int(hk[c + 1] < hk[c])
            else:  # without a branch: which child is earlier is a coin toss, and a mispredicted branch costly
                c += int(t2 < t1)
        ct = ht[c]
        ck = hk[c]
        if time < ct or (time == ct and key < ck):
            break
        ht[i] = ct
        hk[i] = ck
        i = c
    ht[i] = time
    hk[i] = key


@inline_step
def new_event(w: Any, time: float, kind: int, obj: int, gen: int, aux: int) -> int:
    """An event node, numbered in the order pushed."""
    seq = w.ints[I_SEQ]
    w.ints[I_SEQ] = seq + 1
    n = w.ints[I_EFREE] - 1
    w.ints[I_EFREE] = n
    node = w.ev_free[n]
    ev = w.ev_i
    ev[node, E_KIND] = kind
    ev[node, E_OBJ] = obj
    ev[node, E_GEN] = gen
    ev[node, E_AUX] = aux
    ev[node, E_SEQ] = seq
    ev[node, E_NEXT] = -1
    w.ev_t[node] = time
    return node


@inline_step
def node_key(w: Any, node: int) -> int:
    return (w.ev_i[node, E_SEQ] << KEY_NODE_BITS) | node


@inline_step
def push(w: Any, time: float, kind: int, obj: int, gen: int, aux: int) -> None:
    """An event on the heap by itself."""
    node = new_event(w, time, kind, obj, gen, aux)
    w.ev_i[node, E_LIST] = -1
    i = w.ints[I_HEAP]
    w.ints[I_HEAP] = i + 1
    heap_up(w.h_time, w.h_key, i, time, node_key(w, node))


@inline_step
def push_net(w: Any, e: int, time: float, kind: int, obj: int, gen: int) -> None:
    """An event a network delay of edge ``e`` away: at the end of the edge's list (the list into the heap of
    heads if it was empty), or on the heap by itself if it falls due before the list's last (the delay
    changed)."""
    node = new_event(w, time, kind, obj, gen, 0)
    tail = w.fifo[e, 1]
    if tail < 0:
        w.ev_i[node, E_LIST] = e
        w.fifo[e, 0] = node
        w.fifo[e, 1] = node
        i = w.ints[I_QHEAP]
        w.ints[I_QHEAP] = i + 1
        heap_up(w.q_time, w.q_key, i, time, node_key(w, node))
    elif time >= w.ev_t[tail]:  # pushed after it: (time, order pushed) stays in order along the list
        w.ev_i[node, E_LIST] = e
        w.ev_i[tail, E_NEXT] = node
        w.fifo[e, 1] = node
    else:
        w.ev_i[node, E_LIST] = -1
        i = w.ints[I_HEAP]
        w.ints[I_HEAP] = i + 1
        heap_up(w.h_time, w.h_key, i, time, node_key(w, node))


@inline_step
def take_event(w: Any, node: int) -> None:
    """Take the earliest event (node ``node``, its fields read first) off the heap, or off the heap of heads:
    its list's next takes its place there, or the heap's last entry does; the node is given back."""
    e = w.ev_i[node, E_LIST]
    if e < 0:
        n = w.ints[I_HEAP] - 1
        w.ints[I_HEAP] = n
        if n > 0:
            heap_down(w.h_time, w.h_key, n, w.h_time[n], w.h_key[n])
    else:
        after = w.ev_i[node, E_NEXT]
        w.fifo[e, 0] = after
        n = w.ints[I_QHEAP]
        if after >= 0:
            heap_down(w.q_time, w.q_key, n, w.ev_t[after], node_key(w, after))
        else:
            w.fifo[e, 1] = -1
            n -= 1
            w.ints[I_QHEAP] = n
            if n > 0:
                heap_down(w.q_time, w.q_key, n, w.q_time[n], w.q_key[n])
    w.ev_free[w.ints[I_EFREE]] = node
    w.ints[I_EFREE] += 1


# --- the pools ------------------------------------------------------------------------------------------------


@step
def new_attempt(w: Any, s: int, deadline: float, call: int, hedge: int, now: float) -> int:
    n = w.ints[I_AFREE] - 1
    w.ints[I_AFREE] = n
    a = w.att_free[n]
    ai = w.att_i
    ai[a, A_SVC] = s
    ai[a, A_CALL] = call
    ai[a, A_HEDGE] = hedge
    ai[a, A_ALIVE] = 1
    ai[a, A_PHASE] = WAITING
    ai[a, A_CANCELLED] = 0
    ai[a, A_HOLDS] = 0
    ai[a, A_STAGE] = -1
    ai[a, A_PENDING] = 0
    ai[a, A_FIRST] = -1
    ai[a, A_QNEXT] = -1
    ai[a, A_OK] = 0
    ai[a, A_TIMED] = 0
    ai[a, A_SPAN] = -1
    ai[a, A_ORIGIN] = -1
    ai[a, A_HELD_STAGE] = -1
    w.att_r[a, AR_DEADLINE] = deadline
    w.att_r[a, AR_ARRIVED] = now
    w.att_r[a, AR_SENT] = now
    return a


@step
def maybe_free(w: Any, a: int) -> None:
    """Give an attempt back once its service is done with it and its caller no longer waits for it; its
    generation grows, so the events still pending for it are dropped when they come."""
    ai = w.att_i
    if ai[a, A_PHASE] == FINISHED and ai[a, A_ALIVE] == 0 and ai[a, A_TIMED] == 0 and ai[a, A_STAGE] != -2:
        w.att_i[a, A_STAGE] = -2  # given back (once)
        w.att_i[a, A_GEN] += 1
        w.att_free[w.ints[I_AFREE]] = a
        w.ints[I_AFREE] += 1


@step
def add_timer(w: Any, lst: int, a: int) -> None:
    """The attempt's timer at its deadline, at the end of timer list ``lst`` (whose deadlines come in order)."""
    w.att_i[a, A_TIMED] = 1
    w.att_i[a, A_TNEXT] = -1
    tail = w.timers[lst, 1]
    w.att_i[a, A_TPREV] = tail
    if tail >= 0:
        w.att_i[tail, A_TNEXT] = a
    else:
        w.timers[lst, 0] = a
        w.ints[I_TMOVED] = 1
    w.timers[lst, 1] = a


@step
def untime(w: Any, a: int) -> None:
    """Nobody waits on the attempt any more: its timer (if in a list) is taken off, since it would do nothing
    when it fell due."""
    if w.att_i[a, A_TIMED] == 0:
        return
    w.att_i[a, A_TIMED] = 0
    lst = len(w.timers) - 1 if w.att_i[a, A_CALL] < 0 else w.att_i[a, A_SVC]
    before = w.att_i[a, A_TPREV]
    after = w.att_i[a, A_TNEXT]
    if before >= 0:
        w.att_i[before, A_TNEXT] = after
    else:
        w.timers[lst, 0] = after
        w.ints[I_TMOVED] = 1
    if after >= 0:
        w.att_i[after, A_TPREV] = before
    else:
        w.timers[lst, 1] = before


@step
def new_call(w: Any, parent: int, edge: int) -> int:
    n = w.ints[I_CFREE] - 1
    w.ints[I_CFREE] = n
    c = w.call_free[n]
    ci = w.call_i
    ci[c, C_PARENT] = parent
    ci[c, C_EDGE] = edge
    ci[c, C_RETRIES] = 0
    ci[c, C_TRY] = 0
    ci[c, C_HEDGED] = 0
    ci[c, C_DONE] = 0
    ci[c, C_COPY1] = -1
    ci[c, C_COPY2] = -1
    ci[c, C_NEXT] = -1
    ci[c, C_SPAN] = -1
    ci[c, C_ORIGIN] = -1
    return c


@step
def free_calls(w: Any, a: int) -> None:
    """Give back the calls of an attempt's stage (each is done: none of its copies is still awaited)."""
    c = w.att_i[a, A_FIRST]
    while c >= 0:
        after = w.call_i[c, C_NEXT]
        w.call_i[c, C_GEN] += 1
        w.call_free[w.ints[I_CFREE]] = c
        w.ints[I_CFREE] += 1
        c = after
    w.att_i[a, A_FIRST] = -1


@step
def copy_alive(w: Any, a: int, gen: int) -> bool:
    return a >= 0 and w.att_i[a, A_GEN] == gen and w.att_i[a, A_ALIVE] == 1


# --- the zoom's trace (world.py T_*, zoom/chain.py) ---------------------------------------------------------------
# Every step below writes only the trace's rows and an attempt's A_SPAN; none draws a number or pushes an event,
# so a minute traced is the same minute, bit for bit, as one not traced.


@step
def span_open(w: Any, a: int, request: int, parent: int, kind: int, try_no: int, group: int, x: float) -> int:
    """A span for attempt ``a`` (its row; −1 when the trace has no row left: counted as lost)."""
    row = w.tr_ints[TI_ROWS]
    if row >= len(w.tr_i):
        w.tr_ints[TI_LOST] += 1
        return -1
    w.tr_ints[TI_ROWS] = row + 1
    ti = w.tr_i
    tr = w.tr_r
    ti[row, T_REQUEST] = request
    ti[row, T_SVC] = w.att_i[a, A_SVC]
    ti[row, T_PARENT] = parent
    ti[row, T_KIND] = kind
    ti[row, T_TRY] = try_no
    ti[row, T_GROUP] = group if group >= 0 else row
    ti[row, T_OUTCOME] = OUT_OPEN
    ti[row, T_CALLER] = CALLER_WAITING
    for k in range(TR_COLUMNS):
        tr[row, k] = _NAN
    tr[row, TR_SENT] = x
    tr[row, TR_DEADLINE] = w.att_r[a, AR_DEADLINE]
    w.att_i[a, A_SPAN] = row
    return row


@step
def span_at(w: Any, a: int, column: int, x: float) -> None:
    """A traced attempt's moment (TR_ARRIVED, TR_START, TR_WORKED)."""
    row = w.att_i[a, A_SPAN]
    if row >= 0:
        w.tr_r[row, column] = x


@step
def span_end(w: Any, a: int, outcome: int, x: float) -> None:
    """A traced attempt's service is done with it (the first outcome stands)."""
    row = w.att_i[a, A_SPAN]
    if row >= 0 and w.tr_i[row, T_OUTCOME] == OUT_OPEN:
        w.tr_i[row, T_OUTCOME] = outcome
        w.tr_r[row, TR_END] = x


@step
def span_caller(w: Any, a: int, status: int, x: float) -> None:
    """A traced attempt's caller stops waiting for it (the first reason stands)."""
    row = w.att_i[a, A_SPAN]
    if row >= 0 and w.tr_i[row, T_CALLER] == CALLER_WAITING:
        w.tr_i[row, T_CALLER] = status
        w.tr_r[row, TR_CALLER_END] = x


# --- measures ---------------------------------------------------------------------------------------------------


def log_bin(seconds: float) -> int:
    """A latency's histogram bin by its definition: bin k ≥ 1 holds HIST_FLOOR_S·HIST_RATIO^(k−1) up to the next
    (as ``math.log`` rounds), bin 0 all below, the last all past."""
    if seconds <= HIST_FLOOR_S:
        return 0
    b = int(math.log(seconds / HIST_FLOOR_S) / _LOG_RATIO) + 1
    return b if b < HIST_BINS else HIST_BINS - 1


def _bin_tables() -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64], int]:
    """``log_bin`` without a logarithm (it was an eighth of a busy chain minute): the least latency of each bin
    (found by bisection on the floats' bit patterns, so the bins are exactly ``log_bin``'s), and for each of
    ``_SUBS`` slices of each binary order of magnitude, the bin of the slice's least latency. A latency's bin is
    then its slice's, or the next if that starts inside the slice before it."""
    lows = np.full(HIST_BINS + 1, math.inf)
    lows[0] = -math.inf
    for k in range(1, HIST_BINS):
        guess = HIST_FLOOR_S * HIST_RATIO ** (k - 1)
        lo = struct.unpack("<q", struct.pack("<d", guess * (1.0 - 1e-9)))[0]
        hi = struct.unpack("<q", struct.pack("<d", guess * (1.0 + 1e-9)))[0]
        assert log_bin(_as_float(lo)) < k <= log_bin(_as_float(hi))
        while hi - lo > 1:  # log_bin(lo) < k <= log_bin(hi)
            mid = (lo + hi) // 2
            if log_bin(_as_float(mid)) < k:
                lo = mid
            else:
                hi = mid
        lows[k] = _as_float(hi)
    _, e_low = math.frexp(HIST_FLOOR_S)
    _, e_high = math.frexp(lows[HIST_BINS - 1])
    first = np.zeros((e_high - e_low + 1) * _SUBS, dtype=np.int64)
    for e in range(e_low, e_high + 1):
        for j in range(_SUBS):
            least = math.ldexp(0.5 + j / (2 * _SUBS), e)
            first[(e - e_low) * _SUBS + j] = int(np.searchsorted(lows, least, side="right")) - 1
    assert (np.diff(first) <= 1).all()  # a slice narrower than a bin: at most one bin starts inside it
    return lows, first, e_low


def _as_float(bits: int) -> float:
    return float(struct.unpack("<d", struct.pack("<q", bits))[0])


_SUBS = 128  # slices of a binary order of magnitude: each under 0.8 % wide, so at most one bin starts inside one
_BIN_LOW, _BIN_FIRST, _E_LOW = _bin_tables()


@step
def hist_bin(seconds: float) -> int:
    """``log_bin(seconds)``, read from the tables: the same bin at each bin's least latency, at the float just
    below it, and across the range.

    >>> from oncallsim.model.kernel import from_python
    >>> fast = from_python(hist_bin)
    >>> lows = [float(x) for x in _BIN_LOW[1:-1]]
    >>> xs = lows + [math.nextafter(x, 0.0) for x in lows] + [1e-6 * 1.0001**k for k in range(200_000)]
    >>> [x for x in xs if fast(x) != log_bin(x)]
    []
    """
    if seconds <= HIST_FLOOR_S:
        return 0
    if seconds >= _BIN_LOW[HIST_BINS - 1]:
        return HIST_BINS - 1
    m, e = math.frexp(seconds)
    b = _BIN_FIRST[(e - _E_LOW) * _SUBS + int((m - 0.5) * (2 * _SUBS))]
    return b + int(_BIN_LOW[b + 1] <= seconds)  # without a branch: a coin toss for the predictor


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


# --- budgets and hedges -----------------------------------------------------------------------------------------


@step
def budget_roll(w: Any, s: int, x: float) -> None:
    """Bring the service's retry budget's ring to the second of ``x``: buckets of seconds gone are emptied."""
    second = int(x)
    last = w.svc_i[s, SI_BUDGET_SECOND]
    if second <= last:
        return
    gap = second - last
    if gap > BUDGET_WINDOW_S:
        gap = BUDGET_WINDOW_S
    for k in range(1, gap + 1):
        slot = (last + k) % BUDGET_WINDOW_S
        w.budget[s, slot] = 0
        w.budget[s, BUDGET_WINDOW_S + slot] = 0
    w.svc_i[s, SI_BUDGET_SECOND] = second


@step
def budget_allows(w: Any, s: int, x: float) -> bool:
    """A retry is sent only if the service's retries would then be at most its budget's share of its calls
    (first tries and retries) over the last ``BUDGET_WINDOW_S`` seconds, this one included."""
    budget_roll(w, s, x)
    sent = 0
    retries = 0
    for k in range(BUDGET_WINDOW_S):
        sent += w.budget[s, k]
        retries += w.budget[s, BUDGET_WINDOW_S + k]
    return retries + 1 <= w.svc[s, SV_BUDGET] * (sent + 1)


@step
def select(v: Any, n: int, k: int) -> float:
    """The k-th smallest of v[0:n] (0-based), by partitioning v in place (Hoare's selection)."""
    lo = 0
    hi = n - 1
    while lo < hi:
        pivot = v[(lo + hi) >> 1]
        i = lo
        j = hi
        while i <= j:
            while v[i] < pivot:
                i += 1
            while v[j] > pivot:
                j -= 1
            if i <= j:
                tmp = v[i]
                v[i] = v[j]
                v[j] = tmp
                i += 1
                j -= 1
        if k <= j:
            hi = j
        elif k >= i:
            lo = i
        else:
            return v[k]
    return v[k]


@step
def hedge_delay(w: Any, e: int) -> float:
    """How long a caller waits before it hedges a try of call ``e``: the callee's latency at the caller's
    quantile as its callers have seen it (linear between order statistics, as numpy's default), read again every
    ``HEDGE_REFRESH`` answers; the declared quantile plus the network until ``HEDGE_MIN_SEEN`` answers."""
    callee = w.edge_i[e, EI_CALLEE]
    seen = w.svc_i[callee, SI_SEEN]
    if seen < HEDGE_MIN_SEEN:
        return w.edge_f[e, EF_HEDGE_DECLARED_S]
    if w.edge_read_at[e] >= 0 and seen - w.edge_read_at[e] < HEDGE_REFRESH:
        return w.edge_delay[e]
    n = seen if seen < HEDGE_WINDOW else HEDGE_WINDOW
    for k in range(n):
        w.scratch[k] = w.seen[callee, k]
    q = w.svc[w.edge_i[e, EI_CALLER], SV_HEDGE_Q]
    h = (n - 1) * q
    lo = int(h)
    low = select(w.scratch, n, lo)
    value = low
    if lo + 1 < n and h > lo:
        high = w.scratch[lo + 1]  # after the selection every value past lo is at least low: the next is their least
        for k in range(lo + 2, n):
            if w.scratch[k] < high:
                high = w.scratch[k]
        value = low + (h - lo) * (high - low)
    w.edge_delay[e] = value
    w.edge_read_at[e] = seen
    return value


@step
def saw(w: Any, s: int, seconds: float) -> None:
    """A first copy's latency as its caller saw it: to its answer, or to the moment its hedge answered first (a
    lower bound; see verify/chains.py ``seen`` for why the censored record still finds the quantile)."""
    k = w.svc_i[s, SI_SEEN]
    w.seen[s, k % HEDGE_WINDOW] = seconds
    w.svc_i[s, SI_SEEN] = k + 1


# --- breakers (docs/graphs.md, "Breakers") --------------------------------------------------------------------


@step
def breaker_mark(w: Any, x: float, e: int, accepted: bool) -> None:
    """A request of call ``e``'s (caller, callee) breaker, accepted or not, in its window's bucket of ``x``."""
    caller = w.edge_i[e, EI_CALLER]
    number = int(x / w.svc[caller, SV_BREAKER_BUCKET_S])
    p = w.edge_i[e, EI_PAIR]
    b = number % BREAKER_BUCKETS
    if w.br_stamp[p, b] != number:  # a bucket of a window gone: emptied
        w.br_stamp[p, b] = number
        w.br_n[p, b] = 0.0
        w.br_ok[p, b] = 0.0
    w.br_n[p, b] += 1.0
    if accepted:
        w.br_ok[p, b] += 1.0


@step
def breaker_rejects(w: Any, x: float, e: int) -> bool:
    """Google SRE's adaptive throttling, as aegis's sre breaker: over the window's buckets (the current one
    included), with ``requests`` at least the minimum and at least K·``accepts``, a request is rejected with
    probability (requests − K·accepts)/(requests + 1). A number is drawn only then."""
    caller = w.edge_i[e, EI_CALLER]
    number = int(x / w.svc[caller, SV_BREAKER_BUCKET_S])
    p = w.edge_i[e, EI_PAIR]
    requests = 0.0
    accepts = 0.0
    for b in range(BREAKER_BUCKETS):
        stamp = w.br_stamp[p, b]
        if stamp > number - BREAKER_BUCKETS and stamp <= number:
            requests += w.br_n[p, b]
            accepts += w.br_ok[p, b]
    k = w.svc[caller, SV_BREAKER_K]
    if requests < w.svc[caller, SV_BREAKER_MIN] or requests <= k * accepts:
        return False
    return uniform(w.gen) < (requests - k * accepts) / (requests + 1.0)


# --- the BBR limiter (docs/graphs.md, "Breakers, limits and queues"; model/request/limiter.py) -----------------


@step
def cpu_roll(w: Any, s: int, x: float) -> None:
    """Service ``s``'s CPU samples up to ``x``, every 500 ms: the reading is its workers' own work begun since the
    last sample against its workers × 500 ms (‰; a worker waiting on its calls burns none); a zero reading leaves
    the last non-zero one, and the estimate takes 0.95 of itself and 0.05 of that reading (aegis's cpuproc)."""
    while w.svc_r[s, SR_CPU_TICK] <= x:
        reading = 1000.0 * w.svc_r[s, SR_CPU_ACC] / (w.svc[s, SV_WORKERS] * CPU_TICK_S)
        if reading > 0.0:
            w.svc_r[s, SR_CPU_LAST] = reading
        w.svc_r[s, SR_CPU_EMA] = w.svc_r[s, SR_CPU_EMA] * CPU_DECAY + w.svc_r[s, SR_CPU_LAST] * (1.0 - CPU_DECAY)
        w.svc_r[s, SR_CPU_ACC] = 0.0
        w.svc_r[s, SR_CPU_TICK] += CPU_TICK_S


@step
def bbr_completed(w: Any, s: int, x: float, a: int) -> None:
    """An attempt service ``s`` had started is done with (answered, or dropped on its caller's cancellation), in
    BBR's current bucket: its time from its worker's start, whole ms rounded up."""
    number = int(x / BBR_BUCKET_S)
    b = number % BBR_BUCKETS
    if w.bbr_stamp[s, b] != number:
        w.bbr_stamp[s, b] = number
        w.bbr_pass[s, b] = 0
        w.bbr_rt[s, b] = 0.0
    w.bbr_pass[s, b] += 1
    ms = math.ceil((x - w.att_r[a, AR_STARTED]) * 1000.0)
    if ms > 0:
        w.bbr_rt[s, b] += ms


@step
def bbr_cap(w: Any, s: int, x: float) -> float:
    """floor(maxPass × minRT × 10 / 1000) over the 99 buckets before the current one (aegis's reduce); 0 when they
    hold no completion (aegis then drops above one in flight)."""
    current = int(x / BBR_BUCKET_S)
    oldest = current - BBR_BUCKETS + 1
    max_pass = 0
    min_rt = _INF
    for b in range(BBR_BUCKETS):
        number = w.bbr_stamp[s, b]
        if number < oldest or number >= current:
            continue
        n = w.bbr_pass[s, b]
        if n > max_pass:
            max_pass = n
        if n > 0:
            avg = math.ceil(w.bbr_rt[s, b] / n)
            if avg < min_rt:
                min_rt = avg
    if max_pass == 0:
        return 0.0
    if min_rt < 1.0:
        min_rt = 1.0
    return math.floor(max_pass * min_rt * (1.0 / BBR_BUCKET_S) / 1000.0)


@step
def bbr_sheds(w: Any, s: int, x: float) -> bool:
    """Kratos's shouldDrop at service ``s`` for an arrival at ``x``: its CPU estimate at or above 800 ‰ and its
    in-flight (its workers held and its queue) above 1 and above the cap; for 1 s after the episode's first shed,
    the in-flight test alone."""
    cpu_roll(w, s, x)
    in_flight = w.svc_i[s, SI_QLEN] + w.svc_i[s, SI_BUSY]
    drop_at = w.svc_r[s, SR_DROP_AT]
    if w.svc_r[s, SR_CPU_EMA] < BBR_THRESHOLD:
        if drop_at < 0.0:
            return False
        if x - drop_at <= BBR_COOL_DOWN_S:
            return in_flight > 1 and in_flight > bbr_cap(w, s, x)
        w.svc_r[s, SR_DROP_AT] = -1.0
        return False
    drop = in_flight > 1 and in_flight > bbr_cap(w, s, x)
    if drop and drop_at < 0.0:
        w.svc_r[s, SR_DROP_AT] = x
    return drop


# --- where a failure began (docs/graphs.md, "Where the failures began") ---------------------------------------------


@step
def blocker(w: Any, s: int) -> int:
    """Where a wait for a worker at service ``s`` began: at ``s``, unless more than half of its held workers wait
    on one stage of calls — then, by the same rule, at that stage's first call's callee."""
    while True:
        busy = w.svc_i[s, SI_BUSY]
        below = -1
        for g in range(w.stage_first[s], w.stage_first[s + 1]):
            if 2 * w.stage_held[g] > busy:
                below = w.edge_i[w.stage_edges[g], EI_CALLEE]
                break
        if below < 0:
            return s
        s = below


@step
def where(w: Any, a: int) -> int:
    """Where a wait for attempt ``a`` that ran out (its caller's timer, its client's deadline) began: the
    deepest service still working on it. Waiting for a worker (or on the network there): ``blocker`` of its
    service; at its own work: its service; waiting on calls: the first unanswered call's awaited copy, and so on
    down; answered already (its answer on the way back): where its failure began, or its service."""
    while True:
        s = w.att_i[a, A_SVC]
        phase = w.att_i[a, A_PHASE]
        if phase == WAITING:
            return blocker(w, s)
        if phase == WORKING:
            return s
        if phase == FINISHED:
            origin = w.att_i[a, A_ORIGIN]
            return origin if origin >= 0 else s
        below = -1
        c = w.att_i[a, A_FIRST]
        while c >= 0 and below < 0:
            if w.call_i[c, C_DONE] == 0:
                if copy_alive(w, w.call_i[c, C_COPY1], w.call_i[c, C_GEN1]):
                    below = w.call_i[c, C_COPY1]
                elif copy_alive(w, w.call_i[c, C_COPY2], w.call_i[c, C_GEN2]):
                    below = w.call_i[c, C_COPY2]
            c = w.call_i[c, C_NEXT]
        if below < 0:
            return s
        a = below


@step
def unhold_stage(w: Any, a: int) -> None:
    """The attempt's worker no longer waits on its stage's calls (the stage is done, or the worker freed)."""
    g = w.att_i[a, A_HELD_STAGE]
    if g >= 0:
        w.stage_held[g] -= 1
        w.att_i[a, A_HELD_STAGE] = -1


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


@step
def turned_away(w: Any, x: float, a: int, s: int, queued: bool) -> bool:
    """An attempt arriving, or taken from the queue (``queued``): dropped if its caller gave up, refused (an error
    answer) if its deadline has passed — a failure that began at ``s`` on arrival, and where its wait began
    (``blocker``) if it had queued. True when it was."""
    if w.att_i[a, A_CANCELLED]:
        w.m_svc[s, M_CANCELLED] += 1
        w.att_i[a, A_PHASE] = FINISHED
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
    """An attempt reaches its service: dropped if its caller gave up, refused if its deadline has passed or its
    queue is full (``max_queue`` waiting and no worker idle), else queued (and taken at once if a worker is
    idle)."""
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
    if w.svc_i[s, SI_QLEN] >= w.svc[s, SV_MAX_QUEUE] and w.svc_i[s, SI_FREE] <= 0:  # its queue is full
        w.m_svc[s, M_QUEUE_FULL] += 1
        w.att_i[a, A_ORIGIN] = blocker(w, s)  # as a wait for a worker that ran out
        w.att_i[a, A_OK] = 2  # refused for overload: an error its callers' breakers count as accepted
        refuse(w, x, a)
        return
    if w.svc[s, SV_LIFO] != 0.0:  # at the head: the next a worker takes
        head = w.svc_i[s, SI_HEAD]
        w.att_i[a, A_QNEXT] = head
        w.svc_i[s, SI_HEAD] = a
        if head < 0:
            w.svc_i[s, SI_TAIL] = a
    else:
        tail = w.svc_i[s, SI_TAIL]
        if tail >= 0:
            w.att_i[tail, A_QNEXT] = a
        else:
            w.svc_i[s, SI_HEAD] = a
        w.svc_i[s, SI_TAIL] = a
        w.att_i[a, A_QNEXT] = -1
    w.svc_i[s, SI_QLEN] += 1
    w.ints[I_QUEUED] += 1
    dequeue(w, x, s)


@step
def dequeue(w: Any, x: float, s: int) -> None:
    """Idle workers take the queue's attempts from its head (the oldest, or under LIFO the newest); one cancelled or
    past its deadline is dropped."""
    while w.svc_i[s, SI_FREE] > 0 and w.svc_i[s, SI_QLEN] > 0:
        a = w.svc_i[s, SI_HEAD]
        w.svc_i[s, SI_HEAD] = w.att_i[a, A_QNEXT]
        if w.svc_i[s, SI_HEAD] < 0:
            w.svc_i[s, SI_TAIL] = -1
        w.svc_i[s, SI_QLEN] -= 1
        w.ints[I_QUEUED] -= 1
        if turned_away(w, x, a, s, True):
            continue
        w.svc_i[s, SI_FREE] -= 1
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
    w.att_i[a, A_PHASE] = FINISHED
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
    if w.att_i[a, A_HOLDS]:
        unhold_stage(w, a)
        w.att_i[a, A_HOLDS] = 0
        s = w.att_i[a, A_SVC]
        busy_change(w, s, x, -1)
        w.svc_i[s, SI_FREE] += 1
        dequeue(w, x, s)


@step
def own_done(w: Any, x: float, a: int) -> None:
    s = w.att_i[a, A_SVC]
    if w.att_i[a, A_CANCELLED]:  # given up on while it worked: the work is wasted, the worker freed
        w.att_i[a, A_PHASE] = FINISHED
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
    w.att_i[a, A_PHASE] = FINISHED
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
        w.att_i[a, A_PHASE] = FINISHED
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
            dequeue(w, t0, s)
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


@unmanaged
def requeue_timers(w: Any, lst: int) -> None:
    """Every timer of list ``lst`` onto the event heap at its deadline, the list emptied: the service's timeout
    changed, so the calls sent from now on fall due in another order than those already waiting (Python has made
    room for as many events: ``world.with_room``'s ``extra_events``)."""
    a = w.timers[lst, 0]
    while a >= 0:
        after = w.att_i[a, A_TNEXT]
        w.att_i[a, A_TIMED] = 0
        push(w, w.att_r[a, AR_DEADLINE], EV_TIMER, a, w.att_i[a, A_GEN], 0)
        a = after
    w.timers[lst, 0] = -1
    w.timers[lst, 1] = -1
    w.ints[I_TMOVED] = 1

"""A chain run's world: everything that carries from one minute to the next (the requests in flight at every
service, their calls, the pending events), in arrays the compiled loop reads and writes in place.

Timers in lists, not in the heap: most timers never fire (the answer comes first), and they outnumbered every
other pending event. A caller's timer on a call into service s at the callee's timeout falls due in the order
sent (the timeout is s's own, the clock only advances), and so do the clients' (a constant deadline after each
arrival): each such list is kept in deadline order through the attempts themselves (``A_TNEXT``, ``A_TPREV``),
and the loop looks at the lists' heads beside the heap's top. A timer is taken off its list as soon as nobody
waits on it any more (the answer came, or the caller gave up): a timer that fired then would do nothing, and the
attempt it held (out of the pool, and out of the cache by then) is given back at once. A timer at a caller's
earlier deadline (the call inherits what is left of it) is an event on the heap.

Network events in lists too: an attempt reaching its callee, a cancellation reaching it and an answer reaching the
caller each fall due a call's network delay after they are sent, a delay constant per call (edge): the events of
one edge fall due in the order pushed. Each edge keeps them in a FIFO list of event nodes (``fifo``), and only the
list's head sits in a second, small heap, of the lists' heads (``q_time``, ``q_key``: at most one entry an edge);
taking it puts the next in its place. The loop takes the earlier of the two heaps' tops. An event whose time
would come before its list's tail (a network delay changed between minutes) goes on the heap itself: the order
stays that of (time, order pushed) either way, so the events are handled exactly as one heap of all of them
would.

The heaps' entries are two numbers: the time, and a key that is the order pushed (``I_SEQ``) above the event
node's row (``KEY_NODE_BITS``); equal times are handled first pushed, first handled. An event's fields (kind,
object, generation, ...) are in its node (``ev_i``), a row of a pool like the attempts'.

Pools, not objects: an attempt (a request being served at one service: an entry request, or one copy of a
call) and a call (one call an attempt makes, with its tries) are rows of ``att_i``/``att_r`` and ``call_i``,
taken from a free list and given back once nothing refers to them any more. Each row has a generation that
grows when it is given back; an event names the row and its generation, so an event left pending for a row
since reused is recognised and dropped. Compiled code does not allocate: Python grows the pools, the heap and
the arrival buffer before they could run out (``with_room``; the loop stops and asks when an event could need
more than is left).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from oncallsim.model.chain.layout import (
    BAL_POOLED,
    BREAKER_BUCKETS,
    SV_BALANCER,
    SV_INSTANCES,
    SV_WORKERS,
    SV_WORKERS_PER_INSTANCE,
    ChainLayout,
)
from oncallsim.model.jit import by_reference_invariant
from oncallsim.model.request.generator import seeded

__all__ = ["ChainWorld", "copy_chain", "new_chain", "timers_in", "with_room"]

# ints[...]
(
    I_HEAP,  # events in the heap
    I_SEQ,  # events ever pushed: the tie-break of equal times (first pushed, first handled)
    I_AFREE,  # attempts on the free list
    I_CFREE,  # calls on the free list
    I_COUNT,  # the minute's arrivals
    I_NEXT,  # the next of them to arrive
    I_QUEUED,  # attempts waiting in every service's queue
    I_WIDEST,  # the most calls one stage sends
    I_ENTRY,  # the entry service
    I_EFREE,  # event nodes on the free list
    I_QHEAP,  # lists in the heap of heads
    I_TMOVED,  # 1: a timer list's head has changed since the loop looked for the earliest timer
    I_INTS,
) = range(13)

# reals[...]
R_DEADLINE, R_PROPAGATE, R_REALS = range(3)  # the clients' deadline; 1: deadlines propagate

# svc_i[s, ...]: a service's state
(
    SI_QLEN,  # attempts waiting for its workers (in all its queues)
    SI_BUSY,  # workers held
    SI_SEEN,  # answers its callers have timed (the hedge delay's window, ``seen``)
    SI_BUDGET_SECOND,  # the second the retry budget's newest bucket counts
    SI_SERVING,  # instances in its balancer's rotation (the first so many of its queues; balanced services)
    SI_TURN,  # round-robin: the turns taken
    SI_COLUMNS,
) = range(7)

# queues[q, ...]: a queue and the workers behind it. A pooled service has one (every worker behind it); a balanced
# one a queue per instance (its workers_per_instance), ``queue_first[s]`` to ``queue_first[s + 1]``, as many as a
# service may have instances (MAX_INSTANCES): those past its instances in rotation take no new attempt and finish
# what they hold
(
    Q_FREE,  # idle workers
    Q_HEAD,  # the waiting attempts: a list through their A_QNEXT
    Q_TAIL,
    Q_LEN,
    Q_OUT,  # attempts given to it and not finished there (least-outstanding reads it)
    Q_COLUMNS,
) = range(6)
MAX_INSTANCES = 1000  # a service's instances (scenarios/graph.py), the control's and the fleet's bound

# svc_r[s, ...]
(
    SR_SINCE,  # busy time counted up to
    SR_SLOW,  # its work × slow
    SR_FAIL,  # an attempt fails with this chance
    SR_CPU_ACC,  # BBR: worker-seconds of its own work begun since the last CPU sample
    SR_CPU_LAST,  # BBR: the last non-zero CPU reading (‰)
    SR_CPU_EMA,  # BBR: the CPU estimate (‰), 0.95·itself + 0.05·the last reading at each sample
    SR_CPU_TICK,  # BBR: the next sample's time
    SR_DROP_AT,  # BBR: the first shed of the episode (−1: none)
    SR_COLUMNS,
) = range(9)
CPU_TICK_S = 0.5  # Kratos samples its CPU every 500 ms
CPU_DECAY = 0.95
BBR_BUCKETS = 100  # BBR's window: 100 buckets of 100 ms
BBR_BUCKET_S = 0.1
BBR_THRESHOLD = 800.0  # ‰
BBR_COOL_DOWN_S = 1.0

BUDGET_WINDOW_S = 10  # a retry budget counts the calls of the last 10 s, in whole seconds (as Finagle's)
HEDGE_WINDOW = 1000  # the latencies a hedge delay is read from
HEDGE_MIN_SEEN = 100  # fewer than this: the declared quantile
HEDGE_REFRESH = 100  # the observed quantile read again every so many new answers

# att_i[a, ...]: an attempt
(
    A_GEN,
    A_SVC,
    A_CALL,  # the call it is a copy of (−1: an entry request, answered to its client)
    A_HEDGE,  # 1: a hedged copy
    A_ALIVE,  # its caller still waits for it (for an entry request: its client has no answer yet)
    A_PHASE,
    A_CANCELLED,
    A_HOLDS,  # holds a worker
    A_STAGE,
    A_PENDING,  # calls of its stage not yet answered
    A_FIRST,  # its stage's calls: a list through C_NEXT
    A_QNEXT,
    A_OK,  # the answer it sent: 1 a success, 0 an error, 2 an error that says it was refused for overload
    A_TIMED,  # 1: in a timer list (not given back before its timer is taken off)
    A_TNEXT,  # the next in its timer list
    A_TPREV,  # the one before
    A_SPAN,  # its row in the trace (−1: not traced; trace.py)
    A_ORIGIN,  # the service where its failure began (−1: none yet; docs/graphs.md, "Where the failures began")
    A_HELD_STAGE,  # the stage (a row of stage_edges) whose calls hold its worker (−1: none)
    A_QUEUE,  # the queue it was given to (−1: none yet, or finished there)
    A_COLUMNS,
) = range(21)
AR_DEADLINE, AR_ARRIVED, AR_SENT, AR_STARTED, AR_COLUMNS = range(5)  # AR_STARTED: a worker took it
WAITING, WORKING, CALLING, FINISHED = range(4)

# call_i[c, ...]: a call
(
    C_GEN,
    C_PARENT,
    C_EDGE,
    C_RETRIES,
    C_TRY,
    C_HEDGED,
    C_DONE,
    C_COPY1,  # the copies of its current try: attempt and generation
    C_GEN1,
    C_COPY2,
    C_GEN2,
    C_NEXT,
    C_SPAN,  # the trace's row of its first copy (−1: not traced)
    C_ORIGIN,  # where its last failed try's failure began
    C_COLUMNS,
) = range(15)

# event kinds
EV_REACH, EV_OWN_DONE, EV_REPLY, EV_TIMER, EV_HEDGE, EV_CANCEL = range(6)

# ev_i[n, ...]: an event node
(
    E_KIND,
    E_OBJ,  # the attempt (the call, for a hedge)
    E_GEN,  # its generation when the event was pushed
    E_AUX,  # a hedge's try
    E_LIST,  # the edge whose FIFO list holds it (−1: on the heap by itself)
    E_NEXT,  # the next in that list
    E_SEQ,  # the order pushed
    E_COLUMNS,
) = range(8)
KEY_NODE_BITS = 24  # a heap key: the order pushed << KEY_NODE_BITS | the node's row
KEY_NODE_MASK = (1 << KEY_NODE_BITS) - 1
MAX_SEQ = 1 << (63 - KEY_NODE_BITS)  # events pushed in a run, at most (at 2 M a minute: 260,000 minutes)

# m_svc[s, ...]: a service's counts in the minute
(
    M_ATTEMPTS,  # arrived (first tries, retries and hedges alike)
    M_STARTED,
    M_SUCCEEDED,
    M_FAILED,
    M_REFUSED,  # their deadline had passed on arrival or when a worker was free
    M_CANCELLED,
    M_RETRIES,  # as a caller
    M_HEDGES,
    M_TIMEOUTS,
    M_DENIED,  # retries its budget refused
    M_WAIT_S,
    M_BUSY_S,  # worker-seconds held
    M_BEGUN,  # the clients' failed requests whose failure began here
    M_REJECTED,  # as a caller: copies its breakers rejected (never sent)
    M_QUEUE_FULL,  # refused on arrival, its queue at max_queue (among M_ATTEMPTS)
    M_LIMITED,  # shed on arrival by its BBR limiter (among M_ATTEMPTS)
    M_WASTED_S,  # worker-seconds held by attempts whose caller (or client) no longer waited when it let go
    M_COLUMNS,
) = range(18)

# m_client[...]: the clients' answers in the minute
MC_DECIDED, MC_OK, MC_DEADLINE, MC_ERROR, MC_SUM_US, MC_COLUMNS = range(6)

# the trace (trace.py). tr_ints[...]: which entry requests are sampled, and the rows written
(
    TI_EVERY,  # k > 0: the minute's entry requests number 0, k, 2k, … are traced; 0: none (off); −1: none new,
    # the attempts of those already traced still are
    TI_ROWS,  # rows written
    TI_LOST,  # spans not written: no row left
    TI_COLUMNS,
) = range(4)
# tr_i[row, ...]: a span (one attempt at one service)
(
    T_REQUEST,  # the entry request's number in the minute it arrived
    T_SVC,
    T_PARENT,  # the span of the attempt that made the call (−1: the client's request)
    T_KIND,  # KIND_*
    T_TRY,  # the call's try it is a copy of (1: the first)
    T_GROUP,  # the span of the call's first copy (itself for one)
    T_OUTCOME,  # OUT_*: the service's side
    T_CALLER,  # CALLER_*: the caller's side (the client's, for a request)
    T_COLUMNS,
) = range(9)
KIND_FIRST, KIND_RETRY, KIND_HEDGE = range(3)
OUT_OPEN, OUT_OK, OUT_FAILED, OUT_REFUSED, OUT_CANCELLED = range(5)
CALLER_WAITING, CALLER_ANSWERED, CALLER_TIMED_OUT, CALLER_CANCELLED = range(4)
# tr_r[row, ...]: its times (NaN: not yet)
(
    TR_SENT,  # the caller sent it (the client, for a request)
    TR_ARRIVED,  # it reached the service
    TR_START,  # a worker took it
    TR_WORKED,  # its own work done
    TR_END,  # the service was done with it (answered, refused, or dropped)
    TR_CALLER_END,  # its caller stopped waiting: the answer reached it, or it gave up
    TR_DEADLINE,  # the deadline it carried (∞: none)
    TR_COLUMNS,
) = range(8)

# latency histograms: logarithmic bins, 1 % wide, from 10 µs (bin 0 holds all below) to past 600 s
HIST_FLOOR_S = 1e-5
HIST_RATIO = 1.01
HIST_BINS = 1810
# OpenTelemetry's advisory bounds (s) of http.server.request.duration, then +Inf: the record's buckets
OTEL_BOUNDS_S = np.array([0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0])


@by_reference_invariant
class ChainWorld(NamedTuple):
    gen: npt.NDArray[np.uint64]
    ints: npt.NDArray[np.int64]
    reals: npt.NDArray[np.float64]
    # the graph (layout.py), read only
    svc: npt.NDArray[np.float64]
    stage_first: npt.NDArray[np.int64]
    stage_edges: npt.NDArray[np.int64]
    edge_i: npt.NDArray[np.int64]
    edge_f: npt.NDArray[np.float64]
    # the services
    svc_i: npt.NDArray[np.int64]
    svc_r: npt.NDArray[np.float64]
    queues: npt.NDArray[np.int64]  # [q, Q_COLUMNS] a queue and its workers: a service's one, or one per instance
    queue_first: npt.NDArray[np.int64]  # [s + 1] service s's queues are queue_first[s] to queue_first[s + 1]
    seen: npt.NDArray[np.float64]  # [s, HEDGE_WINDOW] the latest latencies of its answers, a ring
    scratch: npt.NDArray[np.float64]  # [HEDGE_WINDOW] for reading a quantile
    edge_delay: npt.NDArray[np.float64]  # [e] a call's hedge delay as last read
    edge_read_at: npt.NDArray[np.int64]  # [e] the callee's SI_SEEN then (−1: never)
    budget: npt.NDArray[np.int64]  # [s, 2 × BUDGET_WINDOW_S] calls sent, then retries, per second, a ring
    timers: npt.NDArray[np.int64]  # [s + 1, 2] head and tail of each timer list (the last: the clients')
    stage_held: npt.NDArray[np.int64]  # [g] the workers held waiting on stage g's calls (where a wait began)
    br_n: npt.NDArray[np.float64]  # [pair, BREAKER_BUCKETS] a breaker's requests per bucket, a ring
    br_ok: npt.NDArray[np.float64]  # [pair, BREAKER_BUCKETS] its accepts
    br_stamp: npt.NDArray[np.int64]  # [pair, BREAKER_BUCKETS] each bucket's number (time / bucket), −1: never
    bbr_pass: npt.NDArray[np.int64]  # [s, BBR_BUCKETS] BBR's completions per bucket, a ring
    bbr_rt: npt.NDArray[np.float64]  # [s, BBR_BUCKETS] the sum of their times (whole ms, rounded up)
    bbr_stamp: npt.NDArray[np.int64]  # [s, BBR_BUCKETS] each bucket's number (time / 100 ms), −1: never
    # the pools and the events
    att_i: npt.NDArray[np.int64]
    att_r: npt.NDArray[np.float64]
    att_free: npt.NDArray[np.int64]
    call_i: npt.NDArray[np.int64]
    call_free: npt.NDArray[np.int64]
    h_time: npt.NDArray[np.float64]  # the heap: time, then key (order pushed, node)
    h_key: npt.NDArray[np.int64]
    ev_i: npt.NDArray[np.int64]  # [n, E_COLUMNS] the event nodes
    ev_t: npt.NDArray[np.float64]  # [n] their times
    ev_free: npt.NDArray[np.int64]
    fifo: npt.NDArray[np.int64]  # [e, 2] head and tail of each edge's list of network events
    q_time: npt.NDArray[np.float64]  # [e] the heap of the lists' heads: time, then key
    q_key: npt.NDArray[np.int64]
    arrivals: npt.NDArray[np.float64]
    # the minute's measures
    m_svc: npt.NDArray[np.float64]
    m_hist: npt.NDArray[np.int64]  # [s, HIST_BINS] the latencies of each service's successful answers
    m_client: npt.NDArray[np.int64]
    c_hist: npt.NDArray[np.int64]  # [HIST_BINS] every client's answer, success or not
    c_otel: npt.NDArray[np.int64]  # [len(OTEL_BOUNDS_S) + 1] the same at OpenTelemetry's bounds, not cumulative
    # the zoom's trace (trace.py): empty, and off, unless a zoom asks for it
    tr_ints: npt.NDArray[np.int64]  # [TI_COLUMNS]
    tr_i: npt.NDArray[np.int64]  # [rows, T_COLUMNS] a span per traced attempt
    tr_r: npt.NDArray[np.float64]  # [rows, TR_COLUMNS] its times


def new_chain(layout: ChainLayout, seed: int) -> ChainWorld:
    """A world at the run's start: every worker idle, nothing in flight."""
    n = len(layout.services)
    edges = len(layout.edge_i)
    ints = np.zeros(I_INTS, dtype=np.int64)
    ints[I_WIDEST] = layout.widest_stage
    ints[I_ENTRY] = layout.entry
    reals = np.zeros(R_REALS)
    reals[R_DEADLINE] = layout.deadline_s
    reals[R_PROPAGATE] = 1.0 if layout.propagation else 0.0
    svc_i = np.zeros((n, SI_COLUMNS), dtype=np.int64)
    svc_i[:, SI_SERVING] = layout.svc[:, SV_INSTANCES].astype(np.int64)
    balanced = layout.svc[:, SV_BALANCER] != BAL_POOLED
    queue_first = np.zeros(n + 1, dtype=np.int64)
    queue_first[1:] = np.cumsum(np.where(balanced, MAX_INSTANCES, 1))
    queues = np.zeros((int(queue_first[-1]), Q_COLUMNS), dtype=np.int64)
    queues[:, Q_HEAD] = -1
    queues[:, Q_TAIL] = -1
    for s in range(n):
        first, end = queue_first[s], queue_first[s + 1]
        queues[first:end, Q_FREE] = layout.svc[s, SV_WORKERS_PER_INSTANCE if balanced[s] else SV_WORKERS]
    svc_r = np.zeros((n, SR_COLUMNS))
    svc_r[:, SR_SLOW] = 1.0
    svc_r[:, SR_CPU_TICK] = CPU_TICK_S
    svc_r[:, SR_DROP_AT] = -1.0
    world = ChainWorld(
        gen=seeded(seed),
        ints=ints,
        reals=reals,
        svc=layout.svc.copy(),
        stage_first=layout.stage_first.copy(),
        stage_edges=layout.stage_edges.copy(),
        edge_i=layout.edge_i.copy(),
        edge_f=layout.edge_f.copy(),
        svc_i=svc_i,
        svc_r=svc_r,
        queues=queues,
        queue_first=queue_first,
        seen=np.zeros((n, HEDGE_WINDOW)),
        scratch=np.zeros(HEDGE_WINDOW),
        edge_delay=np.zeros(max(edges, 1)),
        edge_read_at=np.full(max(edges, 1), -1, dtype=np.int64),
        budget=np.zeros((n, 2 * BUDGET_WINDOW_S), dtype=np.int64),
        timers=np.full((n + 1, 2), -1, dtype=np.int64),
        stage_held=np.zeros(max(len(layout.stage_edges) - 1, 1), dtype=np.int64),
        br_n=np.zeros((max(layout.pairs, 1), BREAKER_BUCKETS)),
        br_ok=np.zeros((max(layout.pairs, 1), BREAKER_BUCKETS)),
        br_stamp=np.full((max(layout.pairs, 1), BREAKER_BUCKETS), -1, dtype=np.int64),
        bbr_pass=np.zeros((n, BBR_BUCKETS), dtype=np.int64),
        bbr_rt=np.zeros((n, BBR_BUCKETS)),
        bbr_stamp=np.full((n, BBR_BUCKETS), -1, dtype=np.int64),
        att_i=np.zeros((0, A_COLUMNS), dtype=np.int64),
        att_r=np.zeros((0, AR_COLUMNS)),
        att_free=np.zeros(0, dtype=np.int64),
        call_i=np.zeros((0, C_COLUMNS), dtype=np.int64),
        call_free=np.zeros(0, dtype=np.int64),
        h_time=np.zeros(0),
        h_key=np.zeros(0, dtype=np.int64),
        ev_i=np.zeros((0, E_COLUMNS), dtype=np.int64),
        ev_t=np.zeros(0),
        ev_free=np.zeros(0, dtype=np.int64),
        fifo=np.full((max(edges, 1), 2), -1, dtype=np.int64),
        q_time=np.zeros(max(edges, 1)),
        q_key=np.zeros(max(edges, 1), dtype=np.int64),
        arrivals=np.zeros(0),
        m_svc=np.zeros((n, M_COLUMNS)),
        m_hist=np.zeros((n, HIST_BINS), dtype=np.int64),
        m_client=np.zeros(MC_COLUMNS, dtype=np.int64),
        c_hist=np.zeros(HIST_BINS, dtype=np.int64),
        c_otel=np.zeros(len(OTEL_BOUNDS_S) + 1, dtype=np.int64),
        tr_ints=np.zeros(TI_COLUMNS, dtype=np.int64),
        tr_i=np.zeros((0, T_COLUMNS), dtype=np.int64),
        tr_r=np.zeros((0, TR_COLUMNS)),
    )
    return with_room(world, 0)


def timers_in(world: ChainWorld, lst: int) -> int:
    """How many timers timer list ``lst`` holds."""
    count, a = 0, int(world.timers[lst, 0])
    while a >= 0:
        count += 1
        a = int(world.att_i[a, A_TNEXT])
    return count


def copy_chain(world: ChainWorld) -> ChainWorld:
    """An independent copy (a what-if that starts from a minute of this run)."""
    return ChainWorld._make(a.copy() for a in world)


def margins(world: ChainWorld) -> tuple[int, int, int]:
    """The attempts, calls and event nodes one event may need at most: a stage's calls, each sent (three events:
    its arrival, its timer, its hedge) and cancelled (one), with room to spare. Besides, a freed worker may find
    expired attempts in its queue and reply to each: the events also need room for every queued attempt
    (``ints[I_QUEUED]``, which the loop adds as it changes)."""
    widest = int(world.ints[I_WIDEST])
    return widest + 8, widest + 8, 6 * widest + 16


def with_room(world: ChainWorld, arrivals: int, extra_events: int = 0) -> ChainWorld:
    """The world with room for a minute of ``arrivals`` and for the next event: each pool at least twice what
    one event may need, the arrival buffer for the minute (and ``extra_events`` more events: a timer list moved to
    the heap). Grown by doubling; the rows in use keep their places (events name them)."""
    need_a, need_c, need_h = margins(world)
    need_h += extra_events
    out = world
    if len(out.arrivals) < arrivals:
        out = out._replace(arrivals=np.zeros(max(arrivals, 2 * len(out.arrivals))))
    if out.ints[I_AFREE] < need_a:
        out = _grow_attempts(out, max(2 * len(out.att_i), len(out.att_i) + 2 * need_a, 1024))
    if out.ints[I_CFREE] < need_c:
        out = _grow_calls(out, max(2 * len(out.call_i), len(out.call_i) + 2 * need_c, 1024))
    need_h += int(out.ints[I_QUEUED])
    if out.ints[I_EFREE] < need_h:
        out = _grow_events(out, max(2 * len(out.ev_t), len(out.ev_t) + 2 * need_h, 4096))
    if out.ints[I_SEQ] >= MAX_SEQ:
        raise OverflowError(f"a chain run pushes at most {MAX_SEQ} events")
    return out


def _grow_attempts(world: ChainWorld, size: int) -> ChainWorld:
    old = len(world.att_i)
    att_i = np.zeros((size, A_COLUMNS), dtype=np.int64)
    att_i[:old] = world.att_i
    att_r = np.zeros((size, AR_COLUMNS))
    att_r[:old] = world.att_r
    free = np.zeros(size, dtype=np.int64)
    n = int(world.ints[I_AFREE])
    free[:n] = world.att_free[:n]
    free[n : n + size - old] = np.arange(size - 1, old - 1, -1)  # the new rows, lowest taken first
    world.ints[I_AFREE] = n + size - old
    return world._replace(att_i=att_i, att_r=att_r, att_free=free)


def _grow_calls(world: ChainWorld, size: int) -> ChainWorld:
    old = len(world.call_i)
    call_i = np.zeros((size, C_COLUMNS), dtype=np.int64)
    call_i[:old] = world.call_i
    free = np.zeros(size, dtype=np.int64)
    n = int(world.ints[I_CFREE])
    free[:n] = world.call_free[:n]
    free[n : n + size - old] = np.arange(size - 1, old - 1, -1)
    world.ints[I_CFREE] = n + size - old
    return world._replace(call_i=call_i, call_free=free)


def _grow_events(world: ChainWorld, size: int) -> ChainWorld:
    """More event nodes, and a heap as long (it never holds more entries than there are nodes)."""
    if size > KEY_NODE_MASK + 1:
        raise OverflowError(f"a chain run holds at most {KEY_NODE_MASK + 1} pending events")
    old = len(world.ev_t)
    h_time = np.zeros(size)
    h_time[:old] = world.h_time
    h_key = np.zeros(size, dtype=np.int64)
    h_key[:old] = world.h_key
    ev_i = np.zeros((size, E_COLUMNS), dtype=np.int64)
    ev_i[:old] = world.ev_i
    ev_t = np.zeros(size)
    ev_t[:old] = world.ev_t
    free = np.zeros(size, dtype=np.int64)
    n = int(world.ints[I_EFREE])
    free[:n] = world.ev_free[:n]
    free[n : n + size - old] = np.arange(size - 1, old - 1, -1)
    world.ints[I_EFREE] = n + size - old
    return world._replace(h_time=h_time, h_key=h_key, ev_i=ev_i, ev_t=ev_t, ev_free=free)

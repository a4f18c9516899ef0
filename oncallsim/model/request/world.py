"""The request engine's world: everything that carries from one minute to the next, as flat arrays.

Queues, in-flight work, the cache and the database's partitions carry across minutes (REQUESTS.md), so a
run of the request engine holds them here, beside the minute model's ``State``. Compiled code reads and
writes the arrays in place; positions in the small scalar arrays are named by the constants below.

Sizes are fixed when the run starts: workers = max fleet × workers per instance, the warm-up job's queries in
flight ``WARMUP_CONCURRENCY``. The arrival buffer and the waiting requests' slots grow before a minute that
needs more, up to ``QUEUE_CAPACITY`` waiting in all (one arriving then is rejected at once, as overload).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from oncallsim.model.errors import InvalidInput
from oncallsim.model.params import Params
from oncallsim.model.request.generator import seeded

__all__ = [
    "MAX_OBJECTS",
    "MAX_WORKERS",
    "QUEUE_CAPACITY",
    "QUEUE_START",
    "SAMPLE_FIELDS",
    "WARMUP_CONCURRENCY",
    "World",
    "new_world",
    "partitions_of",
    "with_queue_room",
    "with_room",
]

QUEUE_START = 1 << 12  # slots for waiting requests at first; the pool doubles before a minute that could fill it
QUEUE_CAPACITY = 1 << 22  # requests waiting in all at most; beyond it, overload (a proxy's limit)
WARMUP_CONCURRENCY = 1024  # the warm-up job's queries in flight; beyond it the job skips a read
MAX_OBJECTS = 5_000_000  # one expiry time per hot object: 40 MB at most
MAX_WORKERS = 200_000
HIST_BIN_S = 1e-4  # latency histograms: 0.1 ms bins up to the timeout, then one bin for timeouts
MAX_SAMPLES = 2_000

MODE_PIPELINE = 0  # the whole service: shedding, cache, database, builds
MODE_QUEUE_ONLY = 1  # M/M/N: a Poisson stream, exponential service of the app time, no cache or database

# ints[...]
(
    I_FREE,
    I_HEAP,
    I_SFREE,
    I_QLEN,
    I_WFREE,
    I_WCURSOR,
    I_ENABLED,
    I_NBAD,
    I_BUSY,
    I_NSAMPLES,
    I_SEQ,
    I_BALANCER,
    I_CLIENTS,
    I_DISCIPLINE,
    I_QUEUE_LIMIT,
    I_DEADLINES,
    I_PROTECTING,
    I_SELF_PROTECTION,
    I_ZONE_END,
    I_LIMITER,
    I_THROTTLE,
    I_RETRIES,
    I_BACKOFF,
    I_CFREE,
    I_DHEAD,
    I_DLEN,
    I_RHEAP,
    I_LIMITING,
    I_BUDGET_OUT,
) = range(29)
# qs[...]: per queue (one per instance, then the balancer's: ``POOLED`` = max fleet)
Q_HEAD, Q_TAIL, Q_LEN, Q_CURSOR = range(4)
N_INTS = 29
# cq[...]: each queue's discipline state (disciplines.py)
(
    CQ_FIRST_ABOVE,
    CQ_DROP_NEXT,
    CQ_COUNT,
    CQ_DROPPING,
    CQ_MIN_DELAY,
    CQ_INTERVAL_END,
    CQ_OVERLOADED,
    CQ_LASTCOUNT,
) = range(8)
MAX_CLIENTS = 64
# bal[...]: each client's view of each instance (balancers.py)
B_OUT, B_LAG, B_SUCCESS, B_CPU, B_STAMP, B_PICK = range(6)
# reals[...]
R_NEXT_STREAM = 0  # queue-only mode: the next arrival of the Poisson stream
R_TARGET, R_INTERVAL, R_LIFO_THRESHOLD = 1, 2, 3  # the queue discipline's constants (s, s, share)
R_NEXT_VIEW = 4  # the next time a balancer's view of the registry changes (instances.py)
R_ZONE_SHARE = 5  # the share of the instance slots in the zone that is off the network (0: none)
R_NEXT_TICK = 6  # the limiter's next CPU sample (every 500 ms; limiter.py)
R_THROTTLE_K = 7  # adaptive throttling's K (throttle.py)
R_RETRY_BASE, R_RETRY_CAP = 8, 9  # the clients' backoff base and cap (s; calls.py)
R_BUDGET, R_BUDGET_BURST = 10, 11  # the retry budget: tokens per call (0: no budget), tokens a client holds at most
R_RETRY_BAD = 12  # 1: a bad build's application errors are retried too
N_REALS = 13
# a call's state (calls.py): its slot is free; it waits for its current attempt; it waits out a backoff
C_FREE, C_WAITING, C_BACKOFF = range(3)
MAX_RETRIES = 5
CALLS_START = 1 << 10  # call slots at first; grown before a minute that could need more (with_room)

# an instance's health (instances.py): serving; connection refused (crashed); accepts and never answers
# (hung, still renewing its registration); off the network (its zone is out: no answers, no renewals)
UP, REFUSE, HANG, OFFLINE = range(4)
HEALTH = ("up", "refuse", "hang", "offline")
REFUSED_S = 0.001  # a refused connection fails this fast

# measures[...], reset every minute
(
    M_ARRIVED,
    M_SHED,
    M_ADMITTED,
    M_DECIDED,
    M_OVERLOAD,
    M_TIMEOUT,
    M_BAD_ERROR,
    M_WAITED,
    M_LOOKUPS,
    M_HITS,
    M_QUERIES,
    M_QUERY_TIME,
    M_DB_BUSY,
    M_COMPLETED,
    M_SERVICE,
    M_BUSY,
    M_WASTED,
    M_MAX_QUEUE,
    M_STARTED,
    M_STARTED_BAD,
    M_WAIT_SUM,
    M_WAIT_COUNT,
    M_PRESENT,
    M_DROPPED,
    M_ABANDONED,
    M_REFUSED,
    M_TO_QUEUE,
    M_TO_SLOW,
    M_TO_DEAD,
    M_TO_SERVICE,
    M_LIMITED,
    M_THROTTLED,
    M_SENT,
    M_RETRIES,
    M_RETRY_DENIED,
    M_OK,
    M_CUT_SHORT,
) = range(37)
N_MEASURES = 37
# where a timed-out request spent its time (M_TO_QUEUE + where): a queue; a slow instance; a dead one; in
# service (its CPU and database reads)
WHERE_QUEUE, WHERE_SLOW, WHERE_DEAD, WHERE_SERVICE = range(4)

# per-second lines: sec[line, second]
S_ARRIVALS, S_COMPLETED, S_ERRORS, S_QUEUE, S_IN_FLIGHT = range(5)
SECOND_LINES = ("arrivals", "completed", "errors", "queue", "in_flight")
# per instance: inst[line, instance]
N_SERVED, N_ERRORS, N_BUSY, N_BAD, N_LIMITED = range(5)
INSTANCE_LINES = ("served", "errors", "busy_s", "bad_build", "limited")

# sampled requests: samples[row, field]
SAMPLE_FIELDS = (
    "arrival_s",  # seconds since the minute's start (negative: arrived in an earlier minute)
    "low_priority",
    "outcome",  # OUTCOMES index
    "hit",  # 1 hit, 0 miss, −1 never looked up
    "wait_ms",
    "service_ms",
    "queries",
    "instance",  # −1: never reached one
    "response_ms",
)
(X_ARRIVAL, X_LOW, X_OUTCOME, X_HIT, X_WAIT, X_SERVICE, X_QUERIES, X_INSTANCE, X_RESPONSE) = range(9)
OUTCOMES = ("ok", "bad_build", "timeout", "overload", "shed", "pending", "dropped", "refused", "limited", "throttled")
O_OK, O_BAD, O_TIMEOUT, O_OVERLOAD, O_SHED, O_PENDING, O_DROPPED, O_REFUSED, O_LIMITED, O_THROTTLED = range(10)
THROTTLE_BUCKETS = 10  # adaptive throttling's window: 10 buckets of 300 ms (throttle.py)
LIMITER_BUCKETS = 100  # the limiter's window: 100 buckets of 100 ms (limiter.py)
INSTANCE_HIST_BIN_S = 1e-3  # per-instance latency histograms: 1 ms bins (the fleet view's p99)


class World(NamedTuple):
    """One run's requests, workers, cache and database (see the module's docstring)."""

    gen: npt.NDArray[np.uint64]  # the generator's four words
    ints: npt.NDArray[np.int64]
    reals: npt.NDArray[np.float64]
    expiry: npt.NDArray[np.float64]  # per hot object: cached until (s); a hit when it lies in the future
    db_free: npt.NDArray[np.float64]  # per partition: when its server is next free (FIFO: Lindley)
    w_busy: npt.NDArray[np.bool_]
    w_arrival: npt.NDArray[np.float64]
    w_start: npt.NDArray[np.float64]
    w_object: npt.NDArray[np.int64]
    w_queries: npt.NDArray[np.int64]  # database reads still to do
    w_miss: npt.NDArray[np.bool_]
    w_bad: npt.NDArray[np.bool_]
    w_tag: npt.NDArray[np.int64]  # sample row, −1 when not sampled
    w_instance: npt.NDArray[np.int64]  # the instance each worker belongs to (worker // workers per instance)
    w_client: npt.NDArray[np.int64]  # the client that sent the worker's request
    inst_busy: npt.NDArray[np.int64]  # busy workers per instance
    free: npt.NDArray[np.int64]  # the free workers, unordered (a random one takes the next request)
    free_pos: npt.NDArray[np.int64]  # each worker's place in ``free``, −1 when busy or not serving
    heap_time: npt.NDArray[np.float64]  # the next phase end of each busy worker / warm-up query: a binary heap
    heap_id: npt.NDArray[np.int64]
    s_arrival: npt.NDArray[np.float64]  # the waiting requests' slots (queues.py links them into queues)
    s_object: npt.NDArray[np.int64]
    s_tag: npt.NDArray[np.int64]
    s_client: npt.NDArray[np.int64]
    s_next: npt.NDArray[np.int64]  # the next slot of the same queue, −1 at its tail
    s_prev: npt.NDArray[np.int64]  # the previous one, −1 at its head (adaptive LIFO serves the tail)
    s_free: npt.NDArray[np.int64]  # the free slots (a stack; ints[I_SFREE] of them)
    qs: npt.NDArray[np.int64]  # qs[Q_HEAD | Q_TAIL | Q_LEN | Q_CURSOR, queue]; −1: none
    cq: npt.NDArray[np.float64]  # cq[CQ_…, queue]: the queue discipline's state
    warm_object: npt.NDArray[np.int64]  # the warm-up job's queries in flight: the object each will store
    warm_free: npt.NDArray[np.int64]
    measures: npt.NDArray[np.float64]
    latency_hist: npt.NDArray[np.int64]  # response times of the minute's decided requests (timeouts last)
    wait_hist: npt.NDArray[np.int64]  # queue waits of the minute's requests that started service
    seconds: npt.NDArray[np.float64]
    instances: npt.NDArray[np.float64]
    samples: npt.NDArray[np.float64]
    arrivals: npt.NDArray[np.float64]  # the minute's arrival times (grown before a minute that needs more)
    bal: npt.NDArray[np.float64]  # bal[B_…, client, instance]: what each client's balancer knows
    rr: npt.NDArray[np.int64]  # each client's round-robin position
    w_held: npt.NDArray[np.bool_]  # the worker holds a connection its dead instance never answers
    speed: npt.NDArray[np.float64]  # per instance: 1 healthy; a slow one takes 1/speed times the CPU time
    health: npt.NDArray[np.int64]  # per instance: UP, REFUSE, HANG, OFFLINE
    ejected: npt.NDArray[np.int64]  # per instance: 1 when the operator took it out of rotation
    reg: npt.NDArray[np.int64]  # per instance: 1 while the registry lists it (discovery.py)
    reg_prev: npt.NDArray[np.int64]  # the listing before its last change
    reg_at: npt.NDArray[np.float64]  # when the listing last changed (s); balancers learn of it later
    evict_at: npt.NDArray[np.float64]  # a coming eviction within the minute (s), ∞ none
    renew_stop: npt.NDArray[np.float64]  # since when the instance no longer renews (s), ∞ while it does
    reg_since: npt.NDArray[np.float64]  # when its listing began: it renews every interval from then (s)
    replacing: npt.NDArray[np.int64]  # per instance: 1 while a fresh one boots to take its place
    view_lag: npt.NDArray[np.float64]  # per client: how long after a change its long-poll learns of it (s)
    rot: npt.NDArray[np.int64]  # rot[client, j]: the instances in that client's rotation
    nrot: npt.NDArray[np.int64]  # how many; the last row (MAX_CLIENTS) is the pooled balancer's
    inst_hist: npt.NDArray[np.int64]  # per instance: response times of the minute (1 ms bins, timeouts last)
    cpu: npt.NDArray[np.float64]  # per instance: the limiter's CPU EMA (‰), sampled every 500 ms
    cpu_acc: npt.NDArray[np.float64]  # per instance: CPU seconds of its workers since the last sample
    drop_at: npt.NDArray[np.float64]  # per instance: the limiter's first drop of this episode (s), −1 none
    lim_pass: npt.NDArray[np.int64]  # lim_pass[instance, bucket]: completions in that 100 ms bucket
    lim_rt: npt.NDArray[np.float64]  # … their response times summed (ms, each rounded up)
    lim_stamp: npt.NDArray[np.int64]  # … the bucket's number (time / 100 ms), to know a stale one
    thr: npt.NDArray[np.float64]  # thr[0 requests | 1 accepts, client, bucket]: adaptive throttling's window
    thr_stamp: npt.NDArray[np.int64]  # thr_stamp[client, bucket]: the bucket's number (time / 300 ms)
    w_call: npt.NDArray[np.int64]  # the call (calls.py) whose attempt the worker holds, −1 none (no retries)
    s_call: npt.NDArray[np.int64]  # … the waiting request's
    c_arrival: npt.NDArray[np.float64]  # per call: when it opened (its user's request arrived)
    c_sent: npt.NDArray[np.float64]  # when its current attempt was sent
    c_started: npt.NDArray[np.float64]  # when that attempt started service (−∞: not yet)
    c_inst: npt.NDArray[np.int64]  # the instance serving it, −1 none yet
    c_object: npt.NDArray[np.int64]
    c_tag: npt.NDArray[np.int64]
    c_client: npt.NDArray[np.int64]
    c_attempt: npt.NDArray[np.int64]  # the current attempt's number (0: the first)
    c_state: npt.NDArray[np.int64]  # C_FREE, C_WAITING, C_BACKOFF
    c_sleep: npt.NDArray[np.float64]  # decorrelated jitter's previous sleep (s)
    c_free: npt.NDArray[np.int64]  # the free call slots (a stack; ints[I_CFREE] of them)
    d_time: npt.NDArray[np.float64]  # the attempts' deadlines, in send order: a ring from ints[I_DHEAD]
    d_call: npt.NDArray[np.int64]
    r_time: npt.NDArray[np.float64]  # the calls waiting out a backoff: a heap on when it ends
    r_id: npt.NDArray[np.int64]
    tokens: npt.NDArray[np.float64]  # per client: its retry budget's tokens


def partitions_of(params: Params) -> tuple[int, float]:
    """(partitions, mean query time of one partition in s): capacity / (1 / base time) servers of the
    base query time each, so that the database's capacity and its idle query time are the model's."""
    base_s = params.db_base_query_ms / 1000.0
    count = max(1, round(params.db_capacity_qps * base_s))
    return count, count / params.db_capacity_qps


def check_params(params: Params) -> None:
    """What the request engine cannot hold: one expiry per hot object, one slot per worker."""
    if params.hot_objects > MAX_OBJECTS:
        raise InvalidInput(
            "hot_objects", f"must be at most {MAX_OBJECTS:,} on the request engine, got {params.hot_objects:g}"
        )
    workers = params.max_fleet * params.workers_per_instance
    if workers > MAX_WORKERS:
        raise InvalidInput(
            "max_fleet",
            f"max_fleet × workers_per_instance must be at most {MAX_WORKERS:,} on the request engine, got {workers:,}",
        )


def new_world(params: Params, seed: int, queue_capacity: int = QUEUE_START) -> World:
    """An empty world: no request in flight, an empty cache (the engine fills it before minute 0)."""
    check_params(params)
    workers = params.max_fleet * params.workers_per_instance
    partitions, _ = partitions_of(params)
    bins = round(params.timeout_s / HIST_BIN_S) + 1
    heap = workers + WARMUP_CONCURRENCY
    ints = np.zeros(N_INTS, dtype=np.int64)
    ints[I_WFREE] = WARMUP_CONCURRENCY
    ints[I_SFREE] = queue_capacity
    ints[I_CLIENTS] = 1
    ints[I_SELF_PROTECTION] = 1
    ints[I_CFREE] = CALLS_START
    return World(
        gen=seeded(seed),
        ints=ints,
        reals=np.zeros(N_REALS),
        expiry=np.full(int(params.hot_objects), -np.inf),
        db_free=np.full(partitions, -np.inf),  # free since ever
        w_busy=np.zeros(workers, dtype=np.bool_),
        w_arrival=np.zeros(workers),
        w_start=np.zeros(workers),
        w_object=np.zeros(workers, dtype=np.int64),
        w_queries=np.zeros(workers, dtype=np.int64),
        w_miss=np.zeros(workers, dtype=np.bool_),
        w_bad=np.zeros(workers, dtype=np.bool_),
        w_tag=np.full(workers, -1, dtype=np.int64),
        w_instance=np.arange(workers, dtype=np.int64) // params.workers_per_instance,
        w_client=np.zeros(workers, dtype=np.int64),
        inst_busy=np.zeros(params.max_fleet, dtype=np.int64),
        free=np.zeros(workers, dtype=np.int64),
        free_pos=np.full(workers, -1, dtype=np.int64),
        heap_time=np.zeros(heap),
        heap_id=np.zeros(heap, dtype=np.int64),
        s_arrival=np.zeros(queue_capacity),
        s_object=np.zeros(queue_capacity, dtype=np.int64),
        s_tag=np.full(queue_capacity, -1, dtype=np.int64),
        s_client=np.zeros(queue_capacity, dtype=np.int64),
        s_next=np.full(queue_capacity, -1, dtype=np.int64),
        s_prev=np.full(queue_capacity, -1, dtype=np.int64),
        s_free=np.arange(queue_capacity - 1, -1, -1, dtype=np.int64),
        qs=_empty_queues(params.max_fleet + 1),
        cq=np.zeros((8, params.max_fleet + 1)),
        warm_object=np.zeros(WARMUP_CONCURRENCY, dtype=np.int64),
        warm_free=np.arange(WARMUP_CONCURRENCY, dtype=np.int64),
        measures=np.zeros(N_MEASURES),
        latency_hist=np.zeros(bins + 1, dtype=np.int64),
        wait_hist=np.zeros(bins + 1, dtype=np.int64),
        seconds=np.zeros((len(SECOND_LINES), 60)),
        instances=np.zeros((len(INSTANCE_LINES), params.max_fleet)),
        samples=np.zeros((MAX_SAMPLES, len(SAMPLE_FIELDS))),
        arrivals=np.zeros(1024),
        bal=_balancer_views(params.max_fleet),
        rr=np.full(MAX_CLIENTS, -1, dtype=np.int64),
        w_held=np.zeros(workers, dtype=np.bool_),
        speed=np.ones(params.max_fleet),
        health=np.zeros(params.max_fleet, dtype=np.int64),
        ejected=np.zeros(params.max_fleet, dtype=np.int64),
        reg=np.ones(params.max_fleet, dtype=np.int64),  # listed since ever (discovery.register_initial)
        reg_prev=np.ones(params.max_fleet, dtype=np.int64),
        reg_at=np.full(params.max_fleet, -np.inf),
        evict_at=np.full(params.max_fleet, np.inf),
        renew_stop=np.full(params.max_fleet, np.inf),
        reg_since=np.zeros(params.max_fleet),
        replacing=np.zeros(params.max_fleet, dtype=np.int64),
        view_lag=np.zeros(MAX_CLIENTS),
        rot=np.zeros((MAX_CLIENTS + 1, params.max_fleet), dtype=np.int64),
        nrot=np.zeros(MAX_CLIENTS + 1, dtype=np.int64),
        inst_hist=np.zeros((params.max_fleet, round(params.timeout_s / INSTANCE_HIST_BIN_S) + 2), dtype=np.int64),
        cpu=np.zeros(params.max_fleet),
        cpu_acc=np.zeros(params.max_fleet),
        drop_at=np.full(params.max_fleet, -1.0),
        lim_pass=np.zeros((params.max_fleet, LIMITER_BUCKETS), dtype=np.int64),
        lim_rt=np.zeros((params.max_fleet, LIMITER_BUCKETS)),
        lim_stamp=np.full((params.max_fleet, LIMITER_BUCKETS), -1, dtype=np.int64),
        thr=np.zeros((2, MAX_CLIENTS, THROTTLE_BUCKETS)),
        thr_stamp=np.full((MAX_CLIENTS, THROTTLE_BUCKETS), -1, dtype=np.int64),
        w_call=np.full(workers, -1, dtype=np.int64),
        s_call=np.full(queue_capacity, -1, dtype=np.int64),
        **_calls(CALLS_START, 4 * CALLS_START),
        tokens=np.zeros(MAX_CLIENTS),
    )


def _calls(capacity: int, deadlines: int) -> dict[str, Any]:
    """Empty call slots, all free (taken lowest first), and an empty deadline ring and backoff heap."""
    return {
        "c_arrival": np.zeros(capacity),
        "c_sent": np.zeros(capacity),
        "c_started": np.zeros(capacity),
        "c_inst": np.full(capacity, -1, dtype=np.int64),
        "c_object": np.zeros(capacity, dtype=np.int64),
        "c_tag": np.full(capacity, -1, dtype=np.int64),
        "c_client": np.zeros(capacity, dtype=np.int64),
        "c_attempt": np.zeros(capacity, dtype=np.int64),
        "c_state": np.zeros(capacity, dtype=np.int64),
        "c_sleep": np.zeros(capacity),
        "c_free": np.arange(capacity - 1, -1, -1, dtype=np.int64),
        "d_time": np.zeros(deadlines),
        "d_call": np.zeros(deadlines, dtype=np.int64),
        "r_time": np.zeros(capacity),
        "r_id": np.zeros(capacity, dtype=np.int64),
    }


def copy_world(world: World) -> World:
    """An independent copy (a what-if that starts from a minute of this run)."""
    return World._make(a.copy() for a in world)


def with_room(world: World, arrivals: int) -> World:
    """The world with room for a minute of ``arrivals``: its arrival buffer, and its queue should they all
    wait (compiled code does not allocate)."""
    if arrivals > len(world.arrivals):
        world = world._replace(arrivals=np.zeros(max(arrivals, 2 * len(world.arrivals))))
    return with_call_room(with_queue_room(world, arrivals), arrivals)


def with_call_room(world: World, arrivals: int) -> World:
    """The world with room for the minute's calls (calls.py) should ``arrivals`` each open one, and for their
    deadlines: every call alive may send all its attempts within the minute."""
    retries = int(world.ints[I_RETRIES])
    capacity = len(world.c_state)
    live = capacity - int(world.ints[I_CFREE])
    if retries == 0 and live == 0:
        return world
    opening = arrivals if retries > 0 else 0
    need_calls = live + opening
    need_deadlines = int(world.ints[I_DLEN]) + opening * (retries + 1) + live * (MAX_RETRIES + 1)
    if need_calls <= capacity and need_deadlines <= len(world.d_time):
        return world
    grown = capacity
    while grown < need_calls:
        grown *= 2
    ring = len(world.d_time)
    while ring < need_deadlines:
        ring *= 2
    fresh = _calls(grown, ring)
    for name in ("c_arrival", "c_sent", "c_started", "c_inst", "c_object", "c_tag", "c_client", "c_attempt",
                 "c_state", "c_sleep", "r_time", "r_id"):  # fmt: skip
        fresh[name][:capacity] = getattr(world, name)
    free = int(world.ints[I_CFREE])
    added = np.arange(grown - 1, capacity - 1, -1, dtype=np.int64)
    fresh["c_free"][: len(added)] = added
    fresh["c_free"][len(added) : len(added) + free] = world.c_free[:free]  # the old free slots are taken first
    world.ints[I_CFREE] = free + len(added)
    head, count, old = int(world.ints[I_DHEAD]), int(world.ints[I_DLEN]), len(world.d_time)
    order = (head + np.arange(count)) % old  # the ring unrolled from its head
    fresh["d_time"][:count] = world.d_time[order]
    fresh["d_call"][:count] = world.d_call[order]
    world.ints[I_DHEAD] = 0
    return world._replace(**fresh)


def with_queue_room(world: World, more: int) -> World:
    """The world with room for ``more`` requests more in its queues (``QUEUE_CAPACITY`` in all at most): the
    slot pool doubles, as often as needed, before the minute that could fill it (links stay valid)."""
    free = int(world.ints[I_SFREE])
    capacity = len(world.s_arrival)
    want = min(capacity - free + more, QUEUE_CAPACITY)
    if want <= capacity:
        return world
    grown = capacity
    while grown < want:
        grown *= 2
    added = np.arange(grown - 1, capacity - 1, -1, dtype=np.int64)  # the new slots, taken lowest first

    def longer(old: Any, fill: Any) -> Any:
        new = np.full(grown, fill, dtype=old.dtype)
        new[:capacity] = old
        return new

    s_free = np.empty(grown, dtype=np.int64)
    s_free[: len(added)] = added
    s_free[len(added) : len(added) + free] = world.s_free[:free]  # the old free slots are taken first
    world.ints[I_SFREE] = free + len(added)
    return world._replace(
        s_arrival=longer(world.s_arrival, 0.0),
        s_object=longer(world.s_object, 0),
        s_tag=longer(world.s_tag, -1),
        s_client=longer(world.s_client, 0),
        s_call=longer(world.s_call, -1),
        s_next=longer(world.s_next, -1),
        s_prev=longer(world.s_prev, -1),
        s_free=s_free,
    )


def _balancer_views(instances: int) -> npt.NDArray[np.float64]:
    """Every client's view of every instance as it starts: nothing outstanding, no latency sample, full
    success, half CPU (balancers.py)."""
    from oncallsim.model.request.balancers import CPU_START, SUCCESS_START

    bal = np.zeros((6, MAX_CLIENTS, instances))
    bal[B_SUCCESS] = SUCCESS_START
    bal[B_CPU] = CPU_START
    bal[B_PICK] = -np.inf
    return bal


def _empty_queues(count: int) -> npt.NDArray[np.int64]:
    qs = np.full((4, count), -1, dtype=np.int64)
    qs[Q_LEN] = 0
    return qs

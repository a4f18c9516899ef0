"""The request engine's waiting lines: FIFO queues as linked lists over one pool of slots.

One queue per instance plus one at the balancer (``pooled_queue``): the pooled balancer uses the balancer's, the
others each instance's own. A slot holds a waiting request (arrival time, object, sample tag, priority class); the
pool grows from Python before a minute that could fill it (compiled code does not allocate).

Each queue is two linked lists: its critical requests' (column ``q``) and its sheddable ones' (column
``sheddable(q)``, the second half of ``qs``). With ``queue_priority`` = ``none`` every request waits in the first
(the sheddable list stays empty: one FIFO line, as before priorities); with ``strict`` a sheddable request waits in
the second, and a free worker takes from it only when the critical list is empty (disciplines.py). A queue's
length, its limit and what a limiter counts are the two lists together (``waiting``).

Each queue keeps a cursor on its first request whose client has not yet given up as counted: a minute's end
counts the timeouts of those still waiting from there on, in arrival order, without rescanning the ones an
earlier minute counted.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from oncallsim.model.jit import by_reference
from oncallsim.model.kernel import inline_step, step

__all__ = [
    "base_queue",
    "dequeue",
    "dequeue_tail",
    "enqueue",
    "enqueue_as",
    "pooled_queue",
    "room",
    "sheddable",
    "waiting",
]

QUEUE_START = 1 << 12  # slots for waiting requests at first; the pool doubles before a minute that could fill it
QUEUE_CAPACITY = 1 << 22  # requests waiting in all at most; beyond it, overload (a proxy's limit)

# qs[...]: per list (one per instance, then the balancer's — max fleet —; then the same for the sheddable class)
Q_HEAD, Q_TAIL, Q_LEN, Q_CURSOR = range(4)
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
# ints[...]: free slots; requests waiting in all; the discipline (``disciplines.DISCIPLINES``); each queue's limit
# (0: none); 1 when an instance abandons work whose client gave up; CoDel's code (``disciplines.CODEL_PRESETS``),
# its target and interval (ms; 0: the preset's); the server's own cap on a request's work (ms; 0: none); the
# priority rule (``disciplines.PRIORITIES``: 0 none, 1 strict)
(
    I_SFREE,
    I_QLEN,
    I_DISCIPLINE,
    I_QUEUE_LIMIT,
    I_DEADLINES,
    I_CODEL_PRESET,
    I_CODEL_TARGET_MS,
    I_CODEL_INTERVAL_MS,
    I_SERVER_TIMEOUT_MS,
    I_PRIORITY,
) = range(10)


@by_reference
class Queues(NamedTuple):
    """The waiting requests' slots, the queues linking them, each queue's discipline state and the server
    side's queue settings (disciplines.py)."""

    ints: npt.NDArray[np.int64]
    s_arrival: npt.NDArray[np.float64]
    s_object: npt.NDArray[np.int64]
    s_tag: npt.NDArray[np.int64]
    s_client: npt.NDArray[np.int64]
    s_call: npt.NDArray[np.int64]  # the call whose attempt waits (calls.py), −1 none
    s_low: npt.NDArray[np.bool_]  # its request is sheddable (the low-priority class), else critical
    s_next: npt.NDArray[np.int64]  # the next slot of the same queue, −1 at its tail
    s_prev: npt.NDArray[np.int64]  # the previous one, −1 at its head (adaptive LIFO serves the tail)
    s_free: npt.NDArray[np.int64]  # the free slots (a stack; ints[I_SFREE] of them)
    qs: npt.NDArray[np.int64]  # qs[Q_HEAD | Q_TAIL | Q_LEN | Q_CURSOR, list]; −1: none
    cq: npt.NDArray[np.float64]  # cq[CQ_…, list]: the queue discipline's state, per class (CoDel per class)


def new_queues(instances: int, capacity: int = QUEUE_START) -> Queues:
    """Empty queues, one per instance slot and the balancer's (two lists each: critical, sheddable), over a pool
    of ``capacity`` slots."""
    ints = np.zeros(10, dtype=np.int64)
    ints[I_SFREE] = capacity
    qs = np.full((4, 2 * (instances + 1)), -1, dtype=np.int64)
    qs[Q_LEN] = 0
    return Queues(
        ints=ints,
        s_arrival=np.zeros(capacity),
        s_object=np.zeros(capacity, dtype=np.int64),
        s_tag=np.full(capacity, -1, dtype=np.int64),
        s_client=np.zeros(capacity, dtype=np.int64),
        s_call=np.full(capacity, -1, dtype=np.int64),
        s_low=np.zeros(capacity, dtype=np.bool_),
        s_next=np.full(capacity, -1, dtype=np.int64),
        s_prev=np.full(capacity, -1, dtype=np.int64),
        s_free=np.arange(capacity - 1, -1, -1, dtype=np.int64),
        qs=qs,
        cq=np.zeros((8, 2 * (instances + 1))),
    )


def with_room(queues: Queues, more: int) -> Queues:
    """The queues with room for ``more`` requests more (``QUEUE_CAPACITY`` in all at most): the slot pool
    doubles, as often as needed, before the minute that could fill it (links stay valid); after a burst, once
    what could wait is an eighth of the pool or less, it shrinks back (``shrunk``)."""
    free = int(queues.ints[I_SFREE])
    capacity = len(queues.s_arrival)
    want = min(capacity - free + more, QUEUE_CAPACITY)
    if want <= capacity:
        return shrunk(queues, want) if capacity > QUEUE_START and 8 * want <= capacity else queues
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
    s_free[len(added) : len(added) + free] = queues.s_free[:free]  # the old free slots are taken first
    queues.ints[I_SFREE] = free + len(added)
    return queues._replace(
        s_arrival=longer(queues.s_arrival, 0.0),
        s_object=longer(queues.s_object, 0),
        s_tag=longer(queues.s_tag, -1),
        s_client=longer(queues.s_client, 0),
        s_call=longer(queues.s_call, -1),
        s_low=longer(queues.s_low, False),
        s_next=longer(queues.s_next, -1),
        s_prev=longer(queues.s_prev, -1),
        s_free=s_free,
    )


def shrunk(queues: Queues, want: int) -> Queues:
    """The queues in a smaller pool (at least ``QUEUE_START`` slots, twice ``want`` rounded up to a power of two):
    the waiting requests move to the lowest slots in the order of their old ones, their links and each queue's
    head, tail and cursor renumbered with them; a slot's number never changes what happens to its request."""
    capacity = len(queues.s_arrival)
    free = int(queues.ints[I_SFREE])
    size = QUEUE_START
    while size < 2 * want:
        size *= 2
    if size >= capacity:
        return queues
    taken = np.ones(capacity, dtype=np.bool_)
    taken[queues.s_free[:free]] = False
    used = np.flatnonzero(taken)  # ascending: the waiting requests keep their order
    renumber = np.full(capacity + 1, -1, dtype=np.int64)  # old slot → new; index −1 (the last) maps −1 to −1
    renumber[used] = np.arange(len(used), dtype=np.int64)

    def moved(old: Any, fill: Any, links: bool = False) -> Any:
        new = np.full(size, fill, dtype=old.dtype)
        new[: len(used)] = renumber[old[used]] if links else old[used]
        return new

    qs = queues.qs.copy()
    for row in (Q_HEAD, Q_TAIL, Q_CURSOR):
        qs[row] = renumber[qs[row]]
    s_free = np.empty(size, dtype=np.int64)  # room for every slot: all may be free again
    s_free[: size - len(used)] = np.arange(size - 1, len(used) - 1, -1, dtype=np.int64)  # taken lowest first
    queues.ints[I_SFREE] = size - len(used)
    return queues._replace(
        s_arrival=moved(queues.s_arrival, 0.0),
        s_object=moved(queues.s_object, 0),
        s_tag=moved(queues.s_tag, -1),
        s_client=moved(queues.s_client, 0),
        s_call=moved(queues.s_call, -1),
        s_low=moved(queues.s_low, False),
        s_next=moved(queues.s_next, -1, links=True),
        s_prev=moved(queues.s_prev, -1, links=True),
        s_free=s_free,
        qs=qs,
    )


@step
def pooled_queue(queues: Any) -> int:
    """The balancer's queue (the pooled balancer's): after every instance's."""
    return queues.qs.shape[1] // 2 - 1


@step
def sheddable(queues: Any, q: int) -> int:
    """The list of queue ``q``'s sheddable requests (used with ``queue_priority`` = strict)."""
    return q + queues.qs.shape[1] // 2


@step
def base_queue(queues: Any, column: int) -> int:
    """The queue a list belongs to (its instance, or the balancer's)."""
    half = queues.qs.shape[1] // 2
    return column - half if column >= half else column


@step
def waiting(queues: Any, q: int) -> int:
    """Requests waiting in queue ``q``, both classes."""
    return queues.qs[Q_LEN, q] + queues.qs[Q_LEN, q + queues.qs.shape[1] // 2]


@step
def room(queues: Any) -> int:
    """Free slots left in the pool."""
    return int(queues.ints[I_SFREE])


@inline_step
def enqueue(queues: Any, qid: int, arrival: float, obj: int, tag: int, client: int, call: int) -> None:
    """Append a request (an attempt of ``call``, −1 none) to queue ``qid`` (the caller checked ``room``)."""
    n = queues.ints[I_SFREE] - 1
    queues.ints[I_SFREE] = n
    slot = queues.s_free[n]
    queues.s_arrival[slot] = arrival
    queues.s_object[slot] = obj
    queues.s_tag[slot] = tag
    queues.s_client[slot] = client
    queues.s_call[slot] = call
    queues.s_low[slot] = False
    queues.s_next[slot] = -1
    qs = queues.qs
    queues.s_prev[slot] = qs[Q_TAIL, qid]
    if qs[Q_LEN, qid] == 0:
        qs[Q_HEAD, qid] = slot
    else:
        queues.s_next[qs[Q_TAIL, qid]] = slot
    qs[Q_TAIL, qid] = slot
    qs[Q_LEN, qid] += 1
    if qs[Q_CURSOR, qid] < 0:
        qs[Q_CURSOR, qid] = slot
    queues.ints[I_QLEN] += 1


@inline_step
def enqueue_as(queues: Any, q: int, arrival: float, obj: int, tag: int, client: int, call: int, low: bool) -> int:
    """Append a request of its class (``low``: sheddable) to queue ``q``: to its sheddable list under strict
    priority, else to its one line. Returns the list it joined."""
    column = q + queues.qs.shape[1] // 2 if low and queues.ints[I_PRIORITY] != 0 else q
    enqueue(queues, column, arrival, obj, tag, client, call)
    queues.s_low[queues.qs[Q_TAIL, column]] = low
    return column


@inline_step
def dequeue(queues: Any, qid: int) -> int:
    """Take the head of queue ``qid`` (not empty); returns its slot, valid until the next ``enqueue``."""
    qs = queues.qs
    slot = qs[Q_HEAD, qid]
    after = queues.s_next[slot]
    qs[Q_HEAD, qid] = after
    qs[Q_LEN, qid] -= 1
    if qs[Q_LEN, qid] == 0:
        qs[Q_TAIL, qid] = -1
    else:
        queues.s_prev[after] = -1
    if qs[Q_CURSOR, qid] == slot:
        qs[Q_CURSOR, qid] = after
    _release(queues, slot)
    return slot


@step
def dequeue_tail(queues: Any, qid: int) -> int:
    """Take the newest request of queue ``qid`` (not empty): adaptive LIFO's service order."""
    qs = queues.qs
    slot = qs[Q_TAIL, qid]
    before = queues.s_prev[slot]
    qs[Q_TAIL, qid] = before
    qs[Q_LEN, qid] -= 1
    if qs[Q_LEN, qid] == 0:
        qs[Q_HEAD, qid] = -1
    else:
        queues.s_next[before] = -1
    if qs[Q_CURSOR, qid] == slot:  # it was the only one not yet counted
        qs[Q_CURSOR, qid] = -1
    _release(queues, slot)
    return slot


@inline_step
def _release(queues: Any, slot: int) -> None:
    queues.s_free[queues.ints[I_SFREE]] = slot
    queues.ints[I_SFREE] += 1
    queues.ints[I_QLEN] -= 1

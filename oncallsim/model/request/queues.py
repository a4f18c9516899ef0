"""The request engine's waiting lines: FIFO queues as linked lists over one pool of slots.

One queue per instance plus one at the balancer (``POOLED``): the pooled balancer uses the balancer's, the
others each instance's own. A slot holds a waiting request (arrival time, object, sample tag); the pool
grows from Python before a minute that could fill it (compiled code does not allocate).

Each queue keeps a cursor on its first request whose client has not yet given up as counted: a minute's end
counts the timeouts of those still waiting from there on, in arrival order, without rescanning the ones an
earlier minute counted.
"""

from __future__ import annotations

from typing import Any

from oncallsim.model.kernel import inline_step, step
from oncallsim.model.request.world import I_QLEN, I_SFREE, Q_CURSOR, Q_HEAD, Q_LEN, Q_TAIL

__all__ = ["dequeue", "dequeue_tail", "enqueue", "room"]


@step
def room(w: Any) -> int:
    """Free slots left in the pool."""
    return int(w.ints[I_SFREE])


@inline_step
def enqueue(w: Any, qid: int, arrival: float, obj: int, tag: int, client: int, call: int) -> None:
    """Append a request (an attempt of ``call``, −1 none) to queue ``qid`` (the caller checked ``room``)."""
    n = w.ints[I_SFREE] - 1
    w.ints[I_SFREE] = n
    slot = w.s_free[n]
    w.s_arrival[slot] = arrival
    w.s_object[slot] = obj
    w.s_tag[slot] = tag
    w.s_client[slot] = client
    w.s_call[slot] = call
    w.s_next[slot] = -1
    qs = w.qs
    w.s_prev[slot] = qs[Q_TAIL, qid]
    if qs[Q_LEN, qid] == 0:
        qs[Q_HEAD, qid] = slot
    else:
        w.s_next[qs[Q_TAIL, qid]] = slot
    qs[Q_TAIL, qid] = slot
    qs[Q_LEN, qid] += 1
    if qs[Q_CURSOR, qid] < 0:
        qs[Q_CURSOR, qid] = slot
    w.ints[I_QLEN] += 1


@inline_step
def dequeue(w: Any, qid: int) -> int:
    """Take the head of queue ``qid`` (not empty); returns its slot, valid until the next ``enqueue``."""
    qs = w.qs
    slot = qs[Q_HEAD, qid]
    after = w.s_next[slot]
    qs[Q_HEAD, qid] = after
    qs[Q_LEN, qid] -= 1
    if qs[Q_LEN, qid] == 0:
        qs[Q_TAIL, qid] = -1
    else:
        w.s_prev[after] = -1
    if qs[Q_CURSOR, qid] == slot:
        qs[Q_CURSOR, qid] = after
    _release(w, slot)
    return slot


@step
def dequeue_tail(w: Any, qid: int) -> int:
    """Take the newest request of queue ``qid`` (not empty): adaptive LIFO's service order."""
    qs = w.qs
    slot = qs[Q_TAIL, qid]
    before = w.s_prev[slot]
    qs[Q_TAIL, qid] = before
    qs[Q_LEN, qid] -= 1
    if qs[Q_LEN, qid] == 0:
        qs[Q_HEAD, qid] = -1
    else:
        w.s_next[before] = -1
    if qs[Q_CURSOR, qid] == slot:  # it was the only one not yet counted
        qs[Q_CURSOR, qid] = -1
    _release(w, slot)
    return slot


@inline_step
def _release(w: Any, slot: int) -> None:
    w.s_free[w.ints[I_SFREE]] = slot
    w.ints[I_SFREE] += 1
    w.ints[I_QLEN] -= 1

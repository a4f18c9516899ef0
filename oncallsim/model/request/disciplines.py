"""Queue disciplines: which waiting request a free worker takes, and which it drops (reference §4).

- ``fifo``: the oldest; nothing dropped (a queue past saturation grows until every request times out).
- ``codel``: the oldest, with CoDel's drops (Nichols & Jacobson; RFC 8289, its Linux re-entry rule): once
  the oldest request's sojourn has stayed above ``target`` (5 ms) for ``interval`` (100 ms), drop it and
  the next ones at times interval/√count apart, until a sojourn falls below the target; back above it
  within 16 intervals, the drop count resumes from the last episode's.
- ``adaptive-lifo``: Facebook's adaptive LIFO with its CoDel (folly ``Codel.cpp``, HBase's
  ``AdaptiveLifoCoDelCallQueue``): the newest request first while the queue is longer than ``LIFO_THRESHOLD``
  (0.8) × its limit, else the oldest; the queue is overloaded for an interval when the smallest delay of the
  interval before exceeded the target, and while overloaded a request that waited over 2 × target is
  dropped (the first request of an interval is never dropped).

A dropped request answers at once with an error (a 503); its client learns of it. ``queue_limit`` caps each
queue (0: none); a request arriving to a full queue is dropped too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from oncallsim.model.control_spec import REQUEST_ONLY, ControlSpec
from oncallsim.model.errors import InvalidInput
from oncallsim.model.kernel import step
from oncallsim.model.request.balancers import A_DROPPED
from oncallsim.model.request.calls import I_REVISION, failed, reply
from oncallsim.model.request.outcomes import O_DROPPED, second_of
from oncallsim.model.request.queues import (
    CQ_COUNT,
    CQ_DROP_NEXT,
    CQ_DROPPING,
    CQ_FIRST_ABOVE,
    CQ_INTERVAL_END,
    CQ_LASTCOUNT,
    CQ_MIN_DELAY,
    CQ_OVERLOADED,
    I_DEADLINES,
    I_DISCIPLINE,
    I_QUEUE_LIMIT,
    Q_LEN,
    dequeue,
    dequeue_tail,
)

__all__ = ["ADAPTIVE_LIFO", "CODEL", "CONTROLS", "DISCIPLINES", "FIFO", "TARGET_S", "drop", "full", "take"]

DISCIPLINES = ("fifo", "codel", "adaptive-lifo")
FIFO, CODEL, ADAPTIVE_LIFO = range(len(DISCIPLINES))
TARGET_S = 5.0 / 1000.0  # CoDel's target sojourn (RFC 8289's 5 ms; adaptive LIFO's too)
INTERVAL_S = 100.0 / 1000.0  # CoDel's interval (100 ms)
LIFO_THRESHOLD = 0.8  # adaptive LIFO serves the newest first past this share of the queue's limit


def check_settings(settings: Mapping[str, Any], changed: str) -> None:
    """Adaptive LIFO needs a queue limit (it serves the newest first past a share of it)."""
    if settings["queue_discipline"] == "adaptive-lifo" and settings["queue_limit"] == 0:
        if changed == "queue_discipline":
            raise InvalidInput(
                changed,
                "adaptive-lifo serves the newest first past a share of the queue's limit: set queue_limit first",
            )
        raise InvalidInput(changed, "adaptive-lifo needs a queue limit above 0: choose another queue_discipline first")


CONTROLS = (
    ControlSpec(
        "queue_discipline",
        "choice",
        "Queue discipline",
        "How each instance's queue is served: fifo; codel (drops a request that waited past 5 ms while the "
        "queue has stood above that for 100 ms: it answers 503 at once); adaptive-lifo (newest first once "
        "the queue is past 80 % of its limit, with CoDel). A drop is an error at once, not a timeout.",
        "fifo",
        choices=DISCIPLINES,
        engines=REQUEST_ONLY,
        section="overload",
        piece="queues",
        slot=I_DISCIPLINE,
        check=check_settings,
        moves={"": "switched the queues to %(value)s"},
        in_force={"fifo": "FIFO queues", "codel": "CoDel queues", "adaptive-lifo": "adaptive LIFO queues"},
    ),
    ControlSpec(
        "queue_limit",
        "int",
        "Queue limit",
        "Requests a queue may hold (0 = no limit); one more is answered 503 at once. adaptive-lifo needs one.",
        0,
        0,
        100_000,
        "requests",
        step=10,
        engines=REQUEST_ONLY,
        section="overload",
        piece="queues",
        slot=I_QUEUE_LIMIT,
        check=check_settings,
        moves={"": "set the queue limit to %(value)s"},
        in_force={"0": "", "": "a queue limit of %(value)s"},
    ),
    ControlSpec(
        "deadline_propagation",
        "bool",
        "Deadline propagation",
        "Requests carry their client's deadline: an instance drops work whose client has given up, before "
        "starting it and before each database read, instead of spending capacity on answers nobody waits for.",
        False,
        engines=REQUEST_ONLY,
        section="overload",
        piece="queues",
        slot=I_DEADLINES,
        moves={"on": "switched deadline propagation on", "off": "switched deadline propagation off"},
        in_force={"on": "deadlines propagated", "off": ""},
    ),
)


@step
def full(queues: Any, qid: int) -> bool:
    """The queue is at its limit: an arriving request is dropped."""
    limit = queues.ints[I_QUEUE_LIMIT]
    return limit > 0 and queues.qs[Q_LEN, qid] >= limit


@step
def drop(
    views: Any,
    breaker: Any,
    calls: Any,
    meter: Any,
    fleet: Any,
    gen: Any,
    qid: int,
    client: int,
    tag: int,
    now: float,
    t0: float,
    call: int,
    sent_at: float,
) -> None:
    """A request (an attempt of ``call`` sent at ``sent_at``; −1 none) answered at once with an error by a
    queue discipline or limit."""
    waited = now - sent_at if calls.ints[I_REVISION] >= 2 else 0.0  # revision 1 heard a drop as instant
    reply(views, breaker, calls, client, call, sent_at, qid, now, waited, A_DROPPED, 0.0)
    failed(calls, meter, fleet, gen, call, sent_at, O_DROPPED, 0.0, True, second_of(t0, now), tag, now, t0)


@step
def _drop_slot(
    queues: Any,
    views: Any,
    breaker: Any,
    calls: Any,
    meter: Any,
    fleet: Any,
    gen: Any,
    qid: int,
    slot: int,
    now: float,
    t0: float,
) -> None:
    drop(
        views,
        breaker,
        calls,
        meter,
        fleet,
        gen,
        qid,
        queues.s_client[slot],
        queues.s_tag[slot],
        now,
        t0,
        queues.s_call[slot],
        queues.s_arrival[slot],
    )


@step
def _codel_head(queues: Any, qid: int, now: float) -> tuple[int, bool]:
    """CoDel's dodequeue: the oldest request, and whether it may be dropped."""
    cq = queues.cq
    if queues.qs[Q_LEN, qid] == 0:
        cq[CQ_FIRST_ABOVE, qid] = 0.0
        return -1, False
    slot = dequeue(queues, qid)
    sojourn = now - queues.s_arrival[slot]
    if sojourn < TARGET_S:
        cq[CQ_FIRST_ABOVE, qid] = 0.0
        return slot, False
    if cq[CQ_FIRST_ABOVE, qid] == 0.0:
        cq[CQ_FIRST_ABOVE, qid] = now + INTERVAL_S
        return slot, False
    return slot, now >= cq[CQ_FIRST_ABOVE, qid]


@step
def _codel(
    queues: Any,
    views: Any,
    breaker: Any,
    calls: Any,
    meter: Any,
    fleet: Any,
    gen: Any,
    qid: int,
    now: float,
    t0: float,
) -> int:
    cq = queues.cq
    interval = INTERVAL_S
    slot, ok_to_drop = _codel_head(queues, qid, now)
    if cq[CQ_DROPPING, qid] != 0.0:
        if not ok_to_drop:
            cq[CQ_DROPPING, qid] = 0.0
        else:
            while now >= cq[CQ_DROP_NEXT, qid] and cq[CQ_DROPPING, qid] != 0.0:
                _drop_slot(queues, views, breaker, calls, meter, fleet, gen, qid, slot, now, t0)
                cq[CQ_COUNT, qid] += 1.0
                slot, ok_to_drop = _codel_head(queues, qid, now)
                if not ok_to_drop:
                    cq[CQ_DROPPING, qid] = 0.0
                else:
                    cq[CQ_DROP_NEXT, qid] += interval / math.sqrt(cq[CQ_COUNT, qid])
    elif ok_to_drop:
        _drop_slot(queues, views, breaker, calls, meter, fleet, gen, qid, slot, now, t0)
        slot, ok_to_drop = _codel_head(queues, qid, now)
        cq[CQ_DROPPING, qid] = 1.0
        # back above target soon after the last episode: start from the drop rate that controlled it then
        delta = cq[CQ_COUNT, qid] - cq[CQ_LASTCOUNT, qid]
        recent = now - cq[CQ_DROP_NEXT, qid] < 16.0 * interval
        cq[CQ_COUNT, qid] = delta if delta > 1.0 and recent else 1.0
        cq[CQ_DROP_NEXT, qid] = now + interval / math.sqrt(cq[CQ_COUNT, qid])
        cq[CQ_LASTCOUNT, qid] = cq[CQ_COUNT, qid]
    return slot


@step
def _adaptive_lifo(
    queues: Any,
    views: Any,
    breaker: Any,
    calls: Any,
    meter: Any,
    fleet: Any,
    gen: Any,
    qid: int,
    now: float,
    t0: float,
) -> int:
    cq = queues.cq
    target = TARGET_S
    while queues.qs[Q_LEN, qid] > 0:
        newest = queues.qs[Q_LEN, qid] > LIFO_THRESHOLD * queues.ints[I_QUEUE_LIMIT]
        slot = dequeue_tail(queues, qid) if newest else dequeue(queues, qid)
        delay = now - queues.s_arrival[slot]
        if now >= cq[CQ_INTERVAL_END, qid]:  # a new interval: judge the last one; this request is served
            cq[CQ_OVERLOADED, qid] = 1.0 if cq[CQ_MIN_DELAY, qid] > target else 0.0
            cq[CQ_MIN_DELAY, qid] = delay
            cq[CQ_INTERVAL_END, qid] = now + INTERVAL_S
            return slot
        if delay < cq[CQ_MIN_DELAY, qid]:
            cq[CQ_MIN_DELAY, qid] = delay
        if cq[CQ_OVERLOADED, qid] != 0.0 and delay > 2.0 * target:
            _drop_slot(queues, views, breaker, calls, meter, fleet, gen, qid, slot, now, t0)
            continue
        return slot
    return -1


@step
def take(
    queues: Any,
    views: Any,
    breaker: Any,
    calls: Any,
    meter: Any,
    fleet: Any,
    gen: Any,
    qid: int,
    now: float,
    t0: float,
) -> int:
    """The waiting request a free worker takes from queue ``qid`` now (its slot), after the discipline's
    drops; −1 when none is left."""
    kind = queues.ints[I_DISCIPLINE]
    if kind == CODEL:
        return _codel(queues, views, breaker, calls, meter, fleet, gen, qid, now, t0)
    if kind == ADAPTIVE_LIFO:
        return _adaptive_lifo(queues, views, breaker, calls, meter, fleet, gen, qid, now, t0)
    return dequeue(queues, qid) if queues.qs[Q_LEN, qid] > 0 else -1

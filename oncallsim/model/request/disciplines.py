"""Queue disciplines: which waiting request a free worker takes, and which it drops (reference §4).

- ``fifo``: the oldest; nothing dropped (a queue past saturation grows until every request times out).
- ``codel``: the oldest, with CoDel's drops (Nichols & Jacobson): once the oldest request's sojourn has stayed
  above ``target`` for ``interval``, drop it and the next ones at times interval/√count apart, until a sojourn
  falls below the target. ``codel_preset`` says whose code: ``rfc8289`` (5 ms / 100 ms; RFC 8289's Linux re-entry
  rule: back above the target within 16 intervals, the count resumes from the last episode's) or ``kratos``
  (Kratos v1's ``pkg/container/queue/aqm/codel.go``: 50 ms / 500 ms; a request is judged only while 40 or more
  are outstanding at the instance — Kratos lets a request through unqueued below its ``MaxOutstanding`` of 40,
  here that is counted at the moment a worker takes the next request, busy workers and waiting requests
  together; a new dropping state starts only within an interval of the last drop or after a second interval
  above the target — ACM Queue's original rule — and a recent one resumes from count − 2).
  ``codel_target_ms`` and ``codel_interval_ms`` replace the preset's pair (0: the preset's).
- ``adaptive-lifo``: Facebook's adaptive LIFO with its CoDel (folly ``Codel.cpp``, HBase's
  ``AdaptiveLifoCoDelCallQueue``): the newest request first while the queue is longer than ``LIFO_THRESHOLD``
  (0.8) × its limit, else the oldest; the queue is overloaded for an interval when the smallest delay of the
  interval before exceeded the target, and while overloaded a request that waited over 2 × target is
  dropped (the first request of an interval is never dropped).

A dropped request answers at once with an error (a 503); its client learns of it. ``queue_limit`` caps each
queue (0: none); a request arriving to a full queue is dropped too.

Priority (``queue_priority``; the seed page's low-priority share of the traffic is the *sheddable* class, the rest
*critical*, as Google's SRE book names its criticalities — CRITICAL_PLUS and SHEDDABLE_PLUS are not modelled):
``none`` serves every class alike (one line per queue); ``strict`` keeps two lines per queue and a free worker takes
a critical request whenever one waits (non-preemptive: a sheddable request in service finishes), the discipline's
order within each class. Shedding falls on the sheddable class first: a critical request arriving to a full queue,
or refused by its instance's limiter, displaces the newest sheddable request waiting there (503 at once) and takes
its place — a critical request is refused only when no sheddable one waits to make room; CoDel and adaptive LIFO
keep their state per class, so their drops fall on the class whose waits grow — under strict priority the
sheddable one, until critical traffic alone overloads the instance. Kratos has no priority queue: the article
names one as its future direction.

Deadlines, as gRPC carries them: every attempt travels with its deadline (sent + ``timeout_s``). With
``server_timeout_ms`` (Kratos warden's server ``Timeout``, 1 s by default there) an instance caps its own work on a
request at min(that, deadline − 20 ms) from its arrival (warden's ``handle``: 20 ms are left for the answer's way
back, unless less than that remains): past the cap it starts nothing and reads nothing more for it and answers
504 at once (counted with the drops), so its client hears an error before its deadline and may retry elsewhere.
``deadline_propagation`` keeps its own meaning: work whose client has already given up is abandoned (no answer:
its client has gone). The checks are made where a worker would spend more on the request: before it starts and
before each database read (a read already begun completes).
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
    I_CODEL_INTERVAL_MS,
    I_CODEL_PRESET,
    I_CODEL_TARGET_MS,
    I_DEADLINES,
    I_DISCIPLINE,
    I_PRIORITY,
    I_QUEUE_LIMIT,
    I_SERVER_TIMEOUT_MS,
    Q_LEN,
    base_queue,
    dequeue,
    dequeue_tail,
    sheddable,
    waiting,
)

__all__ = [
    "ADAPTIVE_LIFO",
    "CODEL",
    "CODEL_PRESETS",
    "CONTROLS",
    "DISCIPLINES",
    "FIFO",
    "KRATOS",
    "PRIORITIES",
    "codel_target",
    "drop",
    "full",
    "make_room",
    "server_cap",
    "take",
]

DISCIPLINES = ("fifo", "codel", "adaptive-lifo")
FIFO, CODEL, ADAPTIVE_LIFO = range(len(DISCIPLINES))
CODEL_PRESETS = ("rfc8289", "kratos")
RFC8289, KRATOS = range(len(CODEL_PRESETS))
PRIORITIES = ("none", "strict")
NO_PRIORITY, STRICT = range(len(PRIORITIES))
TARGET_S = 5.0 / 1000.0  # CoDel's target sojourn (RFC 8289's 5 ms; adaptive LIFO's too)
INTERVAL_S = 100.0 / 1000.0  # CoDel's interval (100 ms)
KRATOS_TARGET_S = 50.0 / 1000.0  # Kratos's aqm defaultConf: Target 50 ms
KRATOS_INTERVAL_S = 500.0 / 1000.0  # … Internal 500 ms
KRATOS_OUTSTANDING = 40  # … MaxOutstanding: below it a request passes unjudged
ANSWER_MARGIN_S = 20.0 / 1000.0  # warden's server leaves 20 ms of the client's deadline for the answer
LIFO_THRESHOLD = 0.8  # adaptive LIFO serves the newest first past this share of the queue's limit


def check_settings(settings: Mapping[str, Any], changed: str) -> None:
    """Adaptive LIFO needs a queue limit (it serves the newest first past a share of it)."""
    if settings["queue_discipline"] == "adaptive-lifo" and settings["queue_limit"] == 0:
        if changed == "queue_discipline":
            raise InvalidInput(
                changed,
                "adaptive-lifo serves the newest first past a share of the queue's limit: set queue_limit first",
                "lifo_needs_limit",
            )
        raise InvalidInput(
            changed,
            "adaptive-lifo needs a queue limit above 0: choose another queue_discipline first",
            "lifo_keeps_limit",
        )


CONTROLS = (
    ControlSpec(
        "queue_discipline",
        "choice",
        "Queue discipline",
        "How each instance's queue is served: fifo; codel (drops a request that waited past its target — 5 ms, "
        "or Kratos's 50 ms — while the queue has stood above it for an interval: it answers 503 at once); "
        "adaptive-lifo (newest first once the queue is past 80 % of its limit, with CoDel). A drop is an error "
        "at once, not a timeout.",
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
        "Every request carries its client's deadline; with this on, an instance abandons work whose client has "
        "already given up, before starting it and before each database read, instead of spending capacity on "
        "answers nobody waits for (no answer is sent: the client has gone).",
        False,
        engines=REQUEST_ONLY,
        section="overload",
        piece="queues",
        slot=I_DEADLINES,
        moves={"on": "switched deadline propagation on", "off": "switched deadline propagation off"},
        in_force={"on": "deadlines propagated", "off": ""},
    ),
    ControlSpec(
        "server_timeout_ms",
        "int",
        "Server timeout",
        "Each instance caps its own work on a request at min(this, the client's deadline − 20 ms) from its "
        "arrival, as Kratos's warden server does (1,000 ms there): past it, it answers 504 at once instead of "
        "working on, so its client hears an error before its deadline and may retry. 0: no cap.",
        0,
        0,
        60_000,
        "ms",
        step=50,
        engines=REQUEST_ONLY,
        section="overload",
        piece="queues",
        slot=I_SERVER_TIMEOUT_MS,
        moves={"0": "removed the server timeout", "": "set the server timeout to %(value)s"},
        in_force={"0": "", "": "a server timeout of %(value)s"},
    ),
    ControlSpec(
        "codel_preset",
        "choice",
        "CoDel's code",
        "Whose CoDel the codel queues run: rfc8289 (target 5 ms, interval 100 ms, Linux's re-entry rule) or "
        "kratos (Kratos's aqm: 50 ms, 500 ms, and only while 40 or more requests are outstanding at the "
        "instance).",
        "rfc8289",
        choices=CODEL_PRESETS,
        engines=REQUEST_ONLY,
        section="overload",
        piece="queues",
        slot=I_CODEL_PRESET,
        moves={"": "set CoDel's code to %(value)s"},
        in_force={"rfc8289": "", "kratos": "Kratos's CoDel (50 ms, 500 ms, from 40 outstanding)"},
        only_with="queue_discipline",
        presets={
            "rfc8289": {
                "source": "RFC 8289",
                "target (ms)": f"{1000 * TARGET_S:g}",
                "interval (ms)": f"{1000 * INTERVAL_S:g}",
                "requests judged": "every request",
                "back above the target soon after": "the count resumes from the last episode's (within 16 intervals)",
            },
            "kratos": {
                "source": "kratos v1.0.1 (aqm)",
                "target (ms)": f"{1000 * KRATOS_TARGET_S:g}",
                "interval (ms)": f"{1000 * KRATOS_INTERVAL_S:g}",
                "requests judged": f"only while {KRATOS_OUTSTANDING} or more are outstanding",
                "back above the target soon after": "the count resumes from count − 2 (within an interval of the "
                "last drop)",
            },
        },
    ),
    ControlSpec(
        "codel_target_ms",
        "int",
        "CoDel target",
        "The sojourn CoDel tolerates (the queue disciplines' target); 0: the preset's (5 ms; Kratos's 50 ms).",
        0,
        0,
        10_000,
        "ms",
        step=5,
        engines=REQUEST_ONLY,
        section="overload",
        piece="queues",
        slot=I_CODEL_TARGET_MS,
        moves={"0": "set CoDel's target to its preset's", "": "set CoDel's target to %(value)s"},
        in_force={"0": "", "": "a CoDel target of %(value)s"},
        only_with="queue_discipline",
    ),
    ControlSpec(
        "codel_interval_ms",
        "int",
        "CoDel interval",
        "How long the sojourn must stay above the target before CoDel drops, and the base of its drop times "
        "(interval/√count); 0: the preset's (100 ms; Kratos's 500 ms).",
        0,
        0,
        60_000,
        "ms",
        step=50,
        engines=REQUEST_ONLY,
        section="overload",
        piece="queues",
        slot=I_CODEL_INTERVAL_MS,
        moves={"0": "set CoDel's interval to its preset's", "": "set CoDel's interval to %(value)s"},
        in_force={"0": "", "": "a CoDel interval of %(value)s"},
        only_with="queue_discipline",
    ),
    ControlSpec(
        "queue_priority",
        "choice",
        "Queue priority",
        "Whether the ⟪low_priority_share%⟫ low-priority (sheddable) traffic waits behind the rest (critical): none "
        "(one line, every request alike); strict (a free worker takes a critical request whenever one waits; a "
        "full queue or an instance's limiter makes room for a critical request by dropping the newest sheddable "
        "one, and CoDel judges each class on its own, so drops fall on sheddable requests first).",
        "none",
        choices=PRIORITIES,
        engines=REQUEST_ONLY,
        section="overload",
        piece="queues",
        slot=I_PRIORITY,
        moves={"": "set the queue priority to %(value)s"},
        in_force={"none": "", "strict": "critical requests first, sheddable ones dropped first"},
    ),
)


@step
def _codel_time(queues: Any, slot: int, rfc_s: float, kratos_s: float) -> float:
    """One of CoDel's times (s): the operator's (ms in ``slot``), else the preset's (Kratos's for its codel)."""
    ms = queues.ints[slot]
    if ms > 0:
        return ms / 1000.0
    if queues.ints[I_DISCIPLINE] == CODEL and queues.ints[I_CODEL_PRESET] == KRATOS:
        return kratos_s
    return rfc_s


@step
def codel_target(queues: Any) -> float:
    """The queue disciplines' target sojourn (s)."""
    return _codel_time(queues, I_CODEL_TARGET_MS, TARGET_S, KRATOS_TARGET_S)


@step
def codel_interval(queues: Any) -> float:
    """The queue disciplines' interval (s)."""
    return _codel_time(queues, I_CODEL_INTERVAL_MS, INTERVAL_S, KRATOS_INTERVAL_S)


@step
def server_cap(queues: Any, timeout: float) -> float:
    """How long after its arrival an instance works on a request at most (s; ∞ without a server timeout):
    min(the server's timeout, the deadline − 20 ms), the 20 ms kept only while more than that remains."""
    ms = queues.ints[I_SERVER_TIMEOUT_MS]
    if ms == 0:
        return math.inf
    left = timeout - ANSWER_MARGIN_S if timeout > ANSWER_MARGIN_S else timeout
    own = ms / 1000.0
    return own if own < left else left


@step
def kratos_bypass(queues: Any, busy: int, qid: int) -> bool:
    """Kratos's codel judges nothing while fewer than 40 requests are outstanding (``busy`` in service at the
    queue's instance, and the waiting ones)."""
    return (
        queues.ints[I_DISCIPLINE] == CODEL
        and queues.ints[I_CODEL_PRESET] == KRATOS
        and busy + waiting(queues, base_queue(queues, qid)) < KRATOS_OUTSTANDING
    )


@step
def full(queues: Any, qid: int) -> bool:
    """The queue is at its limit (both classes): an arriving request is dropped."""
    limit = queues.ints[I_QUEUE_LIMIT]
    return limit > 0 and waiting(queues, qid) >= limit


@step
def displace(
    queues: Any, views: Any, breaker: Any, calls: Any, meter: Any, fleet: Any, gen: Any, q: int, now: float, t0: float
) -> bool:
    """Under strict priority, a critical request needs room at queue ``q``: the newest sheddable request waiting
    there is dropped (503 at once) in its favour. Returns whether one was."""
    if queues.ints[I_PRIORITY] != STRICT:
        return False
    column = sheddable(queues, q)
    if queues.qs[Q_LEN, column] == 0:
        return False
    _drop_slot(queues, views, breaker, calls, meter, fleet, gen, column, dequeue_tail(queues, column), now, t0)
    return True


@step
def make_room(
    queues: Any,
    views: Any,
    breaker: Any,
    calls: Any,
    meter: Any,
    fleet: Any,
    gen: Any,
    q: int,
    low: bool,
    now: float,
    t0: float,
) -> bool:
    """Whether a request of its class (``low``: sheddable) may join queue ``q`` under its limit: there is room,
    or it is critical and a sheddable request made room for it (``displace``)."""
    if not full(queues, q):
        return True
    return not low and displace(queues, views, breaker, calls, meter, fleet, gen, q, now, t0)


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
        base_queue(queues, qid),
        queues.s_client[slot],
        queues.s_tag[slot],
        now,
        t0,
        queues.s_call[slot],
        queues.s_arrival[slot],
    )


@step
def _codel_head(queues: Any, qid: int, now: float, target: float, interval: float) -> tuple[int, bool]:
    """CoDel's dodequeue: the oldest request, and whether it may be dropped."""
    cq = queues.cq
    if queues.qs[Q_LEN, qid] == 0:
        cq[CQ_FIRST_ABOVE, qid] = 0.0
        return -1, False
    slot = dequeue(queues, qid)
    sojourn = now - queues.s_arrival[slot]
    if sojourn < target:
        cq[CQ_FIRST_ABOVE, qid] = 0.0
        return slot, False
    if cq[CQ_FIRST_ABOVE, qid] == 0.0:
        cq[CQ_FIRST_ABOVE, qid] = now + interval
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
    target = codel_target(queues)
    interval = codel_interval(queues)
    slot, ok_to_drop = _codel_head(queues, qid, now, target, interval)
    if cq[CQ_DROPPING, qid] != 0.0:
        if not ok_to_drop:
            cq[CQ_DROPPING, qid] = 0.0
        else:
            while now >= cq[CQ_DROP_NEXT, qid] and cq[CQ_DROPPING, qid] != 0.0:
                _drop_slot(queues, views, breaker, calls, meter, fleet, gen, qid, slot, now, t0)
                cq[CQ_COUNT, qid] += 1.0
                slot, ok_to_drop = _codel_head(queues, qid, now, target, interval)
                if not ok_to_drop:
                    cq[CQ_DROPPING, qid] = 0.0
                else:
                    cq[CQ_DROP_NEXT, qid] += interval / math.sqrt(cq[CQ_COUNT, qid])
    elif ok_to_drop:
        _drop_slot(queues, views, breaker, calls, meter, fleet, gen, qid, slot, now, t0)
        slot, ok_to_drop = _codel_head(queues, qid, now, target, interval)
        cq[CQ_DROPPING, qid] = 1.0
        # back above target soon after the last episode: start from the drop rate that controlled it then
        delta = cq[CQ_COUNT, qid] - cq[CQ_LASTCOUNT, qid]
        recent = now - cq[CQ_DROP_NEXT, qid] < 16.0 * interval
        cq[CQ_COUNT, qid] = delta if delta > 1.0 and recent else 1.0
        cq[CQ_DROP_NEXT, qid] = now + interval / math.sqrt(cq[CQ_COUNT, qid])
        cq[CQ_LASTCOUNT, qid] = cq[CQ_COUNT, qid]
    return slot


@step
def _kratos_codel(
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
    """Kratos's aqm ``Pop``: each waiting request in turn is judged (``judge``) until one is served. Its rules
    differ from RFC 8289's where overload starts and ends: a dropping state starts only within an interval of the
    last drop time or a second interval above the target, resuming from count − 2 when recent; an emptied queue
    resets nothing (the time above the target is forgotten only by a request below it)."""
    cq = queues.cq
    target = codel_target(queues)
    interval = codel_interval(queues)
    while queues.qs[Q_LEN, qid] > 0:
        slot = dequeue(queues, qid)
        sojourn = now - queues.s_arrival[slot]
        over = False
        if sojourn < target:
            cq[CQ_FIRST_ABOVE, qid] = 0.0
        elif cq[CQ_FIRST_ABOVE, qid] == 0.0:
            cq[CQ_FIRST_ABOVE, qid] = now + interval
        elif now >= cq[CQ_FIRST_ABOVE, qid]:
            over = True
        if cq[CQ_DROPPING, qid] != 0.0:
            if not over:
                cq[CQ_DROPPING, qid] = 0.0
            elif now > cq[CQ_DROP_NEXT, qid]:
                cq[CQ_COUNT, qid] += 1.0
                cq[CQ_DROP_NEXT, qid] += interval / math.sqrt(cq[CQ_COUNT, qid])
                _drop_slot(queues, views, breaker, calls, meter, fleet, gen, qid, slot, now, t0)
                continue
        elif over:
            recent = now - cq[CQ_DROP_NEXT, qid] < interval
            if recent or now - cq[CQ_FIRST_ABOVE, qid] >= interval:
                cq[CQ_DROPPING, qid] = 1.0
                cq[CQ_COUNT, qid] = cq[CQ_COUNT, qid] - 2.0 if recent and cq[CQ_COUNT, qid] > 2.0 else 1.0
                cq[CQ_DROP_NEXT, qid] = now + interval / math.sqrt(cq[CQ_COUNT, qid])
                _drop_slot(queues, views, breaker, calls, meter, fleet, gen, qid, slot, now, t0)
                continue
        return slot
    return -1


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
    target = codel_target(queues)
    interval = codel_interval(queues)
    while queues.qs[Q_LEN, qid] > 0:
        newest = waiting(queues, base_queue(queues, qid)) > LIFO_THRESHOLD * queues.ints[I_QUEUE_LIMIT]
        slot = dequeue_tail(queues, qid) if newest else dequeue(queues, qid)
        delay = now - queues.s_arrival[slot]
        if now >= cq[CQ_INTERVAL_END, qid]:  # a new interval: judge the last one; this request is served
            cq[CQ_OVERLOADED, qid] = 1.0 if cq[CQ_MIN_DELAY, qid] > target else 0.0
            cq[CQ_MIN_DELAY, qid] = delay
            cq[CQ_INTERVAL_END, qid] = now + interval
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
    """The waiting request a free worker takes from list ``qid`` now (its slot), after the discipline's
    drops; −1 when none is left."""
    kind = queues.ints[I_DISCIPLINE]
    if kind == CODEL and queues.ints[I_CODEL_PRESET] == KRATOS:
        return _kratos_codel(queues, views, breaker, calls, meter, fleet, gen, qid, now, t0)
    if kind == CODEL:
        return _codel(queues, views, breaker, calls, meter, fleet, gen, qid, now, t0)
    if kind == ADAPTIVE_LIFO:
        return _adaptive_lifo(queues, views, breaker, calls, meter, fleet, gen, qid, now, t0)
    return dequeue(queues, qid) if queues.qs[Q_LEN, qid] > 0 else -1

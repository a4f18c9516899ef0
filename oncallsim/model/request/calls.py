"""A client's call: its attempts, its timer, its retries with backoff, and its client's retry budget
(issue 11; reference §5).

With ``retries`` > 0 — and since revision 2 whenever a client balances on its own (any balancer but ``pooled``) —
each admitted request opens a *call* (a slot of the ``c_…`` arrays). The call sends an attempt to the balancer and
waits, with a timer at the attempt's deadline (send + timeout). At that deadline the client gives up on the attempt
and its balancer hears of it as gRPC's ``Done`` does in Kratos: one fewer outstanding, a latency of the timeout, a
failure (``reply``); an answer that comes later is not heard. Under revision 1 a client heard only the late answer.
The attempt ends for the client at the first of: its answer (success, or a failure the client may retry), or the
timer (a timeout). A failed attempt is retried when the failure is retryable (a timeout, an overload or a drop, a
refused connection, a 429; a bad build's application error only with ``retry_bad_build``), attempts are left
and the client's budget has a token; the retry waits its backoff and goes to the balancer again, which may
pick another instance. The call ends — and its user sees the outcome, counted in the minute it becomes known
— when an attempt succeeds or its last failure is not retried. The SLI counts calls; the load counts attempts.

An attempt abandoned by its client keeps its place in the queue or the worker it holds (wasted work, as
before); when it ends, its outcome no longer counts: an attempt is the call's current one while the call
waits and was sent at the call's ``c_sent`` (a later attempt of the same call is sent strictly later, at or
after the earlier one's deadline or answer). Timers are cancelled lazily: the deadline ring holds every
attempt's deadline in send order (the timeout is one constant), and a deadline whose attempt is no longer
current is skipped when it comes due. Backoffs wait in a heap of their own (``r_time``, ``r_id``).

Backoff (reference §5.2, AWS's formulas; n = 1 for the first retry): none; exponential = min(cap, base·2ⁿ);
full jitter = U(0, exponential); equal jitter = exponential/2 + U(0, exponential/2); decorrelated jitter =
min(cap, U(base, 3·previous sleep)), the first previous sleep = base.

Retry budget (reference §5.3, Brooker's token bucket): each client holds up to ``retry_budget_burst`` tokens,
starts full, gains ``retry_budget`` tokens per call it opens; a retry takes one token and is not sent
without one. Over time retries ≤ retry_budget × calls (+ the burst).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from oncallsim.model.control_spec import REQUEST_ONLY, ControlSpec
from oncallsim.model.jit import by_reference
from oncallsim.model.kernel import P, inline_step, step
from oncallsim.model.request.balancers import A_TIMEOUT, answered
from oncallsim.model.request.generator import uniform
from oncallsim.model.request.heap import pop_on, push_on
from oncallsim.model.request.outcomes import (
    M_RETRIES,
    M_RETRY_DENIED,
    M_SENT,
    O_BAD,
    O_OK,
    O_THROTTLED,
    O_TIMEOUT,
    WHERE_QUEUE,
    decide,
    second_of,
    timed_out,
    where_spent,
)

__all__ = [
    "BACKOFFS",
    "backoff_delay",
    "call_failed",
    "call_ok",
    "current",
    "deadline_due",
    "failed",
    "open_call",
    "reply",
    "retry_due",
    "sent",
    "succeeded",
    "take_deadline",
    "take_retry",
]

# a call's state: its slot is free; it waits for its current attempt; it waits out a backoff
C_FREE, C_WAITING, C_BACKOFF = range(3)
MAX_RETRIES = 5
CALLS_START = 1 << 10  # call slots at first; grown before a minute that could need more (``with_room``), shrunk
# back after a burst (``shrunk``)
# ints[...]: free call slots; the deadline ring's head and length; backoffs waiting; the clients' retries and
# backoff (``BACKOFFS``); 1 while the retry budget denies retries (for the events); the model revision's rules
I_CFREE, I_DHEAD, I_DLEN, I_RHEAP, I_RETRIES, I_BACKOFF, I_BUDGET_OUT, I_REVISION = range(8)
# reals[...]: the backoff's base and cap (s); the retry budget: tokens per call (0: no budget), tokens a client
# holds at most; 1: a bad build's application errors are retried too
R_RETRY_BASE, R_RETRY_CAP, R_BUDGET, R_BUDGET_BURST, R_RETRY_BAD = range(5)


@by_reference
class Calls(NamedTuple):
    """The clients' calls (one per admitted request while retries are on), their attempts' deadlines, the
    backoffs waiting, each client's retry budget, and the retry settings."""

    ints: npt.NDArray[np.int64]
    reals: npt.NDArray[np.float64]
    c_arrival: npt.NDArray[np.float64]  # per call: when it opened (its user's request arrived)
    c_sent: npt.NDArray[np.float64]  # when its current attempt was sent
    c_started: npt.NDArray[np.float64]  # when that attempt started service (−∞: not yet)
    c_inst: npt.NDArray[np.int64]  # the instance serving it, −1 none yet
    c_picked: npt.NDArray[np.int64]  # the instance its client's balancer sent it to, −1 none (pooled, not yet)
    c_object: npt.NDArray[np.int64]
    c_tag: npt.NDArray[np.int64]
    c_client: npt.NDArray[np.int64]
    c_low: npt.NDArray[np.bool_]  # its request is sheddable (every attempt keeps the class)
    c_attempt: npt.NDArray[np.int64]  # the current attempt's number (0: the first)
    c_state: npt.NDArray[np.int64]  # C_FREE, C_WAITING, C_BACKOFF
    c_sleep: npt.NDArray[np.float64]  # decorrelated jitter's previous sleep (s)
    c_free: npt.NDArray[np.int64]  # the free call slots (a stack; ints[I_CFREE] of them)
    d_time: npt.NDArray[np.float64]  # the attempts' deadlines, in send order: a ring from ints[I_DHEAD]
    d_call: npt.NDArray[np.int64]
    r_time: npt.NDArray[np.float64]  # the calls waiting out a backoff: a heap on when it ends
    r_id: npt.NDArray[np.int64]
    tokens: npt.NDArray[np.float64]  # per client: its retry budget's tokens


def new_calls(clients: int, capacity: int = CALLS_START, deadlines: int = 4 * CALLS_START) -> Calls:
    """No call open: ``capacity`` free slots (taken lowest first), an empty deadline ring and backoff heap."""
    ints = np.zeros(8, dtype=np.int64)
    ints[I_CFREE] = capacity
    return Calls(ints=ints, reals=np.zeros(5), **_slots(capacity, deadlines), tokens=np.zeros(clients))


def _slots(capacity: int, deadlines: int) -> dict[str, Any]:
    return {
        "c_arrival": np.zeros(capacity),
        "c_sent": np.zeros(capacity),
        "c_started": np.zeros(capacity),
        "c_inst": np.full(capacity, -1, dtype=np.int64),
        "c_picked": np.full(capacity, -1, dtype=np.int64),
        "c_object": np.zeros(capacity, dtype=np.int64),
        "c_tag": np.full(capacity, -1, dtype=np.int64),
        "c_client": np.zeros(capacity, dtype=np.int64),
        "c_low": np.zeros(capacity, dtype=np.bool_),
        "c_attempt": np.zeros(capacity, dtype=np.int64),
        "c_state": np.zeros(capacity, dtype=np.int64),
        "c_sleep": np.zeros(capacity),
        "c_free": np.arange(capacity - 1, -1, -1, dtype=np.int64),
        "d_time": np.zeros(deadlines),
        "d_call": np.zeros(deadlines, dtype=np.int64),
        "r_time": np.zeros(capacity),
        "r_id": np.zeros(capacity, dtype=np.int64),
    }


def with_room(calls: Calls, arrivals: int, every_request: bool) -> Calls:
    """The calls with room for the minute's should ``arrivals`` each open one (``every_request``: clients open a
    call for each, retries or not), and for their deadlines: every call alive may send all its attempts within
    the minute (compiled code does not allocate)."""
    retries = int(calls.ints[I_RETRIES])
    capacity = len(calls.c_state)
    live = capacity - int(calls.ints[I_CFREE])
    if retries == 0 and live == 0 and not every_request:
        return calls
    opening = arrivals if retries > 0 or every_request else 0
    need_calls = live + opening
    need_deadlines = int(calls.ints[I_DLEN]) + opening * (retries + 1) + live * (MAX_RETRIES + 1)
    if need_calls <= capacity and need_deadlines <= len(calls.d_time):
        return calls
    grown = capacity
    while grown < need_calls:
        grown *= 2
    ring = len(calls.d_time)
    while ring < need_deadlines:
        ring *= 2
    fresh = _slots(grown, ring)
    for name in ("c_arrival", "c_sent", "c_started", "c_inst", "c_picked", "c_object", "c_tag", "c_client",
                 "c_low", "c_attempt", "c_state", "c_sleep", "r_time", "r_id"):  # fmt: skip
        fresh[name][:capacity] = getattr(calls, name)
    free = int(calls.ints[I_CFREE])
    added = np.arange(grown - 1, capacity - 1, -1, dtype=np.int64)
    fresh["c_free"][: len(added)] = added
    fresh["c_free"][len(added) : len(added) + free] = calls.c_free[:free]  # the old free slots are taken first
    calls.ints[I_CFREE] = free + len(added)
    head, count, old = int(calls.ints[I_DHEAD]), int(calls.ints[I_DLEN]), len(calls.d_time)
    order = (head + np.arange(count)) % old  # the ring unrolled from its head
    fresh["d_time"][:count] = calls.d_time[order]
    fresh["d_call"][:count] = calls.d_call[order]
    calls.ints[I_DHEAD] = 0
    return calls._replace(**fresh)


def shrunk(calls: Calls, arrivals: int, every_request: bool) -> tuple[Calls, npt.NDArray[np.int64] | None]:
    """After a burst, the calls in smaller arrays: once what the minute could need (as ``with_room`` counts it) is
    an eighth of the call slots or of the deadline ring or less, each goes back to twice that need rounded up to a
    power of two (at least its first size), as ``queues.shrunk`` does for the waiting requests. Returns the calls
    and, when the slots were renumbered, ``renumber`` (old call → new, ``renumber[-1]`` = −1): the caller maps the
    calls named elsewhere (a queued attempt's ``s_call``, a worker's ``w_call``) through it, ``None`` when
    nothing moved.

    The open calls move to the lowest slots in the order of their old ones; a slot's number is only an index (no
    draw, no order, no outcome depends on it). An attempt whose call has ended may still be named somewhere (in a
    queue, a worker, the deadline ring); it is never its call's current one again (a slot's next call sends later
    than any attempt of the one before), so every such name maps to one free slot, the last (taken last)."""
    retries = int(calls.ints[I_RETRIES])
    capacity, ring = len(calls.c_state), len(calls.d_time)
    free = int(calls.ints[I_CFREE])
    live = capacity - free
    opening = arrivals if retries > 0 or every_request else 0
    need_calls = live + opening
    count = int(calls.ints[I_DLEN])
    need_deadlines = count + opening * (retries + 1) + live * (MAX_RETRIES + 1)
    size = CALLS_START
    while size < 2 * need_calls:
        size *= 2
    ring_size = 4 * CALLS_START
    while ring_size < 2 * need_deadlines:
        ring_size *= 2
    small_calls = capacity > CALLS_START and 8 * need_calls <= capacity and size < capacity
    small_ring = ring > 4 * CALLS_START and 8 * need_deadlines <= ring and ring_size < ring
    if not (small_calls or small_ring):
        return calls, None
    size = size if small_calls else capacity
    ring_size = ring_size if small_ring else ring
    fresh = _slots(size, ring_size)
    renumber: npt.NDArray[np.int64] | None = None
    if small_calls:
        taken = np.ones(capacity, dtype=np.bool_)
        taken[calls.c_free[:free]] = False
        used = np.flatnonzero(taken)  # ascending
        renumber = np.full(capacity + 1, size - 1, dtype=np.int64)  # an ended call's names: the last slot
        renumber[used] = np.arange(live, dtype=np.int64)
        renumber[capacity] = -1  # index −1: none stays none
        for name in ("c_arrival", "c_sent", "c_started", "c_inst", "c_picked", "c_object", "c_tag", "c_client",
                     "c_attempt", "c_state", "c_sleep"):  # fmt: skip
            fresh[name][:live] = getattr(calls, name)[used]
        waiting = int(calls.ints[I_RHEAP])  # the backoff heap's entries keep their places: only ids change
        fresh["r_time"][:waiting] = calls.r_time[:waiting]
        fresh["r_id"][:waiting] = renumber[calls.r_id[:waiting]]
        fresh["c_free"][: size - live] = np.arange(size - 1, live - 1, -1, dtype=np.int64)  # taken lowest first
        calls.ints[I_CFREE] = size - live
    else:
        for name in ("c_arrival", "c_sent", "c_started", "c_inst", "c_picked", "c_object", "c_tag", "c_client",
                     "c_attempt", "c_state", "c_sleep", "c_free", "r_time", "r_id"):  # fmt: skip
            fresh[name] = getattr(calls, name)
    order = (int(calls.ints[I_DHEAD]) + np.arange(count)) % ring  # the ring unrolled from its head
    fresh["d_time"][:count] = calls.d_time[order]
    fresh["d_call"][:count] = calls.d_call[order] if renumber is None else renumber[calls.d_call[order]]
    calls.ints[I_DHEAD] = 0
    return calls._replace(**fresh), renumber


BACKOFFS = ("none", "exponential", "full-jitter", "equal-jitter", "decorrelated-jitter")
NONE, EXPONENTIAL, FULL_JITTER, EQUAL_JITTER, DECORRELATED = range(len(BACKOFFS))

CONTROLS = (
    ControlSpec(
        "retries",
        "int",
        "Retries",
        "Extra attempts a client makes when an attempt times out, is refused, dropped or rejected "
        "(0–5); each retry goes back to the balancer. Every attempt is load; only the last one's failure "
        "reaches the user.",
        0,
        0,
        MAX_RETRIES,
        "retries",
        step=1,
        engines=REQUEST_ONLY,
        section="retries",
        piece="calls",
        slot=I_RETRIES,
        moves={"": "allowed the clients %(value)s per request"},
        in_force={"0": "no retries", "": "up to %(value)s per request"},
    ),
    ControlSpec(
        "retry_backoff",
        "choice",
        "Retry backoff",
        "How long a client waits before retry n: none (at once); exponential (min(cap, base·2ⁿ)); "
        "full-jitter (a uniform share of that); equal-jitter (half, plus a uniform half); "
        "decorrelated-jitter (uniform between base and 3× the previous wait).",
        "full-jitter",
        choices=BACKOFFS,
        engines=REQUEST_ONLY,
        section="retries",
        piece="calls",
        slot=I_BACKOFF,
        moves={"": "set the retry backoff to %(value)s"},
        in_force={"none": "retried at once", "": "%(value)s backoff"},
        only_with="retries",
    ),
    ControlSpec(
        "retry_base_ms",
        "int",
        "Backoff base",
        "The backoff's base wait.",
        100,
        1,
        60_000,
        "ms",
        step=10,
        engines=REQUEST_ONLY,
        section="retries",
        piece="calls",
        slot=R_RETRY_BASE,
        real=True,
        divisor=1000.0,
        only_with="retries",
    ),
    ControlSpec(
        "retry_cap_ms",
        "int",
        "Backoff cap",
        "The longest a backoff waits.",
        20_000,
        1,
        600_000,
        "ms",
        step=100,
        engines=REQUEST_ONLY,
        section="retries",
        piece="calls",
        slot=R_RETRY_CAP,
        real=True,
        divisor=1000.0,
        only_with="retries",
    ),
    ControlSpec(
        "retry_budget",
        "fraction",
        "Retry budget",
        "Retries a client may send, as a share of its requests, kept by a token bucket (0 % = no budget): each "
        "request adds that share of a token, each retry takes one, at most ⟪retry_budget_burst⟫ saved. 10 % "
        "keeps retries under a tenth of the requests whatever fails.",
        0.0,
        0.0,
        1.0,
        "",
        step=0.01,
        engines=REQUEST_ONLY,
        section="retries",
        piece="calls",
        slot=R_BUDGET,
        real=True,
        moves={"": "set the retry budget to %(value)s"},
        in_force={"0": "", "": "a %(value)s retry budget"},
        only_with="retries",
    ),
)

_INF = float("inf")


@inline_step
def open_call(calls: Any, x: float, obj: int, tag: int, client: int, low: bool) -> int:
    """A new call for a request admitted at ``x`` (``low``: sheddable; the caller made room:
    ``world.with_room``); its client's budget gains its share."""
    n = calls.ints[I_CFREE] - 1
    calls.ints[I_CFREE] = n
    call = calls.c_free[n]
    calls.c_arrival[call] = x
    calls.c_object[call] = obj
    calls.c_tag[call] = tag
    calls.c_client[call] = client
    calls.c_low[call] = low
    calls.c_attempt[call] = 0
    calls.c_started[call] = -_INF
    calls.c_inst[call] = -1
    calls.c_sleep[call] = calls.reals[R_RETRY_BASE]
    burst = calls.reals[R_BUDGET_BURST]
    tokens = calls.tokens[client] + calls.reals[R_BUDGET]
    calls.tokens[client] = tokens if tokens < burst else burst
    return call


@inline_step
def sent(p: Any, calls: Any, meter: Any, call: int, x: float) -> None:
    """The call's next attempt leaves for the balancer at ``x``: it is the current one, its deadline timed."""
    calls.c_state[call] = C_WAITING
    calls.c_sent[call] = x
    calls.c_started[call] = -_INF
    calls.c_inst[call] = -1
    calls.c_picked[call] = -1
    meter.measures[M_SENT] += 1.0
    if calls.c_attempt[call] > 0:
        meter.measures[M_RETRIES] += 1.0
    size = len(calls.d_time)
    tail = (calls.ints[I_DHEAD] + calls.ints[I_DLEN]) % size
    calls.d_time[tail] = x + p[P.timeout_s]
    calls.d_call[tail] = call
    calls.ints[I_DLEN] += 1


@inline_step
def current(calls: Any, call: int, sent_at: float) -> bool:
    """Whether an attempt sent at ``sent_at`` is the call's current one (its client still waits for it)."""
    return calls.c_state[call] == C_WAITING and calls.c_sent[call] == sent_at


@inline_step
def reply(
    views: Any, breaker: Any, calls: Any, client: int, call: int, sent_at: float, i: int, x: float, rtt: float,
    how: int, cpu_permille: float,
) -> None:  # fmt: skip
    """Client ``client``'s balancer hears of its attempt (of ``call`` sent at ``sent_at``; −1 none) on instance
    ``i`` (``balancers.answered``) — unless it gave up on it already: since revision 2 a client hears of an
    attempt once, at its answer or at its deadline (``take_deadline``), whichever comes first."""
    if client < 0:
        return
    if call >= 0 and calls.ints[I_REVISION] >= 2 and not current(calls, call, sent_at):
        return
    answered(views, breaker, client, i, x, rtt, how, cpu_permille)


@inline_step
def _close_call(calls: Any, call: int) -> None:
    calls.c_state[call] = C_FREE
    calls.c_tag[call] = -1
    calls.c_free[calls.ints[I_CFREE]] = call
    calls.ints[I_CFREE] += 1


@inline_step
def call_ok(calls: Any, meter: Any, call: int, x: float, waited: bool, t0: float) -> None:
    """The current attempt succeeded at ``x``: the call ends well; its user waited since the call opened."""
    decide(meter, O_OK, x - calls.c_arrival[call], waited, second_of(t0, x), calls.c_tag[call])
    _close_call(calls, call)


@step
def backoff_delay(calls: Any, gen: Any, call: int, n: int) -> float:
    """How long the call waits before its ``n``-th retry (1 = the first), by the clients' backoff."""
    kind = calls.ints[I_BACKOFF]
    if kind == NONE:
        return 0.0
    base = calls.reals[R_RETRY_BASE]
    cap = calls.reals[R_RETRY_CAP]
    if kind == DECORRELATED:
        high = 3.0 * calls.c_sleep[call]
        sleep = base + uniform(gen) * (high - base) if high > base else base
        sleep = sleep if sleep < cap else cap
        calls.c_sleep[call] = sleep
        return sleep
    expo = base * 2.0**n
    expo = expo if expo < cap else cap
    if kind == FULL_JITTER:
        return uniform(gen) * expo
    if kind == EQUAL_JITTER:
        return expo / 2.0 + uniform(gen) * (expo / 2.0)
    return expo


@step
def _where(calls: Any, fleet: Any, call: int, x: float) -> int:
    """Where a timed-out attempt spent its time: a queue when it never started, else as ``where_spent``."""
    start = calls.c_started[call]
    if calls.c_inst[call] < 0 or start == -_INF:
        return WHERE_QUEUE
    return where_spent(fleet, calls.c_inst[call], start - calls.c_sent[call], x - start)


@inline_step
def failed(
    calls: Any, meter: Any, fleet: Any, gen: Any, call: int, sent_at: float, outcome: int, response: float,
    waited: bool, second: int, tag: int, x: float, t0: float,
) -> None:  # fmt: skip
    """An attempt failed at ``x``: without a call, its request's outcome (``outcomes.decide``); with one, the
    call's business if the attempt is still its current one."""
    if call < 0:
        decide(meter, outcome, response, waited, second, tag)
    elif current(calls, call, sent_at):
        call_failed(calls, meter, fleet, gen, call, outcome, x, t0)


@inline_step
def succeeded(
    calls: Any,
    meter: Any,
    call: int,
    sent_at: float,
    response: float,
    waited: bool,
    second: int,
    tag: int,
    x: float,
    t0: float,
) -> bool:
    """An attempt succeeded at ``x``: its request's outcome, or its call's if it is still the current one.
    Returns whether a success was counted."""
    if call < 0:
        decide(meter, O_OK, response, waited, second, tag)
        return True
    if current(calls, call, sent_at):
        call_ok(calls, meter, call, x, waited, t0)
        return True
    return False


@step
def call_failed(calls: Any, meter: Any, fleet: Any, gen: Any, call: int, outcome: int, x: float, t0: float) -> None:
    """The current attempt failed at ``x`` (``outcome``: world.O_…): retried after its backoff when the failure
    is retryable, attempts are left and the client's budget allows; else the call ends with this outcome."""
    n = calls.c_attempt[call] + 1
    retryable = outcome != O_THROTTLED and (outcome != O_BAD or calls.reals[R_RETRY_BAD] != 0.0)
    if retryable and n <= calls.ints[I_RETRIES]:
        client = calls.c_client[call]
        if calls.reals[R_BUDGET] > 0.0:
            if calls.tokens[client] < 1.0:
                meter.measures[M_RETRY_DENIED] += 1.0
                _final(calls, meter, fleet, call, outcome, x, t0)
                return
            calls.tokens[client] -= 1.0
        calls.c_attempt[call] = n
        calls.c_state[call] = C_BACKOFF
        push_on(calls.r_time, calls.r_id, calls.ints, I_RHEAP, x + backoff_delay(calls, gen, call, n), call)
        return
    _final(calls, meter, fleet, call, outcome, x, t0)


@step
def _final(calls: Any, meter: Any, fleet: Any, call: int, outcome: int, x: float, t0: float) -> None:
    """The call ends with its last attempt's failure: the user's response time runs from the call's opening."""
    second = second_of(t0, x)
    tag = calls.c_tag[call]
    if outcome == O_TIMEOUT:
        timed_out(
            meter,
            _where(calls, fleet, call, x),
            x - calls.c_arrival[call],
            calls.c_started[call] != calls.c_sent[call],
            second,
            tag,
        )
    else:
        decide(meter, outcome, x - calls.c_arrival[call], False, second, tag)
    _close_call(calls, call)


@inline_step
def deadline_due(calls: Any) -> float:
    """When the earliest pending deadline comes due (∞: none)."""
    return calls.d_time[calls.ints[I_DHEAD]] if calls.ints[I_DLEN] > 0 else _INF


@inline_step
def take_deadline(
    p: Any, calls: Any, views: Any, breaker: Any, meter: Any, fleet: Any, gen: Any, x: float, t0: float
) -> None:
    """The earliest deadline came due at ``x``: if its attempt is still current, the client gives up on it (and,
    since revision 2, its balancer hears so now: a failure after the whole timeout)."""
    head = calls.ints[I_DHEAD]
    call = calls.d_call[head]
    due = calls.d_time[head]
    calls.ints[I_DHEAD] = (head + 1) % len(calls.d_time)
    calls.ints[I_DLEN] -= 1
    timeout = p[P.timeout_s]
    if calls.c_state[call] == C_WAITING and calls.c_sent[call] + timeout == due:
        picked = calls.c_picked[call]
        if calls.ints[I_REVISION] >= 2 and picked >= 0:
            answered(views, breaker, calls.c_client[call], picked, x, timeout, A_TIMEOUT, 0.0)
        call_failed(calls, meter, fleet, gen, call, O_TIMEOUT, x, t0)


@inline_step
def retry_due(calls: Any) -> float:
    """When the earliest backoff ends (∞: none)."""
    return calls.r_time[0] if calls.ints[I_RHEAP] > 0 else _INF


@step
def take_retry(calls: Any) -> int:
    """The call whose backoff ended first (removed from the heap); the caller sends its next attempt."""
    return pop_on(calls.r_time, calls.r_id, calls.ints, I_RHEAP)

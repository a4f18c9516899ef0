"""A client's call: its attempts, its timer, its retries with backoff, and its client's retry budget
(issue 11; reference §5).

With ``retries`` > 0, each admitted request opens a *call* (a slot of the ``c_…`` arrays). The call sends an
attempt to the balancer and waits, with a timer at the attempt's deadline (send + timeout). The attempt ends
for the client at the first of: its answer (success, or a failure the client may retry), or the timer (a
timeout). A failed attempt is retried when the failure is retryable (a timeout, an overload or a drop, a
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

from typing import Any

from oncallsim.model.kernel import P, inline_step, step
from oncallsim.model.request.generator import uniform
from oncallsim.model.request.heap import pop_on, push_on
from oncallsim.model.request.outcomes import decide, second_of, timed_out, where_spent
from oncallsim.model.request.world import (
    C_BACKOFF,
    C_FREE,
    C_WAITING,
    I_BACKOFF,
    I_CFREE,
    I_DHEAD,
    I_DLEN,
    I_RETRIES,
    I_RHEAP,
    M_RETRIES,
    M_RETRY_DENIED,
    M_SENT,
    O_BAD,
    O_OK,
    O_THROTTLED,
    O_TIMEOUT,
    R_BUDGET,
    R_BUDGET_BURST,
    R_RETRY_BAD,
    R_RETRY_BASE,
    R_RETRY_CAP,
    WHERE_QUEUE,
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
    "retry_due",
    "sent",
    "succeeded",
    "take_deadline",
    "take_retry",
]

BACKOFFS = ("none", "exponential", "full-jitter", "equal-jitter", "decorrelated-jitter")
NONE, EXPONENTIAL, FULL_JITTER, EQUAL_JITTER, DECORRELATED = range(len(BACKOFFS))

_INF = float("inf")


@step
def open_call(w: Any, x: float, obj: int, tag: int, client: int) -> int:
    """A new call for a request admitted at ``x`` (the caller made room: ``world.with_room``); its client's
    budget gains its share."""
    n = w.ints[I_CFREE] - 1
    w.ints[I_CFREE] = n
    call = w.c_free[n]
    w.c_arrival[call] = x
    w.c_object[call] = obj
    w.c_tag[call] = tag
    w.c_client[call] = client
    w.c_attempt[call] = 0
    w.c_started[call] = -_INF
    w.c_inst[call] = -1
    w.c_sleep[call] = w.reals[R_RETRY_BASE]
    burst = w.reals[R_BUDGET_BURST]
    tokens = w.tokens[client] + w.reals[R_BUDGET]
    w.tokens[client] = tokens if tokens < burst else burst
    return call


@step
def sent(p: Any, w: Any, call: int, x: float) -> None:
    """The call's next attempt leaves for the balancer at ``x``: it is the current one, its deadline timed."""
    w.c_state[call] = C_WAITING
    w.c_sent[call] = x
    w.c_started[call] = -_INF
    w.c_inst[call] = -1
    w.measures[M_SENT] += 1.0
    if w.c_attempt[call] > 0:
        w.measures[M_RETRIES] += 1.0
    size = len(w.d_time)
    tail = (w.ints[I_DHEAD] + w.ints[I_DLEN]) % size
    w.d_time[tail] = x + p[P.timeout_s]
    w.d_call[tail] = call
    w.ints[I_DLEN] += 1


@inline_step
def current(w: Any, call: int, sent_at: float) -> bool:
    """Whether an attempt sent at ``sent_at`` is the call's current one (its client still waits for it)."""
    return w.c_state[call] == C_WAITING and w.c_sent[call] == sent_at


@step
def _close_call(w: Any, call: int) -> None:
    w.c_state[call] = C_FREE
    w.c_tag[call] = -1
    w.c_free[w.ints[I_CFREE]] = call
    w.ints[I_CFREE] += 1


@step
def call_ok(w: Any, call: int, x: float, waited: bool, t0: float) -> None:
    """The current attempt succeeded at ``x``: the call ends well; its user waited since the call opened."""
    decide(w, O_OK, x - w.c_arrival[call], waited, second_of(t0, x), w.c_tag[call])
    _close_call(w, call)


@step
def backoff_delay(w: Any, call: int, n: int) -> float:
    """How long the call waits before its ``n``-th retry (1 = the first), by the clients' backoff."""
    kind = w.ints[I_BACKOFF]
    if kind == NONE:
        return 0.0
    base = w.reals[R_RETRY_BASE]
    cap = w.reals[R_RETRY_CAP]
    if kind == DECORRELATED:
        high = 3.0 * w.c_sleep[call]
        sleep = base + uniform(w.gen) * (high - base) if high > base else base
        sleep = sleep if sleep < cap else cap
        w.c_sleep[call] = sleep
        return sleep
    expo = base * 2.0**n
    expo = expo if expo < cap else cap
    if kind == FULL_JITTER:
        return uniform(w.gen) * expo
    if kind == EQUAL_JITTER:
        return expo / 2.0 + uniform(w.gen) * (expo / 2.0)
    return expo


@step
def _where(w: Any, call: int, x: float) -> int:
    """Where a timed-out attempt spent its time: a queue when it never started, else as ``where_spent``."""
    start = w.c_started[call]
    if w.c_inst[call] < 0 or start == -_INF:
        return WHERE_QUEUE
    return where_spent(w, w.c_inst[call], start - w.c_sent[call], x - start)


@inline_step
def failed(
    w: Any, call: int, sent_at: float, outcome: int, response: float, waited: bool, second: int, tag: int, x: float,
    t0: float,
) -> None:  # fmt: skip
    """An attempt failed at ``x``: without a call, its request's outcome (``outcomes.decide``); with one, the
    call's business if the attempt is still its current one."""
    if call < 0:
        decide(w, outcome, response, waited, second, tag)
    elif current(w, call, sent_at):
        call_failed(w, call, outcome, x, t0)


@inline_step
def succeeded(
    w: Any, call: int, sent_at: float, response: float, waited: bool, second: int, tag: int, x: float, t0: float
) -> None:
    """An attempt succeeded at ``x``: its request's outcome, or its call's if it is still the current one."""
    if call < 0:
        decide(w, O_OK, response, waited, second, tag)
    elif current(w, call, sent_at):
        call_ok(w, call, x, waited, t0)


@step
def call_failed(w: Any, call: int, outcome: int, x: float, t0: float) -> None:
    """The current attempt failed at ``x`` (``outcome``: world.O_…): retried after its backoff when the failure
    is retryable, attempts are left and the client's budget allows; else the call ends with this outcome."""
    n = w.c_attempt[call] + 1
    retryable = outcome != O_THROTTLED and (outcome != O_BAD or w.reals[R_RETRY_BAD] != 0.0)
    if retryable and n <= w.ints[I_RETRIES]:
        client = w.c_client[call]
        if w.reals[R_BUDGET] > 0.0:
            if w.tokens[client] < 1.0:
                w.measures[M_RETRY_DENIED] += 1.0
                _final(w, call, outcome, x, t0)
                return
            w.tokens[client] -= 1.0
        w.c_attempt[call] = n
        w.c_state[call] = C_BACKOFF
        push_on(w.r_time, w.r_id, w.ints, I_RHEAP, x + backoff_delay(w, call, n), call)
        return
    _final(w, call, outcome, x, t0)


@step
def _final(w: Any, call: int, outcome: int, x: float, t0: float) -> None:
    """The call ends with its last attempt's failure: the user's response time runs from the call's opening."""
    second = second_of(t0, x)
    tag = w.c_tag[call]
    if outcome == O_TIMEOUT:
        timed_out(w, _where(w, call, x), x - w.c_arrival[call], w.c_started[call] != w.c_sent[call], second, tag)
    else:
        decide(w, outcome, x - w.c_arrival[call], False, second, tag)
    _close_call(w, call)


@inline_step
def deadline_due(w: Any) -> float:
    """When the earliest pending deadline comes due (∞: none)."""
    return w.d_time[w.ints[I_DHEAD]] if w.ints[I_DLEN] > 0 else _INF


@step
def take_deadline(p: Any, w: Any, x: float, t0: float) -> None:
    """The earliest deadline came due at ``x``: if its attempt is still current, the client gives up on it."""
    head = w.ints[I_DHEAD]
    call = w.d_call[head]
    due = w.d_time[head]
    w.ints[I_DHEAD] = (head + 1) % len(w.d_time)
    w.ints[I_DLEN] -= 1
    if w.c_state[call] == C_WAITING and w.c_sent[call] + p[P.timeout_s] == due:
        call_failed(w, call, O_TIMEOUT, x, t0)


@inline_step
def retry_due(w: Any) -> float:
    """When the earliest backoff ends (∞: none)."""
    return w.r_time[0] if w.ints[I_RHEAP] > 0 else _INF


@step
def take_retry(w: Any) -> int:
    """The call whose backoff ended first (removed from the heap); the caller sends its next attempt."""
    return pop_on(w.r_time, w.r_id, w.ints, I_RHEAP)

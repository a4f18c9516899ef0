"""Attempts and calls of a chain minute, each from a pool of rows (world.py ``att_*``, ``call_*``) given out and
back without allocating: the compiled loop must not allocate (``kernel.unmanaged``), so Python makes room
before the minute (``world.with_room``) and these steps hand rows out. A row's generation grows as it is given
back, so an event still pending for the attempt or call it held is recognised as stale when it comes.
"""

from __future__ import annotations

from typing import Any

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
    AR_ARRIVED,
    AR_DEADLINE,
    AR_SENT,
    C_COPY1,
    C_COPY2,
    C_DONE,
    C_EDGE,
    C_GEN,
    C_HEDGED,
    C_NEXT,
    C_ORIGIN,
    C_PARENT,
    C_RETRIES,
    C_SPAN,
    C_TRY,
    FINISHED,
    I_AFREE,
    I_CFREE,
    WAITING,
)
from oncallsim.model.kernel import step

__all__ = ["copy_alive", "free_calls", "maybe_free", "new_attempt", "new_call"]


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
    ai[a, A_QUEUE] = -1
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

"""The chain's timer lists (world.py): a caller's timers on its calls into service s at s's timeout, and the
clients' at their deadline. Each list falls due in the order added, so it is a doubly linked list through the
attempts and the loop looks only at the heads; a timer nobody waits on any more is unlinked at once
(``untime``) rather than left to fire and do nothing. Its own module because the lists' order is its promise:
when a service's timeout changes between minutes the order no longer holds, and ``requeue_timers`` moves that
list onto the event heap (heap.py).
"""

from __future__ import annotations

from typing import Any

from oncallsim.model.chain.heap import push
from oncallsim.model.chain.world import A_CALL, A_GEN, A_SVC, A_TIMED, A_TNEXT, A_TPREV, AR_DEADLINE, EV_TIMER, I_TMOVED
from oncallsim.model.kernel import step, unmanaged

__all__ = ["add_timer", "requeue_timers", "untime"]


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

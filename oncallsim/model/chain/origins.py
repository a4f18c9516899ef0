"""Where a client's failure began (docs/graphs.md, "Where the failures began"): the service a failed request is
counted against (``M_BEGUN``). A wait that ran out is blamed on the deepest service still working on it; a wait
for a worker at a service more than half of whose held workers wait on one stage of calls, on that stage's
callee, and so on down (``stage_held``: counted up by the loop as a worker starts waiting on a stage, down by
``unhold_stage``; read by ``blocker`` alone). Its own module because attribution chooses where a failure is
counted, never whether there is one: no other number of the minute depends on it.
"""

from __future__ import annotations

from typing import Any

from oncallsim.model.chain.attempts import copy_alive
from oncallsim.model.chain.layout import EI_CALLEE
from oncallsim.model.chain.world import (
    A_FIRST,
    A_HELD_STAGE,
    A_ORIGIN,
    A_PHASE,
    A_SVC,
    C_COPY1,
    C_COPY2,
    C_DONE,
    C_GEN1,
    C_GEN2,
    C_NEXT,
    FINISHED,
    SI_BUSY,
    WAITING,
    WORKING,
)
from oncallsim.model.kernel import step

__all__ = ["blocker", "unhold_stage", "where"]


@step
def blocker(w: Any, s: int) -> int:
    """Where a wait for a worker at service ``s`` began: at ``s``, unless more than half of its held workers wait
    on one stage of calls — then, by the same rule, at that stage's first call's callee."""
    while True:
        busy = w.svc_i[s, SI_BUSY]
        below = -1
        for g in range(w.stage_first[s], w.stage_first[s + 1]):
            if 2 * w.stage_held[g] > busy:
                below = w.edge_i[w.stage_edges[g], EI_CALLEE]
                break
        if below < 0:
            return s
        s = below


@step
def where(w: Any, a: int) -> int:
    """Where a wait for attempt ``a`` that ran out (its caller's timer, its client's deadline) began: the
    deepest service still working on it. Waiting for a worker (or on the network there): ``blocker`` of its
    service; at its own work: its service; waiting on calls: the first unanswered call's awaited copy, and so on
    down; answered already (its answer on the way back): where its failure began, or its service."""
    while True:
        s = w.att_i[a, A_SVC]
        phase = w.att_i[a, A_PHASE]
        if phase == WAITING:
            return blocker(w, s)
        if phase == WORKING:
            return s
        if phase == FINISHED:
            origin = w.att_i[a, A_ORIGIN]
            return origin if origin >= 0 else s
        below = -1
        c = w.att_i[a, A_FIRST]
        while c >= 0 and below < 0:
            if w.call_i[c, C_DONE] == 0:
                if copy_alive(w, w.call_i[c, C_COPY1], w.call_i[c, C_GEN1]):
                    below = w.call_i[c, C_COPY1]
                elif copy_alive(w, w.call_i[c, C_COPY2], w.call_i[c, C_GEN2]):
                    below = w.call_i[c, C_COPY2]
            c = w.call_i[c, C_NEXT]
        if below < 0:
            return s
        a = below


@step
def unhold_stage(w: Any, a: int) -> None:
    """The attempt's worker no longer waits on its stage's calls (the stage is done, or the worker freed)."""
    g = w.att_i[a, A_HELD_STAGE]
    if g >= 0:
        w.stage_held[g] -= 1
        w.att_i[a, A_HELD_STAGE] = -1

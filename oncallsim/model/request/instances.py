"""The fleet as instances: which ones each balancer sends to (its rotation), and what a dead one does.

An instance is in a balancer's rotation while that balancer's view of the registry lists it and the operator
has not ejected it. The pooled balancer sees the registry as it is; each client-side balancer learns of a
change ``registry_poll_s`` × (client + ½) / clients after it (a long-poll; discovery.py keeps the registry).
Health (``world.health``): a refused connection fails in ``REFUSED_S``; a hung instance, or one whose zone is
off the network, holds the request until its client gives up. A slow one takes 1/speed times the CPU time.
"""

from __future__ import annotations

import math
from typing import Any

from oncallsim.model.kernel import step
from oncallsim.model.request.workers import free_add, free_remove
from oncallsim.model.request.world import I_CLIENTS, I_ENABLED, MAX_CLIENTS, R_NEXT_VIEW

__all__ = ["POOL", "in_pool", "refresh_views", "sync_free"]

POOL = MAX_CLIENTS  # the pooled balancer's row of ``world.rot``
_INF = math.inf


@step
def in_pool(w: Any, i: int, serving: int) -> bool:
    """Whether the pooled balancer sends to instance ``i`` now."""
    return i < serving and w.reg[i] != 0 and w.ejected[i] == 0


@step
def refresh_views(w: Any, x: float, serving: int) -> None:
    """Apply the registry's evictions due by ``x``, rebuild every balancer's rotation as it sees things at
    ``x``, and note when the next view changes (``reals[R_NEXT_VIEW]``)."""
    nxt = _INF
    for i in range(len(w.reg)):
        if w.evict_at[i] <= x:
            w.reg_prev[i] = w.reg[i]
            w.reg[i] = 0
            w.reg_at[i] = w.evict_at[i]
            w.evict_at[i] = _INF
        elif w.evict_at[i] < nxt:
            nxt = w.evict_at[i]
    for c in range(w.ints[I_CLIENTS]):
        lag = w.view_lag[c]
        m = 0
        for i in range(serving):
            seen = w.reg[i]
            at = w.reg_at[i] + lag
            if x < at:
                seen = w.reg_prev[i]
                if at < nxt:
                    nxt = at
            if seen != 0 and w.ejected[i] == 0:
                w.rot[c, m] = i
                m += 1
        w.nrot[c] = m
    m = 0
    for i in range(serving):
        if in_pool(w, i, serving):
            w.rot[POOL, m] = i
            m += 1
    w.nrot[POOL] = m
    w.reals[R_NEXT_VIEW] = nxt


@step
def sync_free(w: Any, wpi: int) -> None:
    """The pooled balancer hands requests to free workers of instances in its rotation only: the free set
    follows the rotation (the other balancers pick an instance first and need all of them)."""
    enabled = w.ints[I_ENABLED]
    serving = enabled // wpi
    for k in range(enabled):
        want = (not w.w_busy[k]) and in_pool(w, k // wpi, serving)
        if want and w.free_pos[k] < 0:
            free_add(w, k)
        elif not want and w.free_pos[k] >= 0:
            free_remove(w, k)

"""Hedging (docs/graphs.md): a caller sends a second copy of a try that has not answered after the callee's
latency quantile as its callers have seen it (the last ``HEDGE_WINDOW`` answers of first copies; the declared
quantile until ``HEDGE_MIN_SEEN``). The steps here own that record (world.py ``seen``, ``edge_delay``) and the
selection that reads a quantile from it without sorting; the loop only asks when to hedge and tells what it saw.
"""

from __future__ import annotations

from typing import Any

from oncallsim.model.chain.layout import EF_HEDGE_DECLARED_S, EI_CALLEE, EI_CALLER, SV_HEDGE_Q
from oncallsim.model.chain.world import HEDGE_MIN_SEEN, HEDGE_REFRESH, HEDGE_WINDOW, SI_SEEN
from oncallsim.model.kernel import step

__all__ = ["hedge_delay", "saw", "select"]


@step
def select(v: Any, n: int, k: int) -> float:
    """The k-th smallest of v[0:n] (0-based), by partitioning v in place (Hoare's selection)."""
    lo = 0
    hi = n - 1
    while lo < hi:
        pivot = v[(lo + hi) >> 1]
        i = lo
        j = hi
        while i <= j:
            while v[i] < pivot:
                i += 1
            while v[j] > pivot:
                j -= 1
            if i <= j:
                tmp = v[i]
                v[i] = v[j]
                v[j] = tmp
                i += 1
                j -= 1
        if k <= j:
            hi = j
        elif k >= i:
            lo = i
        else:
            return v[k]
    return v[k]


@step
def hedge_delay(w: Any, e: int) -> float:
    """How long a caller waits before it hedges a try of call ``e``: the callee's latency at the caller's
    quantile as its callers have seen it (linear between order statistics, as numpy's default), read again every
    ``HEDGE_REFRESH`` answers; the declared quantile plus the network until ``HEDGE_MIN_SEEN`` answers."""
    callee = w.edge_i[e, EI_CALLEE]
    seen = w.svc_i[callee, SI_SEEN]
    if seen < HEDGE_MIN_SEEN:
        return w.edge_f[e, EF_HEDGE_DECLARED_S]
    if w.edge_read_at[e] >= 0 and seen - w.edge_read_at[e] < HEDGE_REFRESH:
        return w.edge_delay[e]
    n = seen if seen < HEDGE_WINDOW else HEDGE_WINDOW
    for k in range(n):
        w.scratch[k] = w.seen[callee, k]
    q = w.svc[w.edge_i[e, EI_CALLER], SV_HEDGE_Q]
    h = (n - 1) * q
    lo = int(h)
    low = select(w.scratch, n, lo)
    value = low
    if lo + 1 < n and h > lo:
        high = w.scratch[lo + 1]  # after the selection every value past lo is at least low: the next is their least
        for k in range(lo + 2, n):
            if w.scratch[k] < high:
                high = w.scratch[k]
        value = low + (h - lo) * (high - low)
    w.edge_delay[e] = value
    w.edge_read_at[e] = seen
    return value


@step
def saw(w: Any, s: int, seconds: float) -> None:
    """A first copy's latency as its caller saw it: to its answer, or to the moment its hedge answered first (a
    lower bound; see verify/chains.py ``seen`` for why the censored record still finds the quantile)."""
    k = w.svc_i[s, SI_SEEN]
    w.seen[s, k % HEDGE_WINDOW] = seconds
    w.svc_i[s, SI_SEEN] = k + 1

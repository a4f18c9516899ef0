"""A service's retry budget (docs/graphs.md; world.py ``budget``): the share of its calls over the last
``BUDGET_WINDOW_S`` seconds that may be retries, counted in a ring of one-second buckets. Its own module
because it is one of the per-service mechanisms a caller consults before it retries (loop.py
``retry_allowed``) and it keeps the ring's window: the loop only adds into the current second's buckets the
tries and retries it sends (``budget_roll`` has emptied the seconds gone before it reads them).
"""

from __future__ import annotations

from typing import Any

from oncallsim.model.chain.layout import SV_BUDGET
from oncallsim.model.chain.world import BUDGET_WINDOW_S, SI_BUDGET_SECOND
from oncallsim.model.kernel import step

__all__ = ["budget_allows", "budget_roll"]


@step
def budget_roll(w: Any, s: int, x: float) -> None:
    """Bring the service's retry budget's ring to the second of ``x``: buckets of seconds gone are emptied."""
    second = int(x)
    last = w.svc_i[s, SI_BUDGET_SECOND]
    if second <= last:
        return
    gap = second - last
    if gap > BUDGET_WINDOW_S:
        gap = BUDGET_WINDOW_S
    for k in range(1, gap + 1):
        slot = (last + k) % BUDGET_WINDOW_S
        w.budget[s, slot] = 0
        w.budget[s, BUDGET_WINDOW_S + slot] = 0
    w.svc_i[s, SI_BUDGET_SECOND] = second


@step
def budget_allows(w: Any, s: int, x: float) -> bool:
    """A retry is sent only if the service's retries would then be at most its budget's share of its calls
    (first tries and retries) over the last ``BUDGET_WINDOW_S`` seconds, this one included."""
    budget_roll(w, s, x)
    sent = 0
    retries = 0
    for k in range(BUDGET_WINDOW_S):
        sent += w.budget[s, k]
        retries += w.budget[s, BUDGET_WINDOW_S + k]
    return retries + 1 <= w.svc[s, SV_BUDGET] * (sent + 1)

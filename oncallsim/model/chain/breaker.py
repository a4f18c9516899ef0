"""A caller's breaker per callee (docs/graphs.md, "Breakers, limits and queues"): Google SRE's adaptive
throttling, as Kratos's (aegis's) sre breaker, over a window of buckets (world.py ``br_*``, one row per
(caller, callee) pair). Its own module because it owns those buckets and the rule that reads them; the loop
asks it before each copy is sent and tells it each copy's outcome. A caller without a breaker never reaches
these steps, so nothing is drawn or counted for it.
"""

from __future__ import annotations

from typing import Any

from oncallsim.model.chain.layout import (
    BREAKER_BUCKETS,
    EI_CALLER,
    EI_PAIR,
    SV_BREAKER_BUCKET_S,
    SV_BREAKER_K,
    SV_BREAKER_MIN,
)
from oncallsim.model.kernel import step
from oncallsim.model.request.generator import uniform

__all__ = ["breaker_mark", "breaker_rejects"]


@step
def breaker_mark(w: Any, x: float, e: int, accepted: bool) -> None:
    """A request of call ``e``'s (caller, callee) breaker, accepted or not, in its window's bucket of ``x``."""
    caller = w.edge_i[e, EI_CALLER]
    number = int(x / w.svc[caller, SV_BREAKER_BUCKET_S])
    p = w.edge_i[e, EI_PAIR]
    b = number % BREAKER_BUCKETS
    if w.br_stamp[p, b] != number:  # a bucket of a window gone: emptied
        w.br_stamp[p, b] = number
        w.br_n[p, b] = 0.0
        w.br_ok[p, b] = 0.0
    w.br_n[p, b] += 1.0
    if accepted:
        w.br_ok[p, b] += 1.0


@step
def breaker_rejects(w: Any, x: float, e: int) -> bool:
    """Google SRE's adaptive throttling, as aegis's sre breaker: over the window's buckets (the current one
    included), with ``requests`` at least the minimum and at least K·``accepts``, a request is rejected with
    probability (requests − K·accepts)/(requests + 1). A number is drawn only then."""
    caller = w.edge_i[e, EI_CALLER]
    number = int(x / w.svc[caller, SV_BREAKER_BUCKET_S])
    p = w.edge_i[e, EI_PAIR]
    requests = 0.0
    accepts = 0.0
    for b in range(BREAKER_BUCKETS):
        stamp = w.br_stamp[p, b]
        if stamp > number - BREAKER_BUCKETS and stamp <= number:
            requests += w.br_n[p, b]
            accepts += w.br_ok[p, b]
    k = w.svc[caller, SV_BREAKER_K]
    if requests < w.svc[caller, SV_BREAKER_MIN] or requests <= k * accepts:
        return False
    return uniform(w.gen) < (requests - k * accepts) / (requests + 1.0)

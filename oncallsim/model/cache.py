"""The TTL cache in front of the database (Jung, Berger, Balakrishnan 2003) and its warmth (MODEL.md §3.3)."""

from __future__ import annotations

import math
from typing import Any

from oncallsim.model.kernel import P, compiled

__all__ = ["hit_ratio", "mean_age_s", "refill"]


@compiled
def hit_ratio(admitted_per_s: float, ttl_s: float, warm: float, p: Any) -> float:
    """hit = warm·rT/(1 + rT), r = λ/hot objects (requests per second per object), T = TTL."""
    rt = admitted_per_s / p[P.hot_objects] * ttl_s
    return warm * rt / (1.0 + rt)


@compiled
def mean_age_s(ttl_s: float) -> float:
    """Mean age of a cached answer ≈ T/2 (entries are uniformly old within their TTL)."""
    return ttl_s / 2.0


@compiled
def refill(warm: float, db_factor: float, warmup_active: bool, p: Any) -> float:
    """Next minute's warmth: warm += (1 − warm)(1 − e^(−1/τ))·f_db, plus the warm-up job's step·f_db, capped at 1.

    ``db_factor`` = min(1, DB capacity / DB demand): a saturated database slows both.
    """
    warm += (1.0 - warm) * (1.0 - math.exp(-1.0 / p[P.cache_refill_tau_min])) * db_factor
    if warmup_active:
        warm += p[P.warmup_step] * db_factor
    return min(1.0, warm)

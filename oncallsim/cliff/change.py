"""The single change that takes a service out of the vulnerable zone soonest, read off the map's closed form
(``zone``): the debrief's suggestion, which a counterfactual replay then checks (``policies.counterfactual``).

The levers are the map's own quantities: the retries (fewer attempts per request: the largest N' with
λ(N' + 1) < cμ), the retry budget (the least tight of 50 %, 20 %, 10 %, 5 % with λ(1 + b) < cμ) and the fleet's
floor (cμ grows with the instances: the fewest that bring λA under it, within the largest fleet). A setting of the
clients takes effect at once; new instances only once booted. The soonest wins; between two as soon, the one
that leaves the wider margin below the cliff (1 − λA/cμ).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from oncallsim.cliff.point import OperatingPoint

__all__ = ["BUDGETS", "Change", "changes"]

BUDGETS = (0.5, 0.2, 0.1, 0.05)
MARGIN = 0.9  # a change must bring λA/cμ under this, not just under 1 (the minute's noise is a few per cent)


class Change(NamedTuple):
    control: str
    value: Any
    delay_min: int  # minutes before it takes effect
    amplified: float  # λA/cμ once it has


def changes(point: OperatingPoint, serving: int, boot_min: int, max_fleet: int) -> list[Change]:
    """Every single change that brings ``point`` under the cliff, soonest first (then the widest margin)."""
    load = point.load
    out: list[Change] = []
    fewer = [n for n in range(point.retries) if load * (n + 1) < MARGIN]
    if fewer:
        out.append(Change("retries", max(fewer), 0, load * (max(fewer) + 1)))
    tighter = [b for b in BUDGETS if point.retries > 0 and (point.retry_budget == 0 or b < point.retry_budget)]
    fits = [b for b in tighter if load * (1 + min(point.retries, b)) < MARGIN]
    if fits:
        out.append(Change("retry_budget", max(fits), 0, load * (1 + min(point.retries, max(fits)))))
    amplified = load * point.server().amplification
    floor = math.ceil(serving * amplified / MARGIN)
    if 0 < serving < floor <= max_fleet:
        out.append(Change("floor", floor, boot_min, amplified * serving / floor))
    return sorted(out, key=lambda c: (c.delay_min, c.amplified))

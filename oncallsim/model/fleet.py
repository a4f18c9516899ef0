"""The fleet: instances serving and booting, the floor, and the target-tracking autoscaler (MODEL.md §3.9).

The fleet is a collection: ``booting`` holds each booting instance's minutes left, so instances of different
ages (and, later, of different health) can coexist.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from oncallsim.model.params import Params

__all__ = ["Fleet", "autoscale", "desired_fleet"]

# ceil(serving·utilization/target) must not jump a step on float round-off (e.g. 10·0.6/0.6).
_CEIL_SLACK = 1e-9


class Fleet(NamedTuple):
    serving: int
    booting: tuple[int, ...] = ()
    quiet_minutes: int = 0

    @property
    def size(self) -> int:
        return self.serving + len(self.booting)

    def start(self, count: int, boot_delay: int) -> Fleet:
        """Start ``count`` instances now; with no boot delay they serve at once."""
        if count <= 0:
            return self
        if boot_delay <= 0:
            return Fleet(self.serving + count, self.booting, self.quiet_minutes)
        return Fleet(self.serving, self.booting + (boot_delay,) * count, self.quiet_minutes)

    def shrink_to(self, size: int) -> Fleet:
        """Remove instances down to ``size``, the latest-started booting ones first, then serving ones."""
        excess = self.size - size
        if excess <= 0:
            return self
        booting = tuple(sorted(self.booting))
        drop_booting = min(excess, len(booting))
        booting = booting[: len(booting) - drop_booting]
        return Fleet(self.serving - (excess - drop_booting), booting, self.quiet_minutes)

    def match_floor(self, floor: int, boot_delay: int) -> Fleet:
        """Autoscaler off: exactly the floor; extras go at once, missing ones start booting."""
        if self.size > floor:
            return self.shrink_to(floor)
        return self.start(floor - self.size, boot_delay)

    def tick(self) -> tuple[Fleet, int]:
        """One minute of booting; returns the fleet and how many instances became ready."""
        if not self.booting:
            return self, 0
        left = tuple(m - 1 for m in self.booting)
        still = tuple(m for m in left if m > 0)
        ready = len(left) - len(still)
        return Fleet(self.serving + ready, still, self.quiet_minutes), ready


def desired_fleet(serving: int, utilization: float, target: float, floor: int, params: Params) -> int:
    """Target tracking: ⌈serving·utilization/target⌉ within [floor, max]."""
    want = math.ceil(serving * utilization / target - _CEIL_SLACK)
    return min(params.max_fleet, max(floor, want))


def autoscale(fleet: Fleet, desired: int, params: Params) -> tuple[Fleet, int]:
    """One autoscaler decision; returns the fleet and the change (+ started, − removed).

    No new scale-out while instances boot; scale-in removes serving instances only, by at most
    max(1, ⌊20 %·fleet⌋), after ``scale_in_quiet_minutes`` minutes in a row with desired < fleet.
    """
    size = fleet.size
    if desired > size:
        if fleet.booting:
            return Fleet(fleet.serving, fleet.booting, 0), 0
        return Fleet(fleet.serving, fleet.booting, 0).start(desired - size, params.boot_delay_min), desired - size
    if desired < size:
        quiet = fleet.quiet_minutes + 1
        if quiet >= params.scale_in_quiet_minutes:
            step = max(1, math.floor(params.scale_in_max_share * size))
            remove = min(size - desired, step, fleet.serving)
            return Fleet(fleet.serving - remove, fleet.booting, 0), -remove
        return Fleet(fleet.serving, fleet.booting, quiet), 0
    return Fleet(fleet.serving, fleet.booting, 0), 0

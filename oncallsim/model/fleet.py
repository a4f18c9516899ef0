"""The fleet: instances serving and booting, the floor, and the target-tracking autoscaler (MODEL.md §3.9).

Booting instances are counted by minutes left: ``boot[k]`` instances serve in k minutes (``boot[0]`` is
unused), so instances of different ages coexist. The functions change ``boot`` in place and return the
serving count, as compiled code wants; ``Fleet`` is the read-only view the surfaces get.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from oncallsim.model.kernel import P, compiled, step

__all__ = ["Fleet", "autoscale", "desired_fleet", "fleet_size", "match_floor", "start", "tick"]

# ceil(serving·utilization/target) must not jump a step on float round-off (e.g. 10·0.6/0.6).
_CEIL_SLACK = 1e-9


class Fleet(NamedTuple):
    """What the console shows of the fleet: serving, booting (minutes left of each), quiet minutes."""

    serving: int
    booting: tuple[int, ...] = ()
    quiet_minutes: int = 0

    @property
    def size(self) -> int:
        return self.serving + len(self.booting)


@step
def booting_count(boot: Any) -> int:
    total = 0
    for k in range(len(boot)):
        total += boot[k]
    return total


@step
def fleet_size(serving: int, boot: Any) -> int:
    return serving + booting_count(boot)


@compiled
def start(serving: int, boot: Any, count: int, boot_delay: int) -> int:
    """Start ``count`` instances now; with no boot delay they serve at once. Returns the serving count."""
    if count <= 0:
        return serving
    if boot_delay <= 0:
        return serving + count
    boot[boot_delay] += count
    return serving


@step
def shrink_to(serving: int, boot: Any, size: int) -> int:
    """Remove instances down to ``size``, the latest-started booting ones first, then serving ones."""
    excess = fleet_size(serving, boot) - size
    k = len(boot) - 1
    while excess > 0 and k >= 1:
        drop = min(excess, boot[k])
        boot[k] -= drop
        excess -= drop
        k -= 1
    return serving - max(excess, 0)


@step
def match_floor(serving: int, boot: Any, floor: int, boot_delay: int) -> int:
    """Autoscaler off: exactly the floor; extras go at once, missing ones start booting."""
    size = fleet_size(serving, boot)
    if size > floor:
        return shrink_to(serving, boot, floor)
    return start(serving, boot, floor - size, boot_delay)


@compiled
def tick(serving: int, boot: Any) -> tuple[int, int]:
    """One minute of booting; returns (serving, how many instances became ready)."""
    if len(boot) < 2:
        return serving, 0
    ready = boot[1]
    for k in range(1, len(boot) - 1):
        boot[k] = boot[k + 1]
    boot[len(boot) - 1] = 0
    return serving + ready, ready


@compiled
def desired_fleet(serving: int, utilization: float, target: float, floor: int, p: Any) -> int:
    """Target tracking: ⌈serving·utilization/target⌉ within [floor, max]."""
    want = math.ceil(serving * utilization / target - _CEIL_SLACK)
    return min(int(p[P.max_fleet]), max(floor, want))


@step
def autoscale(serving: int, boot: Any, quiet: int, desired: int, p: Any) -> tuple[int, int, int]:
    """One autoscaler decision; returns (serving, quiet minutes, change: + started, − removed).

    No new scale-out while instances boot; scale-in removes serving instances only, by at most
    max(1, ⌊20 %·fleet⌋), after ``scale_in_quiet_minutes`` minutes in a row with desired < fleet.
    """
    booting = booting_count(boot)
    size = serving + booting
    if desired > size:
        if booting > 0:
            return serving, 0, 0
        return start(serving, boot, desired - size, int(p[P.boot_delay_min])), 0, desired - size
    if desired < size:
        quiet += 1
        if quiet >= p[P.scale_in_quiet_minutes]:
            step = max(1, math.floor(p[P.scale_in_max_share] * size))
            remove = min(size - desired, step, serving)
            return serving - remove, 0, -remove
        return serving, quiet, 0
    return serving, 0, 0

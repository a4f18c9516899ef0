"""The free workers: an unordered set with O(1) add, remove and a uniformly random pick (pooled balancing)."""

from __future__ import annotations

from typing import Any

from oncallsim.model.kernel import inline_step
from oncallsim.model.request.world import I_FREE

__all__ = ["free_add", "free_remove"]


@inline_step
def free_add(w: Any, k: int) -> None:
    n = w.ints[I_FREE]
    w.free[n] = k
    w.free_pos[k] = n
    w.ints[I_FREE] = n + 1


@inline_step
def free_remove(w: Any, k: int) -> None:
    pos = w.free_pos[k]
    last = w.ints[I_FREE] - 1
    moved = w.free[last]
    w.free[pos] = moved
    w.free_pos[moved] = pos
    w.free_pos[k] = -1
    w.ints[I_FREE] = last

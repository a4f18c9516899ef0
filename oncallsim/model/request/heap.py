"""The request engine's event heap: the next phase end of each busy worker (and of each warm-up read), a
binary heap on time in two arrays of the world (``heap_time``, ``heap_id``; ``ints[I_HEAP]`` entries)."""

from __future__ import annotations

from typing import Any

from oncallsim.model.kernel import inline_step
from oncallsim.model.request.world import I_HEAP

__all__ = ["pop", "push", "replace_top"]


@inline_step
def push(w: Any, time: float, ident: int) -> None:
    ht, hi = w.heap_time, w.heap_id
    i = w.ints[I_HEAP]
    w.ints[I_HEAP] = i + 1
    while i > 0:
        parent = (i - 1) >> 1
        if ht[parent] <= time:
            break
        ht[i] = ht[parent]
        hi[i] = hi[parent]
        i = parent
    ht[i] = time
    hi[i] = ident


@inline_step
def sift_down(w: Any, time: float, ident: int) -> None:
    """Put (time, ident) at the root, then down to its place among the heap's ``ints[I_HEAP]`` entries."""
    ht, hi = w.heap_time, w.heap_id
    n = w.ints[I_HEAP]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and ht[c + 1] < ht[c]:
            c += 1
        if ht[c] >= time:
            break
        ht[i] = ht[c]
        hi[i] = hi[c]
        i = c
    ht[i] = time
    hi[i] = ident


@inline_step
def pop(w: Any) -> int:
    """Remove the earliest phase end; returns its id (its time was ``heap_time[0]``)."""
    top = w.heap_id[0]
    n = w.ints[I_HEAP] - 1
    w.ints[I_HEAP] = n
    if n > 0:
        sift_down(w, w.heap_time[n], w.heap_id[n])
    return top


@inline_step
def replace_top(w: Any, time: float, ident: int) -> None:
    """Replace the earliest phase end by a later one of the same worker (one sift, not a pop and a push)."""
    sift_down(w, time, ident)

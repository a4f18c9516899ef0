"""Binary heaps on time in two arrays each (times, ids), their sizes in ``ints``: the request engine's event
heap (the next phase end of each busy worker and of each warm-up read: ``heap_time``, ``heap_id``,
``ints[I_HEAP]`` entries) and the clients' backoffs (calls.py: ``r_time``, ``r_id``, ``ints[I_RHEAP]``)."""

from __future__ import annotations

from typing import Any

from oncallsim.model.kernel import inline_step
from oncallsim.model.request.workers import I_HEAP

__all__ = ["pop", "pop_on", "push", "push_on", "replace_top"]


@inline_step
def push_on(ht: Any, hi: Any, ints: Any, size: int, time: float, ident: int) -> None:
    """Add (time, ident) to the heap in ``ht``, ``hi`` of ``ints[size]`` entries."""
    i = ints[size]
    ints[size] = i + 1
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
def sift_down(ht: Any, hi: Any, n: int, time: float, ident: int) -> None:
    """Put (time, ident) at the root, then down to its place among the heap's ``n`` entries."""
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
def pop_on(ht: Any, hi: Any, ints: Any, size: int) -> int:
    """Remove the earliest entry; returns its id (its time was ``ht[0]``)."""
    top = hi[0]
    n = ints[size] - 1
    ints[size] = n
    if n > 0:
        sift_down(ht, hi, n, ht[n], hi[n])
    return top


@inline_step
def push(workers: Any, time: float, ident: int) -> None:
    push_on(workers.heap_time, workers.heap_id, workers.ints, I_HEAP, time, ident)


@inline_step
def pop(workers: Any) -> int:
    """Remove the earliest phase end; returns its id (its time was ``heap_time[0]``)."""
    return pop_on(workers.heap_time, workers.heap_id, workers.ints, I_HEAP)


@inline_step
def replace_top(workers: Any, time: float, ident: int) -> None:
    """Replace the earliest phase end by a later one of the same worker (one sift, not a pop and a push)."""
    sift_down(workers.heap_time, workers.heap_id, workers.ints[I_HEAP], time, ident)

"""The free workers: an unordered set with O(1) add, remove and a uniformly random pick (pooled balancing)."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from oncallsim.model.jit import by_reference
from oncallsim.model.kernel import inline_step

__all__ = ["free_add", "free_remove"]

MAX_WORKERS = 200_000

# ints[...]: free workers; heap entries; busy workers; workers of the serving instances (the first ones); the
# instances running the bad build (the first ones)
I_FREE, I_HEAP, I_BUSY, I_ENABLED, I_NBAD = range(5)


@by_reference
class Workers(NamedTuple):
    """Every worker of every instance slot (max fleet × workers per instance), the free ones, and the heap of
    the busy workers' next phase ends (the warm-up job's reads in flight share it, after the workers' ids)."""

    ints: npt.NDArray[np.int64]
    w_busy: npt.NDArray[np.bool_]
    w_arrival: npt.NDArray[np.float64]
    w_start: npt.NDArray[np.float64]
    w_object: npt.NDArray[np.int64]
    w_queries: npt.NDArray[np.int64]  # database reads still to do
    w_miss: npt.NDArray[np.bool_]
    w_bad: npt.NDArray[np.bool_]
    w_tag: npt.NDArray[np.int64]  # sample row, −1 when not sampled
    w_instance: npt.NDArray[np.int64]  # the instance each worker belongs to (worker // workers per instance)
    w_client: npt.NDArray[np.int64]  # the client that sent the worker's request
    w_held: npt.NDArray[np.bool_]  # the worker holds a connection its dead instance never answers
    w_call: npt.NDArray[np.int64]  # the call (calls.py) whose attempt the worker holds, −1 none (no retries)
    w_low: npt.NDArray[np.bool_]  # the worker's request is sheddable (for the per-class measures)
    inst_busy: npt.NDArray[np.int64]  # busy workers per instance
    free: npt.NDArray[np.int64]  # the free workers, unordered (a random one takes the next request)
    free_pos: npt.NDArray[np.int64]  # each worker's place in ``free``, −1 when busy or not serving
    heap_time: npt.NDArray[np.float64]  # the next phase end of each busy worker / warm-up read: a binary heap
    heap_id: npt.NDArray[np.int64]


def new_workers(instances: int, per_instance: int, other_events: int) -> Workers:
    """All workers idle and none free yet (the first minute frees those of the serving instances); room in the
    heap for ``other_events`` more (the warm-up job's reads)."""
    count = instances * per_instance
    heap = count + other_events
    return Workers(
        ints=np.zeros(5, dtype=np.int64),
        w_busy=np.zeros(count, dtype=np.bool_),
        w_arrival=np.zeros(count),
        w_start=np.zeros(count),
        w_object=np.zeros(count, dtype=np.int64),
        w_queries=np.zeros(count, dtype=np.int64),
        w_miss=np.zeros(count, dtype=np.bool_),
        w_bad=np.zeros(count, dtype=np.bool_),
        w_tag=np.full(count, -1, dtype=np.int64),
        w_instance=np.arange(count, dtype=np.int64) // per_instance,
        w_client=np.zeros(count, dtype=np.int64),
        w_held=np.zeros(count, dtype=np.bool_),
        w_call=np.full(count, -1, dtype=np.int64),
        w_low=np.zeros(count, dtype=np.bool_),
        inst_busy=np.zeros(instances, dtype=np.int64),
        free=np.zeros(count, dtype=np.int64),
        free_pos=np.full(count, -1, dtype=np.int64),
        heap_time=np.zeros(heap),
        heap_id=np.zeros(heap, dtype=np.int64),
    )


@inline_step
def free_add(workers: Any, k: int) -> None:
    n = workers.ints[I_FREE]
    workers.free[n] = k
    workers.free_pos[k] = n
    workers.ints[I_FREE] = n + 1


@inline_step
def free_remove(workers: Any, k: int) -> None:
    pos = workers.free_pos[k]
    last = workers.ints[I_FREE] - 1
    moved = workers.free[last]
    workers.free[pos] = moved
    workers.free_pos[moved] = pos
    workers.free_pos[k] = -1
    workers.ints[I_FREE] = last

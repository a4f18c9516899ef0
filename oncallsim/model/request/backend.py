"""The cache and the database behind the instances, as the request engine holds them: one expiry time per hot
object (a hit when it lies in the future), the database's partitions (each a FIFO single server, so a read's
completion is known when it arrives: Lindley's recursion), and the warm-up job's reads in flight."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from oncallsim.model.jit import by_reference

__all__ = ["I_WCURSOR", "I_WFREE", "MAX_OBJECTS", "WARMUP_CONCURRENCY", "Backend", "new_backend"]

MAX_OBJECTS = 5_000_000  # one expiry time per hot object: 40 MB at most
WARMUP_CONCURRENCY = 1024  # the warm-up job's queries in flight; beyond it the job skips a read
# ints[...]: the warm-up job's free readers; the next object it reads
I_WFREE, I_WCURSOR = range(2)


@by_reference
class Backend(NamedTuple):
    """The cache's expiry times, the partitions' next free times, the warm-up job's readers."""

    ints: npt.NDArray[np.int64]
    expiry: npt.NDArray[np.float64]  # per hot object: cached until (s); a hit when it lies in the future
    db_free: npt.NDArray[np.float64]  # per partition: when its server is next free (FIFO: Lindley)
    warm_object: npt.NDArray[np.int64]  # the warm-up job's queries in flight: the object each will store
    warm_free: npt.NDArray[np.int64]


def new_backend(objects: int, partitions: int) -> Backend:
    """An empty cache (the engine fills it before minute 0), idle partitions, every warm-up reader free."""
    ints = np.zeros(2, dtype=np.int64)
    ints[I_WFREE] = WARMUP_CONCURRENCY
    return Backend(
        ints=ints,
        expiry=np.full(objects, -np.inf),
        db_free=np.full(partitions, -np.inf),  # free since ever
        warm_object=np.zeros(WARMUP_CONCURRENCY, dtype=np.int64),
        warm_free=np.arange(WARMUP_CONCURRENCY, dtype=np.int64),
    )

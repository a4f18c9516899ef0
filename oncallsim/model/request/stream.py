"""The minute's arrivals: the pipeline's count of uniform times, sorted (``edges.sorted_arrivals``), or in
queue-only mode (M/M/N) a Poisson stream carried from one minute to the next."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from oncallsim.model.jit import by_reference

__all__ = [
    "MODE_PIPELINE",
    "MODE_QUEUE_ONLY",
    "R_CURSOR",
    "R_NEXT_STREAM",
    "R_NEXT_WARM",
    "R_SECOND",
    "Stream",
    "new_stream",
    "with_room",
]

MODE_PIPELINE = 0  # the whole service: shedding, cache, database, builds
MODE_QUEUE_ONLY = 1  # M/M/N: a Poisson stream, exponential service of the app time, no cache or database
# reals[...]: queue-only mode: the next arrival of the Poisson stream; the minute's loop where it stopped (a
# controller's tick: physics.request_minute_part): its next arrival's index, the warm-up job's next read, the next
# second to sample
R_NEXT_STREAM, R_CURSOR, R_NEXT_WARM, R_SECOND = range(4)


@by_reference
class Stream(NamedTuple):
    reals: npt.NDArray[np.float64]
    arrivals: npt.NDArray[np.float64]  # the minute's arrival times (grown before a minute that needs more)


def new_stream() -> Stream:
    return Stream(reals=np.zeros(4), arrivals=np.zeros(1024))


def with_room(stream: Stream, arrivals: int) -> Stream:
    """Room for a minute of ``arrivals`` (compiled code does not allocate)."""
    if arrivals > len(stream.arrivals):
        return stream._replace(arrivals=np.zeros(max(arrivals, 2 * len(stream.arrivals))))
    return stream

"""The server side's adaptive concurrency limit: Kratos's BBR-like limiter, per instance (reference §3.1,
aegis / Kratos v2 ``ratelimit/bbr``).

- CPU: the EMA of the instance's sampled CPU (``cpu.py``: its workers' CPU time, not their waits on the
  database, so a database-bound instance does not trip it; cpu = 0.95·cpu + 0.05·reading every 500 ms).
- Window: 100 buckets of 100 ms, the current one left out. maxPass = the most completions in a bucket (≥ 1);
  minRT = the least average response time of a bucket, ms rounded up (≥ 1); the in-flight cap is
  floor(maxPass × minRT × 10 / 1000): peak throughput × least latency, Little's law's bandwidth-delay product.
- A request arriving at the instance is rejected with 429 at once when the CPU EMA is ≥ 800 ‰ and in-flight
  (being served or waiting at the instance) is above 1 and above the cap; after the CPU falls below, the same
  in-flight test holds for 1 s counted from the episode's first drop (a cool-down).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from oncallsim.model.control_spec import REQUEST_ONLY, ControlSpec
from oncallsim.model.jit import by_reference
from oncallsim.model.kernel import step
from oncallsim.model.request.queues import Q_LEN
from oncallsim.model.request.windows import ring_bucket

__all__ = ["BUCKET_S", "cap", "completed", "limited"]

LIMITER_BUCKETS = 100  # the window: 100 buckets of 100 ms
# ints[...]: the limiter (``LIMITERS``' index); 1 while an instance limited in the last minute; the model
# revision's rules (settings.set_revision)
I_LIMITER, I_LIMITING, I_REVISION = range(3)
LIMITERS = ("off", "bbr")

CONTROLS = (
    ControlSpec(
        "limiter",
        "choice",
        "Concurrency limiter",
        "bbr: each instance rejects with 429 at once the requests beyond its measured capacity (peak "
        "throughput × least latency) while its CPU stays above 80 % (Kratos's BBR limiter); off: none.",
        "off",
        choices=LIMITERS,
        engines=REQUEST_ONLY,
        section="overload",
        piece="limiter",
        slot=I_LIMITER,
        moves={"": "set the concurrency limiter to %(value)s"},
        in_force={"off": "", "": "the %(value)s limiter"},
    ),
)


@by_reference
class Limiter(NamedTuple):
    """Each instance's window of completions and its drop episode, and which limiter is on."""

    ints: npt.NDArray[np.int64]
    reals: npt.NDArray[np.float64]
    drop_at: npt.NDArray[np.float64]  # per instance: the first drop of this episode (s), −1 none
    lim_pass: npt.NDArray[np.int64]  # lim_pass[instance, bucket]: completions in that 100 ms bucket
    lim_rt: npt.NDArray[np.float64]  # … their response times summed (ms, each rounded up)
    lim_stamp: npt.NDArray[np.int64]  # … the bucket's number (time / 100 ms), to know a stale one


def new_limiter(instances: int) -> Limiter:
    """Off, an empty window."""
    return Limiter(
        ints=np.zeros(3, dtype=np.int64),
        reals=np.zeros(1),
        drop_at=np.full(instances, -1.0),
        lim_pass=np.zeros((instances, LIMITER_BUCKETS), dtype=np.int64),
        lim_rt=np.zeros((instances, LIMITER_BUCKETS)),
        lim_stamp=np.full((instances, LIMITER_BUCKETS), -1, dtype=np.int64),
    )


BUCKET_S = 0.1
THRESHOLD = 800.0  # ‰
COOL_DOWN_S = 1.0


@step
def completed(limiter: Any, i: int, x: float, rt: float) -> None:
    """A completion at instance ``i`` (any outcome) in the window's current bucket."""
    b, stale = ring_bucket(limiter.lim_stamp[i], int(x / BUCKET_S))
    if stale:
        limiter.lim_pass[i, b] = 0
        limiter.lim_rt[i, b] = 0.0
    limiter.lim_pass[i, b] += 1
    ms = math.ceil(rt * 1000.0)
    if ms > 0:
        limiter.lim_rt[i, b] += ms


@step
def cap(limiter: Any, i: int, x: float) -> int:
    """floor(maxPass × minRT × buckets per second / 1000) over the window before the current bucket; −1 when the
    window holds no completion yet (nothing to estimate from: no drop)."""
    current = int(x / BUCKET_S)
    max_pass = 0
    min_rt = math.inf
    for b in range(LIMITER_BUCKETS):
        number = limiter.lim_stamp[i, b]
        if number < 0 or number >= current or number < current - LIMITER_BUCKETS:
            continue
        n = limiter.lim_pass[i, b]
        if n > max_pass:
            max_pass = n
        if n > 0:
            avg = math.ceil(limiter.lim_rt[i, b] / n)
            if avg < min_rt:
                min_rt = avg
    if max_pass == 0:
        return -1
    if min_rt < 1.0:
        min_rt = 1.0
    return math.floor(max_pass * min_rt * (1.0 / BUCKET_S) / 1000.0)


@step
def limited(limiter: Any, cpu: Any, workers: Any, queues: Any, i: int, x: float) -> bool:
    """Whether instance ``i`` rejects a request arriving at ``x`` (Kratos's shouldDrop)."""
    in_flight = workers.inst_busy[i] + queues.qs[Q_LEN, i]
    if cpu.ema[i] < THRESHOLD:
        if limiter.drop_at[i] < 0.0:
            return False
        if x - limiter.drop_at[i] <= COOL_DOWN_S:
            limit = cap(limiter, i, x)
            return limit >= 0 and in_flight > 1 and in_flight > limit
        limiter.drop_at[i] = -1.0
        return False
    limit = cap(limiter, i, x)
    drop = limit >= 0 and in_flight > 1 and in_flight > limit
    if drop and limiter.drop_at[i] < 0.0:
        limiter.drop_at[i] = x
    return drop

"""Adaptive client-side throttling: the SRE book's formula, as Kratos v3 keeps it (reference §2.1–2.2).

Each client keeps, over the last 3 s (10 buckets of 300 ms), ``requests`` (every request its application asked
for, those it rejected itself included) and ``accepts`` (those the backend answered successfully). Once it has
at least ``MIN_REQUESTS`` and requests ≥ K·accepts, it rejects a new request locally with probability
max(0, (requests − K·accepts)/(requests + 1)). [decision] Kratos v3's accounting: a local reject counts as a
request that failed (aegis and v3 ``MarkFailed``; the old warden did not count it), which drives a client whose
backend fails more than 1 − 1/K of what it is sent to a near shut-off with a probing trickle (§2.3). Only the
client-side balancers have clients (not ``pooled``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from oncallsim.model.control_spec import REQUEST_ONLY, ControlSpec
from oncallsim.model.jit import by_reference
from oncallsim.model.kernel import step
from oncallsim.model.request.generator import uniform
from oncallsim.model.request.windows import ring_bucket

__all__ = ["BUCKET_S", "MIN_REQUESTS", "mark", "reject_probability", "throttled"]

THROTTLE_BUCKETS = 10  # the window: 10 buckets of 300 ms
I_THROTTLE = 0  # ints[...]: 1 when the clients throttle themselves
R_THROTTLE_K = 0  # reals[...]: the formula's K

CONTROLS = (
    ControlSpec(
        "client_throttle",
        "bool",
        "Client throttling",
        "Each client rejects requests itself, with probability max(0, (requests − K·accepts)/(requests + 1)) "
        "over the last 3 s (K = ⟪throttle_k⟫): a failing backend is spared the load it would refuse anyway.",
        False,
        engines=REQUEST_ONLY,
        section="overload",
        piece="throttle",
        slot=I_THROTTLE,
        moves={"on": "switched client throttling on", "off": "switched client throttling off"},
        in_force={"on": "client throttling", "off": ""},
    ),
)


@by_reference
class Throttle(NamedTuple):
    """Each client's window of requests and accepts, and the throttling settings."""

    ints: npt.NDArray[np.int64]
    reals: npt.NDArray[np.float64]
    thr: npt.NDArray[np.float64]  # thr[0 requests | 1 accepts, client, bucket]
    thr_stamp: npt.NDArray[np.int64]  # thr_stamp[client, bucket]: the bucket's number (time / 300 ms)


def new_throttle(clients: int) -> Throttle:
    """Off, an empty window for each of ``clients``."""
    return Throttle(
        ints=np.zeros(1, dtype=np.int64),
        reals=np.zeros(1),
        thr=np.zeros((2, clients, THROTTLE_BUCKETS)),
        thr_stamp=np.full((clients, THROTTLE_BUCKETS), -1, dtype=np.int64),
    )


BUCKET_S = 0.3
MIN_REQUESTS = 20.0


@step
def mark(throttle: Any, c: int, x: float, accepted: bool) -> None:
    """One request of client ``c`` decided at ``x``: accepted by the backend, or not (a failure or a local reject)."""
    b, stale = ring_bucket(throttle.thr_stamp[c], int(x / BUCKET_S))
    if stale:
        throttle.thr[0, c, b] = 0.0
        throttle.thr[1, c, b] = 0.0
    throttle.thr[0, c, b] += 1.0
    if accepted:
        throttle.thr[1, c, b] += 1.0


@step
def reject_probability(throttle: Any, c: int, x: float) -> float:
    """max(0, (requests − K·accepts)/(requests + 1)) over the window, 0 below the minimum of requests."""
    number = int(x / BUCKET_S)
    requests = 0.0
    accepts = 0.0
    for b in range(THROTTLE_BUCKETS):
        stamp = throttle.thr_stamp[c, b]
        if stamp > number - THROTTLE_BUCKETS and stamp <= number:
            requests += throttle.thr[0, c, b]
            accepts += throttle.thr[1, c, b]
    k = throttle.reals[R_THROTTLE_K]
    if requests < MIN_REQUESTS or requests < k * accepts:
        return 0.0
    return (requests - k * accepts) / (requests + 1.0)


@step
def throttled(throttle: Any, gen: Any, c: int, x: float) -> bool:
    """Whether client ``c`` rejects a request at ``x`` itself (counted as a failed request when it does)."""
    p = reject_probability(throttle, c, x)
    if p > 0.0 and uniform(gen) < p:
        mark(throttle, c, x, False)
        return True
    return False

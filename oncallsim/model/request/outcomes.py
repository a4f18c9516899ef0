"""Counting a request's outcome in the minute it becomes known, and the latency histograms' quantiles."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from oncallsim.model.jit import by_reference
from oncallsim.model.kernel import inline_step, step, unmanaged
from oncallsim.model.request.instances import UP

__all__ = ["decide", "hist_add", "inst_hist_add", "quantile", "second_of", "timed_out", "where_spent"]

HIST_BIN_S = 1e-4  # latency histograms: 0.1 ms bins up to the timeout, then one bin for timeouts
INSTANCE_HIST_BIN_S = 1e-3  # per-instance latency histograms: 1 ms bins (the fleet view's p99)
MAX_SAMPLES = 2_000

# measures[...], reset every minute
(
    M_ARRIVED,
    M_SHED,
    M_ADMITTED,
    M_DECIDED,
    M_OVERLOAD,
    M_TIMEOUT,
    M_BAD_ERROR,
    M_WAITED,
    M_LOOKUPS,
    M_HITS,
    M_QUERIES,
    M_QUERY_TIME,
    M_DB_BUSY,
    M_COMPLETED,
    M_SERVICE,
    M_BUSY,
    M_WASTED,
    M_MAX_QUEUE,
    M_STARTED,
    M_STARTED_BAD,
    M_WAIT_SUM,
    M_WAIT_COUNT,
    M_PRESENT,
    M_DROPPED,
    M_ABANDONED,
    M_REFUSED,
    M_TO_QUEUE,
    M_TO_SLOW,
    M_TO_DEAD,
    M_TO_SERVICE,
    M_LIMITED,
    M_THROTTLED,
    M_SENT,
    M_RETRIES,
    M_RETRY_DENIED,
    M_OK,
    M_CUT_SHORT,
    M_LOW_ADMITTED,
    M_LOW_OK,
    M_LOW_WAIT_SUM,
    M_LOW_WAIT_COUNT,
) = range(41)
N_MEASURES = 41
# M_LOW_…: the sheddable (low-priority) class's admitted requests, successes and queue waits (disciplines.py's
# priority); the critical class's are the totals' remainders. The minute's record leaves them out (its schema is
# the run files'); the zoom's sampled requests carry each one's class
# where a timed-out request spent its time (M_TO_QUEUE + where): a queue; a slow instance; a dead one; in
# service (its CPU and database reads)
WHERE_QUEUE, WHERE_SLOW, WHERE_DEAD, WHERE_SERVICE = range(4)

# per-second lines: seconds[line, second]
S_ARRIVALS, S_COMPLETED, S_ERRORS, S_QUEUE, S_IN_FLIGHT = range(5)
SECOND_LINES = ("arrivals", "completed", "errors", "queue", "in_flight")
# per instance: instances[line, instance]
N_SERVED, N_ERRORS, N_BUSY, N_BAD, N_LIMITED = range(5)
INSTANCE_LINES = ("served", "errors", "busy_s", "bad_build", "limited")

# sampled requests: samples[row, field]
SAMPLE_FIELDS = (
    "arrival_s",  # seconds since the minute's start (negative: arrived in an earlier minute)
    "low_priority",
    "outcome",  # OUTCOMES index
    "hit",  # 1 hit, 0 miss, −1 never looked up
    "wait_ms",
    "service_ms",
    "queries",
    "instance",  # −1: never reached one
    "response_ms",
)
(X_ARRIVAL, X_LOW, X_OUTCOME, X_HIT, X_WAIT, X_SERVICE, X_QUERIES, X_INSTANCE, X_RESPONSE) = range(9)
OUTCOMES = ("ok", "bad_build", "timeout", "overload", "shed", "pending", "dropped", "refused", "limited", "throttled")
O_OK, O_BAD, O_TIMEOUT, O_OVERLOAD, O_SHED, O_PENDING, O_DROPPED, O_REFUSED, O_LIMITED, O_THROTTLED = range(10)
# ints[...]: requests sampled this minute; arrivals since the run began (every n-th is sampled)
I_NSAMPLES, I_SEQ = range(2)


@by_reference
class Meter(NamedTuple):
    """What a minute measures: the counts, the latency histograms, the per-second and per-instance lines and
    the sampled requests' paths (the zoom), all reset when the minute opens."""

    ints: npt.NDArray[np.int64]
    measures: npt.NDArray[np.float64]
    latency_hist: npt.NDArray[np.int64]  # response times of the minute's decided requests (timeouts last)
    wait_hist: npt.NDArray[np.int64]  # queue waits of the minute's requests that started service
    seconds: npt.NDArray[np.float64]
    instances: npt.NDArray[np.float64]
    inst_hist: npt.NDArray[np.int64]  # per instance: response times of the minute (1 ms bins, timeouts last)
    samples: npt.NDArray[np.float64]


def new_meter(instances: int, timeout_s: float) -> Meter:
    bins = round(timeout_s / HIST_BIN_S) + 1
    return Meter(
        ints=np.zeros(2, dtype=np.int64),
        measures=np.zeros(N_MEASURES),
        latency_hist=np.zeros(bins + 1, dtype=np.int64),
        wait_hist=np.zeros(bins + 1, dtype=np.int64),
        seconds=np.zeros((len(SECOND_LINES), 60)),
        instances=np.zeros((len(INSTANCE_LINES), instances)),
        inst_hist=np.zeros((instances, round(timeout_s / INSTANCE_HIST_BIN_S) + 2), dtype=np.int64),
        samples=np.zeros((MAX_SAMPLES, len(SAMPLE_FIELDS))),
    )


_PER_BIN = 1.0 / HIST_BIN_S


@unmanaged
def hist_add(hist: Any, value: float) -> None:
    b = int(value * _PER_BIN)
    last = len(hist) - 2
    hist[b if b <= last else last] += 1


@inline_step
def decide(meter: Any, outcome: int, response: float, waited: bool, second: int, tag: int) -> None:
    """Count a request's outcome in this minute (overload, or dropped by a queue discipline or limit: failed at
    once, no response time; a drop counts as overload in the record, and on its own in the extras)."""
    m = meter.measures
    m[M_DECIDED] += 1.0
    if outcome == O_REFUSED:  # a dead instance's refused connection: an error at once
        m[M_REFUSED] += 1.0
    elif outcome == O_OVERLOAD or outcome == O_DROPPED or outcome == O_LIMITED or outcome == O_THROTTLED:
        m[M_OVERLOAD] += 1.0
        if outcome == O_DROPPED:
            m[M_DROPPED] += 1.0
        elif outcome == O_LIMITED:
            m[M_LIMITED] += 1.0
        elif outcome == O_THROTTLED:
            m[M_THROTTLED] += 1.0
    else:
        if outcome == O_TIMEOUT:
            m[M_TIMEOUT] += 1.0
            meter.latency_hist[len(meter.latency_hist) - 1] += 1
        else:
            hist_add(meter.latency_hist, response)
            if outcome == O_BAD:
                m[M_BAD_ERROR] += 1.0
            else:
                m[M_OK] += 1.0
        if waited:
            m[M_WAITED] += 1.0
    if outcome != O_OK:
        meter.seconds[S_ERRORS, second] += 1.0
    if tag >= 0:
        meter.samples[tag, X_OUTCOME] = outcome
        meter.samples[tag, X_RESPONSE] = response * 1000.0


@inline_step
def timed_out(meter: Any, where: int, timeout: float, waited: bool, second: int, tag: int) -> None:
    """A timeout, counted with where the request spent its time (world.WHERE_…)."""
    decide(meter, O_TIMEOUT, timeout, waited, second, tag)
    meter.measures[M_TO_QUEUE + where] += 1.0


@step
def where_spent(fleet: Any, instance: int, wait: float, service: float) -> int:
    """Where a timed-out request spent its time: a dead or slow instance, a queue (it waited longer than it
    was served), or in service (CPU and database reads)."""
    if fleet.health[instance] != UP:
        return WHERE_DEAD
    if fleet.speed[instance] < fleet.base_speed[instance]:  # slower than its machine
        return WHERE_SLOW
    return WHERE_QUEUE if wait > service else WHERE_SERVICE


@step
def inst_hist_add(meter: Any, instance: int, response: float) -> None:
    """An instance's answer (or its client's timeout) in its latency histogram (the fleet view's p99)."""
    hist = meter.inst_hist[instance]
    b = int(response / INSTANCE_HIST_BIN_S)
    last = len(hist) - 1
    hist[b if b < last else last] += 1


@step
def second_of(t0: float, x: float) -> int:
    s = int(x - t0)
    return 0 if s < 0 else (59 if s > 59 else s)


@unmanaged
def quantile(hist: Any, q: float, timeout: float) -> float:
    """The q-quantile (s) of a latency histogram (0.1 ms bins, timeouts in the last), interpolated in its bin."""
    total = 0
    for b in range(len(hist)):
        total += hist[b]
    if total == 0:
        return 0.0
    target = q * total
    seen = 0.0
    for b in range(len(hist) - 1):
        if hist[b] > 0 and seen + hist[b] >= target:
            return (b + (target - seen) / hist[b]) * HIST_BIN_S
        seen += hist[b]
    return timeout

"""Counting a request's outcome in the minute it becomes known, and the latency histograms' quantiles."""

from __future__ import annotations

from typing import Any

from oncallsim.model.kernel import inline_step, step, unmanaged
from oncallsim.model.request.world import (
    HIST_BIN_S,
    INSTANCE_HIST_BIN_S,
    M_BAD_ERROR,
    M_DECIDED,
    M_DROPPED,
    M_LIMITED,
    M_OK,
    M_OVERLOAD,
    M_REFUSED,
    M_THROTTLED,
    M_TIMEOUT,
    M_TO_QUEUE,
    M_WAITED,
    O_BAD,
    O_DROPPED,
    O_LIMITED,
    O_OK,
    O_OVERLOAD,
    O_REFUSED,
    O_THROTTLED,
    O_TIMEOUT,
    S_ERRORS,
    UP,
    WHERE_DEAD,
    WHERE_QUEUE,
    WHERE_SERVICE,
    WHERE_SLOW,
    X_OUTCOME,
    X_RESPONSE,
)

__all__ = ["decide", "hist_add", "inst_hist_add", "quantile", "second_of", "timed_out", "where_spent"]

_PER_BIN = 1.0 / HIST_BIN_S


@unmanaged
def hist_add(hist: Any, value: float) -> None:
    b = int(value * _PER_BIN)
    last = len(hist) - 2
    hist[b if b <= last else last] += 1


@inline_step
def decide(w: Any, outcome: int, response: float, waited: bool, second: int, tag: int) -> None:
    """Count a request's outcome in this minute (overload, or dropped by a queue discipline or limit: failed at
    once, no response time; a drop counts as overload in the record, and on its own in the extras)."""
    m = w.measures
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
            w.latency_hist[len(w.latency_hist) - 1] += 1
        else:
            hist_add(w.latency_hist, response)
            if outcome == O_BAD:
                m[M_BAD_ERROR] += 1.0
            else:
                m[M_OK] += 1.0
        if waited:
            m[M_WAITED] += 1.0
    if outcome != O_OK:
        w.seconds[S_ERRORS, second] += 1.0
    if tag >= 0:
        w.samples[tag, X_OUTCOME] = outcome
        w.samples[tag, X_RESPONSE] = response * 1000.0


@inline_step
def timed_out(w: Any, where: int, timeout: float, waited: bool, second: int, tag: int) -> None:
    """A timeout, counted with where the request spent its time (world.WHERE_…)."""
    decide(w, O_TIMEOUT, timeout, waited, second, tag)
    w.measures[M_TO_QUEUE + where] += 1.0


@step
def where_spent(w: Any, instance: int, wait: float, service: float) -> int:
    """Where a timed-out request spent its time: a dead or slow instance, a queue (it waited longer than it
    was served), or in service (CPU and database reads)."""
    if w.health[instance] != UP:
        return WHERE_DEAD
    if w.speed[instance] < 1.0:
        return WHERE_SLOW
    return WHERE_QUEUE if wait > service else WHERE_SERVICE


@step
def inst_hist_add(w: Any, instance: int, response: float) -> None:
    """An instance's answer (or its client's timeout) in its latency histogram (the fleet view's p99)."""
    hist = w.inst_hist[instance]
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

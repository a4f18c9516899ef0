"""A service's BBR limiter (docs/graphs.md, "Breakers, limits and queues"; the one-service engine's is
model/request/limiter.py): Kratos's shouldDrop, from the service's CPU estimate (its workers' own work,
sampled every 500 ms) and its in-flight against maxPass × minRT over the last buckets of completions (world.py
``bbr_*``, ``SR_CPU_*``). Its own module because it owns that state; the loop asks it on each arrival at a
service with the limiter on and tells it when work starts and ends.
"""

from __future__ import annotations

import math
from typing import Any

from oncallsim.model.chain.layout import SV_BBR, SV_WORKERS
from oncallsim.model.chain.world import (
    AR_STARTED,
    BBR_BUCKET_S,
    BBR_BUCKETS,
    BBR_COOL_DOWN_S,
    BBR_THRESHOLD,
    CPU_DECAY,
    CPU_TICK_S,
    SI_BUSY,
    SI_QLEN,
    SR_CPU_ACC,
    SR_CPU_EMA,
    SR_CPU_LAST,
    SR_CPU_TICK,
    SR_DROP_AT,
)
from oncallsim.model.kernel import step

__all__ = ["bbr_cap", "bbr_completed", "bbr_sheds", "cpu_roll", "switch_limiter"]

_INF = math.inf


@step
def cpu_roll(w: Any, s: int, x: float) -> None:
    """Service ``s``'s CPU samples up to ``x``, every 500 ms: the reading is its workers' own work begun since the
    last sample against its workers × 500 ms (‰; a worker waiting on its calls burns none); a zero reading leaves
    the last non-zero one, and the estimate takes 0.95 of itself and 0.05 of that reading (aegis's cpuproc)."""
    while w.svc_r[s, SR_CPU_TICK] <= x:
        reading = 1000.0 * w.svc_r[s, SR_CPU_ACC] / (w.svc[s, SV_WORKERS] * CPU_TICK_S)
        if reading > 0.0:
            w.svc_r[s, SR_CPU_LAST] = reading
        w.svc_r[s, SR_CPU_EMA] = w.svc_r[s, SR_CPU_EMA] * CPU_DECAY + w.svc_r[s, SR_CPU_LAST] * (1.0 - CPU_DECAY)
        w.svc_r[s, SR_CPU_ACC] = 0.0
        w.svc_r[s, SR_CPU_TICK] += CPU_TICK_S


@step
def bbr_completed(w: Any, s: int, x: float, a: int) -> None:
    """An attempt service ``s`` had started is done with (answered, or dropped on its caller's cancellation), in
    BBR's current bucket: its time from its worker's start, whole ms rounded up."""
    number = int(x / BBR_BUCKET_S)
    b = number % BBR_BUCKETS
    if w.bbr_stamp[s, b] != number:
        w.bbr_stamp[s, b] = number
        w.bbr_pass[s, b] = 0
        w.bbr_rt[s, b] = 0.0
    w.bbr_pass[s, b] += 1
    ms = math.ceil((x - w.att_r[a, AR_STARTED]) * 1000.0)
    if ms > 0:
        w.bbr_rt[s, b] += ms


@step
def bbr_cap(w: Any, s: int, x: float) -> float:
    """floor(maxPass × minRT × 10 / 1000) over the 99 buckets before the current one (aegis's reduce); 0 when they
    hold no completion (aegis then drops above one in flight)."""
    current = int(x / BBR_BUCKET_S)
    oldest = current - BBR_BUCKETS + 1
    max_pass = 0
    min_rt = _INF
    for b in range(BBR_BUCKETS):
        number = w.bbr_stamp[s, b]
        if number < oldest or number >= current:
            continue
        n = w.bbr_pass[s, b]
        if n > max_pass:
            max_pass = n
        if n > 0:
            avg = math.ceil(w.bbr_rt[s, b] / n)
            if avg < min_rt:
                min_rt = avg
    if max_pass == 0:
        return 0.0
    if min_rt < 1.0:
        min_rt = 1.0
    return math.floor(max_pass * min_rt * (1.0 / BBR_BUCKET_S) / 1000.0)


@step
def bbr_sheds(w: Any, s: int, x: float) -> bool:
    """Kratos's shouldDrop at service ``s`` for an arrival at ``x``: its CPU estimate at or above 800 ‰ and its
    in-flight (its workers held and its queue) above 1 and above the cap; for 1 s after the episode's first shed,
    the in-flight test alone."""
    cpu_roll(w, s, x)
    in_flight = w.svc_i[s, SI_QLEN] + w.svc_i[s, SI_BUSY]
    drop_at = w.svc_r[s, SR_DROP_AT]
    if w.svc_r[s, SR_CPU_EMA] < BBR_THRESHOLD:
        if drop_at < 0.0:
            return False
        if x - drop_at <= BBR_COOL_DOWN_S:
            return in_flight > 1 and in_flight > bbr_cap(w, s, x)
        w.svc_r[s, SR_DROP_AT] = -1.0
        return False
    drop = in_flight > 1 and in_flight > bbr_cap(w, s, x)
    if drop and drop_at < 0.0:
        w.svc_r[s, SR_DROP_AT] = x
    return drop


def switch_limiter(w: Any, s: int, on: bool, now: float) -> None:
    """Service ``s``'s limiter switched on or off at ``now`` (a minute's start: the operator's
    ``<service>.limiter``). Switched on, it begins measuring as a process that has just started its CPU sampler:
    the estimate from zero, the first sample 500 ms on (the completions' buckets are stamped with their time, so
    those older than its window are never read); off, it sheds nothing and measures nothing."""
    if bool(w.svc[s, SV_BBR]) == on:
        return
    w.svc[s, SV_BBR] = 1.0 if on else 0.0
    if on:
        w.svc_r[s, SR_CPU_ACC] = 0.0
        w.svc_r[s, SR_CPU_LAST] = 0.0
        w.svc_r[s, SR_CPU_EMA] = 0.0
        w.svc_r[s, SR_CPU_TICK] = now + CPU_TICK_S
        w.svc_r[s, SR_DROP_AT] = -1.0

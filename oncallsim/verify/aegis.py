"""Aegis's BBR limiter in front of a fleet, simulated in plain Python apart from the engine (the oracle of the
sudden step in ``bbr.py``; issue 23, item 10).

Read from go-kratos/aegis (e0742c6) ``ratelimit/bbr/bbr.go`` and ``internal/window``:

- a CPU EMA every 500 ms, cpu = int64(cpu·0.95 + reading·0.05), the reading in ‰ capped at 1000;
- ``Allow`` rejects when ``shouldDrop``: CPU ≥ 800 ‰ and in-flight > 1 and in-flight > maxInFlight, or, CPU below,
  the same in-flight test for 1 s after the episode's first drop; else in-flight + 1 and a timer starts;
- the ``DoneFunc`` adds the time since ``Allow`` (ms, rounded up, if > 0) to the RT window, 1 to the pass window,
  in-flight − 1;
- the windows are 100 buckets of 100 ms; their reduce reads the 99 buckets before the current one; maxPass = the
  most passes in a bucket (at least 1), minRT = ⌈the least bucket average⌉ (an empty window: the float maximum
  turned into an int64, taken as 1); both are cached for one bucket's duration; maxInFlight = ⌊maxPass × minRT ×
  10 ∕ 1000⌋.

The servers, two ways:

- ``ps``: a Go server. Every admitted request is a goroutine in its handler at once, the handlers share the
  instance's cores (processor sharing: n requests on c cores each progress at min(1, c∕n)); the limiter times the
  handler, so a request's time stretches with the load in proportion to its own work.
- ``fifo``: the engine's instance, a pool of workers behind a FIFO queue; the limiter counts in flight what the
  instance holds (queued or served) and times a request from its admission (``time_from = "admission"``, the
  engine's rule up to model version 2) or from its worker's start (``"start"``, since version 3).

Instances behind round robin, a Poisson stream whose rate is set minute by minute, exponential service; a request
is goodput when answered within the client's timeout (the server still serves the others: no deadline
propagation). The CPU reading is the instance's busy core-time over the 500 ms.
"""

from __future__ import annotations

import heapq
import math
import random
from collections import deque
from typing import NamedTuple

__all__ = ["AegisRun", "simulate"]

BUCKET_S = 0.1
BUCKETS = 100
TICK_S = 0.5
DECAY = 0.95
THRESHOLD = 800
COOL_DOWN_S = 1.0


class AegisRun(NamedTuple):
    goodput: list[float]  # per bin: requests that arrived in it and were answered within the timeout, ∕ s ∕ capacity
    passed: list[float]  # per bin: requests that arrived in it and the limiter let through, ∕ s ∕ capacity


class _Instance:
    """One instance: its limiter's state (aegis's ``BBR``) and its server."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.cpu = 0  # ‰, an int64 in aegis
        self.busy_core_s = 0.0  # since the last tick
        self.busy_since = 0.0
        self.prev_drop: float | None = None
        self.passes: dict[int, int] = {}  # bucket number → passes
        self.rts: dict[int, tuple[int, float]] = {}  # bucket number → (RTs added, their sum in ms)
        self.pass_cache: tuple[int, float] | None = None  # (value, when computed)
        self.rt_cache: tuple[int, float] | None = None
        self.queue: deque[tuple[float, float]] = deque()  # fifo: (arrival, work) waiting for a worker
        self.free = 0  # fifo: idle workers
        self.jobs: list[tuple[float, float]] = []  # ps: heap of (virtual finish, arrival)
        self.virtual = 0.0  # ps: service attained by every job present
        self.virtual_at = 0.0
        self.version = 0  # ps: the current completion event's number


def _window(store: dict[int, int] | dict[int, tuple[int, float]], now: float) -> list[int]:
    current = int(now / BUCKET_S)
    return [b for b in store if current - (BUCKETS - 1) <= b < current]


def _max_pass(o: _Instance, now: float) -> int:
    if o.pass_cache is not None and now - o.pass_cache[1] < BUCKET_S:
        return o.pass_cache[0]
    value = max([1] + [o.passes[b] for b in _window(o.passes, now)])
    o.pass_cache = (value, now)
    return value


def _min_rt(o: _Instance, now: float) -> int:
    if o.rt_cache is not None and now - o.rt_cache[1] < BUCKET_S:
        return o.rt_cache[0]
    least = math.inf
    for b in _window(o.rts, now):
        n, total = o.rts[b]
        if n:
            least = min(least, total / n)
    value = 1 if least == math.inf else max(1, math.ceil(least))
    o.rt_cache = (value, now)
    return value


def _should_drop(o: _Instance, now: float) -> bool:
    def over() -> bool:
        cap = math.floor(_max_pass(o, now) * _min_rt(o, now) * (1.0 / BUCKET_S) / 1000.0)
        return o.in_flight > 1 and o.in_flight > cap

    if o.cpu < THRESHOLD:
        if o.prev_drop is None:
            return False
        if now - o.prev_drop <= COOL_DOWN_S:
            return over()
        o.prev_drop = None
        return False
    drop = over()
    if drop and o.prev_drop is None:
        o.prev_drop = now
    return drop


def _done(o: _Instance, now: float, since: float) -> None:
    b = int(now / BUCKET_S)
    rt = math.ceil((now - since) * 1000.0 - 1e-9)
    if rt > 0:
        n, total = o.rts.get(b, (0, 0.0))
        o.rts[b] = (n + 1, total + rt)
    o.passes[b] = o.passes.get(b, 0) + 1
    if len(o.passes) > 2 * BUCKETS:  # forget what left the window long ago
        for store in (o.passes, o.rts):
            for old in [k for k in store if k < b - BUCKETS]:
                del store[old]
    o.in_flight -= 1


def simulate(
    loads: list[float],
    server: str = "fifo",
    time_from: str = "start",
    limiter: bool = True,
    instances: int = 4,
    cores: int = 4,
    service_s: float = 0.05,
    timeout_s: float = 2.0,
    seed: int = 1,
    minute_s: float = 60.0,
    bin_s: float = 10.0,
) -> AegisRun:
    """``loads``: offered load ∕ capacity minute by minute. Goodput and passed per ``bin_s`` of arrival time."""
    if server not in ("fifo", "ps"):
        raise ValueError(f"server must be fifo or ps, got {server!r}")
    if time_from not in ("admission", "start"):
        raise ValueError(f"time_from must be admission or start, got {time_from!r}")
    rng = random.Random(seed)
    capacity = instances * cores / service_s
    fleet = [_Instance() for _ in range(instances)]
    for o in fleet:
        o.free = cores
    end = minute_s * len(loads)
    bins = math.ceil(end / bin_s)
    good, passed = [0] * bins, [0] * bins
    events: list[tuple[float, int, str, int, float, float]] = []  # (time, seq, kind, instance, a, b)
    seq = 0

    def push(t: float, kind: str, i: int, a: float = 0.0, b: float = 0.0) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(events, (t, seq, kind, i, a, b))

    def busy(o: _Instance) -> int:
        return cores - o.free if server == "fifo" else min(cores, len(o.jobs))

    def account(o: _Instance, t: float) -> None:
        o.busy_core_s += busy(o) * (t - o.busy_since)
        o.busy_since = t

    def advance(o: _Instance, t: float) -> None:  # ps: the service every present job attained since
        if o.jobs:
            o.virtual += (t - o.virtual_at) * min(1.0, cores / len(o.jobs))
        o.virtual_at = t

    def reschedule(o: _Instance, i: int, t: float) -> None:  # ps: the next completion
        o.version += 1
        if o.jobs:
            rate = min(1.0, cores / len(o.jobs))
            push(t + (o.jobs[0][0] - o.virtual) / rate, "ps", i, float(o.version))

    def answered(o: _Instance, t: float, arrival: float, start: float) -> None:
        if limiter:
            _done(o, t, start if (server == "fifo" and time_from == "start") else arrival)
        else:
            o.in_flight -= 1
        if t - arrival <= timeout_s:
            good[int(arrival / bin_s)] += 1

    def next_arrival(t: float) -> float | None:
        while True:
            m = int(t / minute_s)
            if m >= len(loads):
                return None
            rate = loads[m] * capacity
            nt = t + rng.expovariate(rate) if rate > 0 else math.inf
            if nt < (m + 1) * minute_s:
                return nt
            t = (m + 1) * minute_s  # memoryless: draw again from the minute's edge at the next rate

    first = next_arrival(0.0)
    if first is not None:
        push(first, "arrive", -1)
    push(TICK_S, "tick", -1)
    turn = 0
    while events:
        t, _, kind, i, a, b = heapq.heappop(events)
        if t >= end:
            break
        if kind == "tick":
            for o in fleet:
                account(o, t)
                reading = min(1000, int(1000.0 * o.busy_core_s / (cores * TICK_S)))
                o.busy_core_s = 0.0
                o.cpu = int(o.cpu * DECAY + reading * (1.0 - DECAY))
            push(t + TICK_S, "tick", -1)
        elif kind == "arrive":
            i, turn = turn, (turn + 1) % instances
            o = fleet[i]
            if not (limiter and _should_drop(o, t)):
                passed[int(t / bin_s)] += 1
                o.in_flight += 1
                work = rng.expovariate(1.0 / service_s)
                account(o, t)
                if server == "fifo":
                    if o.free > 0:
                        o.free -= 1
                        push(t + work, "fifo", i, t, t)
                    else:
                        o.queue.append((t, work))
                else:
                    advance(o, t)
                    heapq.heappush(o.jobs, (o.virtual + work, t))
                    reschedule(o, i, t)
            nxt = next_arrival(t)
            if nxt is not None:
                push(nxt, "arrive", -1)
        elif kind == "fifo":
            o = fleet[i]
            account(o, t)
            answered(o, t, a, b)
            if o.queue:
                arrival, work = o.queue.popleft()
                push(t + work, "fifo", i, arrival, t)
            else:
                o.free += 1
        else:  # ps
            o = fleet[i]
            if int(a) != o.version:
                continue  # superseded by a later arrival or completion
            account(o, t)
            advance(o, t)
            _, arrival = heapq.heappop(o.jobs)
            answered(o, t, arrival, arrival)
            reschedule(o, i, t)
    scale = bin_s * capacity
    return AegisRun([g / scale for g in good], [p / scale for p in passed])

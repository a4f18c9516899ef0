"""The BBR limiter as the article draws it, and its CPU's rise time from idle (issue 23, item 10).

- Admitted throughput against capacity (the article's figure: as incoming QPS climbs past capacity, the QPS the
  limiter passes stays flat near it; without a limiter a FIFO queue grows until its requests time out and
  goodput collapses). 4 instances × 4 workers, exponential service of 50 ms: capacity c = 320 requests/s; a
  Poisson stream of x·c, a 2 s timeout; measured over the third minute, with ``limiter = "bbr"`` and without.
- The CPU EMA's rise from idle: the limiter drops nothing until its CPU estimate reaches 800 ‰, an EMA of the
  500 ms readings with aegis's decay 0.95. From 0 at a constant reading r its k-th value is r·(1 − 0.95ᵏ), so at
  full load (r = 1000 ‰) it crosses 800 ‰ at the tick k = ⌈ln(1 − 800/r) ∕ ln 0.95⌉ = 32, 16 s after the load
  starts. Measured: an instance idle for a minute, then offered twice its capacity (no timeout within the minute,
  so every error is a 429): the first second with a 429.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from oncallsim.model.request.drive import run_minute
from oncallsim.model.request.outcomes import M_ADMITTED, M_LIMITED, M_OK, S_ERRORS
from oncallsim.model.request.queue_only import queue_only_world
from oncallsim.model.request.settings import set_world

__all__ = ["LOADS", "Throughput", "ema_rise_s", "measured_rise_s", "throughput"]

SERVICE_S = 0.05
INSTANCES, WORKERS = 4, 4
CAPACITY = INSTANCES * WORKERS / SERVICE_S  # requests a second
LOADS = (0.5, 0.7, 0.9, 1.1, 1.3, 1.5, 2.0, 2.5, 3.0)
LOADS_QUICK = (0.7, 1.1, 1.5, 2.0, 3.0)
THRESHOLD = 800.0  # ‰: aegis's cpu threshold
DECAY = 0.95  # aegis: cpu = cpu·0.95 + reading·0.05
TICK_S = 0.5


class Throughput(NamedTuple):
    offered: float  # x: offered ∕ capacity
    passed: float  # requests the limiter let through, ∕ capacity (all of them without a limiter)
    goodput: float  # requests answered well, ∕ capacity
    off_goodput: float  # goodput ∕ capacity without a limiter

    @property
    def ok(self) -> bool:
        """Below capacity everything passes; above it, what passes and goodput stay within [0.8, 1.1] of capacity
        with the limiter, and from 1.3× goodput falls below a fifth of it without (the queue's waits pass the
        timeout; at 1.1× the queue takes most of a minute to get there)."""
        if self.offered < 1.0:
            return self.goodput >= 0.95 * self.offered and self.off_goodput >= 0.95 * self.offered
        held = 0.8 <= self.goodput <= 1.1 and 0.8 <= self.passed <= 1.1
        return held and (self.offered < 1.3 or self.off_goodput < 0.2)


def _ramp(loads: tuple[float, ...], limiter: str, seed: int) -> list[tuple[float, float]]:
    """(passed, goodput) ∕ capacity of each minute of a run whose offered load climbs minute by minute."""
    p, world, st = queue_only_world(INSTANCES * WORKERS, SERVICE_S, seed, WORKERS, timeout_s=2.0)
    set_world(world, balancer="round-robin", limiter=limiter)
    out = []
    for t, load in enumerate(loads):
        world = run_minute(p, world, st, t, poisson_rate=load * CAPACITY).world
        m = world.meter.measures
        out.append(((m[M_ADMITTED] - m[M_LIMITED]) / 60.0 / CAPACITY, m[M_OK] / 60.0 / CAPACITY))
    return out


def throughput(quick: bool = True, seed: int = 21) -> list[Throughput]:
    """The ramp, with the limiter and without: a minute at each load of ``LOADS``, in order."""
    loads = LOADS_QUICK if quick else LOADS
    bbr, off = _ramp(loads, "bbr", seed), _ramp(loads, "off", seed)
    return [Throughput(x, b[0], b[1], o[1]) for x, b, o in zip(loads, bbr, off, strict=True)]


def ema_rise_s(reading: float = 1000.0, decay: float = DECAY, threshold: float = THRESHOLD) -> float:
    """Seconds from idle until the EMA of a constant ``reading`` reaches ``threshold``: ⌈ln(1 − θ/r) ∕ ln d⌉ ticks."""
    return TICK_S * math.ceil(math.log(1.0 - threshold / reading) / math.log(decay))


def measured_rise_s(seed: int = 22) -> tuple[int, float]:
    """(the second of the load in which the first 429 came, the CPU EMA at the end of that minute): one instance
    idle for a minute, then offered twice its capacity."""
    p, world, st = queue_only_world(WORKERS, SERVICE_S, seed, WORKERS, timeout_s=100.0)
    set_world(world, balancer="round-robin", limiter="bbr")
    world = run_minute(p, world, st, 0, poisson_rate=0.0).world
    minute = run_minute(p, world, st, 1, poisson_rate=2.0 * WORKERS / SERVICE_S)
    errors = minute.world.meter.seconds[S_ERRORS]
    first = next((s for s in range(60) if errors[s] > 0), -1)
    return first, float(minute.world.cpu.ema[0])


def saturated_ema(seed: int = 22) -> float:
    """The CPU EMA's level (‰) of a saturated instance after three minutes: the mean reading r the closed form
    takes (a saturated reading falls a little short of 1000 ‰ when a 500 ms period ends between two services)."""
    p, world, st = queue_only_world(WORKERS, SERVICE_S, seed, WORKERS, timeout_s=100.0)
    set_world(world, balancer="round-robin")
    for t in range(3):
        world = run_minute(p, world, st, t, poisson_rate=2.0 * WORKERS / SERVICE_S).world
    return float(world.cpu.ema[0])

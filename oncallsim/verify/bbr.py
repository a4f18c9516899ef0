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
- A sudden step (the flash crowd): a minute at half the capacity, then twice the capacity at once. Until the CPU
  EMA climbs from ~500 to 800 ‰ (~10 s) nothing is dropped and a queue grows past the timeout; then the limiter
  sheds. Goodput per 10 s of the step minute (by arrival: the requests that arrived in those 10 s and were
  answered within the timeout), against aegis's limiter simulated apart (``aegis.py``) in front of the same
  worker pool and timing a request as the engine does (from its worker's start since model version 3, from its
  admission before), and in front of a Go server whose handlers share the cores (processor sharing), where aegis
  runs. Without a limiter goodput is 0.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from oncallsim.model.plan import REVISION
from oncallsim.model.request.drive import run_minute
from oncallsim.model.request.outcomes import (
    I_NSAMPLES,
    M_ADMITTED,
    M_LIMITED,
    M_OK,
    MAX_SAMPLES,
    O_OK,
    S_ERRORS,
    X_ARRIVAL,
    X_OUTCOME,
)
from oncallsim.model.request.queue_only import queue_only_world
from oncallsim.model.request.settings import set_world
from oncallsim.verify import aegis

__all__ = ["LOADS", "Step", "Throughput", "ema_rise_s", "measured_rise_s", "step", "throughput"]

SERVICE_S = 0.05
INSTANCES, WORKERS = 4, 4
CAPACITY = INSTANCES * WORKERS / SERVICE_S  # requests a second
LOADS = (0.5, 0.7, 0.9, 1.1, 1.3, 1.5, 2.0, 2.5, 3.0)
LOADS_QUICK = (0.7, 1.1, 1.5, 2.0, 3.0)
THRESHOLD = 800.0  # ‰: aegis's cpu threshold
HELD_LOW = 0.75  # passed and goodput ∕ capacity above capacity: at least this (the CPU threshold holds them ~0.8)
DECAY = 0.95  # aegis: cpu = cpu·0.95 + reading·0.05
TICK_S = 0.5


class Throughput(NamedTuple):
    offered: float  # x: offered ∕ capacity
    passed: float  # requests the limiter let through, ∕ capacity (all of them without a limiter)
    goodput: float  # requests answered well, ∕ capacity
    off_goodput: float  # goodput ∕ capacity without a limiter

    @property
    def ok(self) -> bool:
        """Below capacity everything passes; above it, what passes and goodput stay within [0.75, 1.1] of capacity
        with the limiter (it holds the CPU EMA at its 800 ‰ threshold, so they hover about 0.8 of capacity, a
        little above or below: 0.794 at 1.1× under model version 3), and from 1.3× goodput falls below a fifth of
        it without (the queue's waits pass the timeout; at 1.1× the queue takes most of a minute to get there)."""
        if self.offered < 1.0:
            return self.goodput >= 0.95 * self.offered and self.off_goodput >= 0.95 * self.offered
        held = HELD_LOW <= self.goodput <= 1.1 and HELD_LOW <= self.passed <= 1.1
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


STEP_FROM, STEP_TO = 0.5, 2.0  # offered ∕ capacity before and after the step
STEP_BINS = ((0, 10), (10, 20), (20, 30), (30, 40), (40, 50), (50, 58))  # s of the step minute: arrivals by 58 s
# are decided by its end (the 2 s timeout)
RECOVERED = 0.7  # goodput ∕ capacity: a 10 s bin at or above it has recovered
SETTLED_FROM = 20  # s after the step: the settled level is the mean of the bins from there
STEP_TOLERANCE = 0.1  # goodput ∕ capacity: the engine's settled level against the oracle's
STEP_SEEDS, STEP_SEEDS_QUICK = (31, 32, 33, 34), (31,)
STEP_EVERY = math.ceil(STEP_TO * CAPACITY * 60.0 * 1.1 / MAX_SAMPLES)  # the engine's paths kept: every n-th request


class StepCurve(NamedTuple):
    """Goodput ∕ capacity per bin of ``STEP_BINS`` after the step, averaged over the seeds."""

    bins: tuple[float, ...]
    seeds: int

    @property
    def recovered_s(self) -> int:
        """The start (s after the step) of the first bin from which every bin is at ``RECOVERED`` or above; −1
        never. (The first seconds can be above it, before the queue has grown or the handlers slowed down.)"""
        start = -1
        for (a, _), g in zip(STEP_BINS, self.bins, strict=True):
            if g < RECOVERED:
                start = -1
            elif start < 0:
                start = a
        return start

    @property
    def settled(self) -> float:
        """The mean of the bins from ``SETTLED_FROM`` on."""
        tail = [g for (a, _), g in zip(STEP_BINS, self.bins, strict=True) if a >= SETTLED_FROM]
        return sum(tail) / len(tail)


class Step(NamedTuple):
    """The sudden step: the engine (its current rules, version 2's, no limiter) and aegis simulated apart."""

    engine: StepCurve  # limiter = bbr, this model version's rules
    engine_v2: StepCurve  # limiter = bbr, model version 2's rules (timed from admission)
    engine_off: StepCurve
    oracle: StepCurve  # aegis on the engine's worker pool, timing a request from its worker's start
    oracle_admission: StepCurve  # … timing it from its admission
    oracle_go: StepCurve  # aegis on a Go server: processor sharing, timed from the handler's entry

    @staticmethod
    def agrees(engine: StepCurve, oracle: StepCurve) -> bool:
        """The settled levels within ``STEP_TOLERANCE`` and the recovery in the same 10 s bin (one bin apart at
        most)."""
        if abs(engine.settled - oracle.settled) > STEP_TOLERANCE:
            return False
        if (engine.recovered_s < 0) != (oracle.recovered_s < 0):
            return False
        return abs(engine.recovered_s - oracle.recovered_s) <= 10

    @property
    def ok(self) -> bool:
        """The engine meets its oracle under both rules, and (the article's claim) recovers within 30 s of the step
        to a settled level of at least 0.75 c, as aegis does on a Go server; without a limiter goodput is 0."""
        claim = 0 <= self.engine.recovered_s <= 30 and self.engine.settled >= 0.75
        go = 0 <= self.oracle_go.recovered_s <= 30 and self.oracle_go.settled >= 0.75
        off = self.engine_off.settled < 0.05
        return (
            self.agrees(self.engine, self.oracle)
            and self.agrees(self.engine_v2, self.oracle_admission)
            and claim
            and go
            and off
        )


def _engine_step(limiter: str, revision: int, seeds: tuple[int, ...]) -> StepCurve:
    """The engine's goodput per bin of the step minute, from every ``every``-th request's path (the sample's cap)."""
    every = STEP_EVERY
    sums = np.zeros(len(STEP_BINS))
    for seed in seeds:
        p, world, st = queue_only_world(INSTANCES * WORKERS, SERVICE_S, seed, WORKERS, timeout_s=2.0, revision=revision)
        set_world(world, balancer="round-robin", limiter=limiter)
        world = run_minute(p, world, st, 0, poisson_rate=STEP_FROM * CAPACITY).world
        world = run_minute(p, world, st, 1, poisson_rate=STEP_TO * CAPACITY, sample_every=every).world
        smp = world.meter.samples[: int(world.meter.ints[I_NSAMPLES])]
        for k, (a, b) in enumerate(STEP_BINS):
            inside = (smp[:, X_ARRIVAL] >= a) & (smp[:, X_ARRIVAL] < b)
            sums[k] += np.count_nonzero(smp[inside, X_OUTCOME] == O_OK) * every / (b - a) / CAPACITY
    return StepCurve(tuple(float(g) for g in sums / len(seeds)), len(seeds))


def _oracle_step(server: str, time_from: str, seeds: tuple[int, ...]) -> StepCurve:
    """Aegis simulated apart: the same bins of its step minute."""
    sums = np.zeros(len(STEP_BINS))
    for seed in seeds:
        run = aegis.simulate(
            [STEP_FROM, STEP_TO], server, time_from, instances=INSTANCES, cores=WORKERS,
            service_s=SERVICE_S, timeout_s=2.0, seed=seed, bin_s=1.0,
        )  # fmt: skip
        for k, (a, b) in enumerate(STEP_BINS):
            sums[k] += sum(run.goodput[60 + a : 60 + b]) / (b - a)
    return StepCurve(tuple(float(g) for g in sums / len(seeds)), len(seeds))


def step(quick: bool = True, oracle_time_from: str = "start") -> Step:
    """The sudden step on the engine and on aegis simulated apart (``oracle_time_from``: how the oracle of this
    version's rules times a request; "admission" is a wrong oracle, for the tests)."""
    seeds = STEP_SEEDS_QUICK if quick else STEP_SEEDS
    oracle_seeds = STEP_SEEDS[:2] if quick else STEP_SEEDS
    return Step(
        _engine_step("bbr", REVISION, seeds),
        _engine_step("bbr", 2, seeds),
        _engine_step("off", REVISION, seeds),
        _oracle_step("fifo", oracle_time_from, oracle_seeds),
        _oracle_step("fifo", "admission", oracle_seeds),
        _oracle_step("ps", "start", oracle_seeds),
    )

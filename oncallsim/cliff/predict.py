"""The chain's prediction for a map point (docs/cliff.md, "The chain's prediction"): what happens after the
trigger, from the retrying server's Markov chain at the point's operating point.

1. Unstable: the first attempts alone exceed the capacity (λ ≥ cμ), or the chain, started from a healthy server
   without any trigger, reaches the states where 99 % of attempts time out within the runs' length on average.
2. The trigger: the chain's fluid limit under the trigger's service time, from a healthy server (its workers
   busy as λS says, nobody in the orbit), for the trigger's minutes: where the queue and the orbit are when it
   ends. (The chain's spread over those minutes is small beside its drift at these sizes.)
3. The recovery: the chain's expected time from there to the states where at most half the attempts time out,
   and its standard deviation: stable when that mean is within the map's few minutes, metastable when it is past
   the runs' end (or never: the bad mode sustains itself), mixed between.

A point with a mechanism the chain does not model (CoDel, adaptive LIFO, the limiter, a client breaker) has no
prediction. The chain's levels grow geometrically to keep it near ``MAX_STATES`` states: its mean drift is the
model's everywhere, its spread wider than the engine's where the levels are coarse.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from oncallsim.cliff.point import OperatingPoint
from oncallsim.model.retry_chain import Grid, doom_probability, fluid, generator, hitting_times, relaxation

__all__ = ["CLASSES", "MAX_STATES", "Prediction", "predict"]

CLASSES = ("stable", "metastable", "unstable", "mixed")
MAX_STATES = 40_000
HEALTHY_DOOM = 0.5  # recovered: an attempt that joins now times out with at most this probability
COLLAPSED_DOOM = 0.99  # collapsed: at least this share of the attempts time out


class Prediction(NamedTuple):
    """The chain's class for a point and the numbers it comes from (seconds; ∞: never)."""

    cls: str | None  # one of CLASSES; None: a mechanism the chain does not model is on
    recovery_s: float  # mean time from the trigger's end to a healthy server
    recovery_sd_s: float
    collapse_s: float  # mean time from a healthy server to a collapsed one, without a trigger
    backlog: float  # requests at the server when the trigger ends
    relaxation_s: float  # 1/|λ₂| of the chain out of the trigger (nan: not computed)
    states: int


def _grid(point: OperatingPoint, max_states: int) -> Grid:
    """Levels past what the trigger can pile up (the bad mode's growth over its minutes) and past the bad mode's
    orbit, growing as slowly as ``max_states`` allows."""
    server = point.server()
    capacity, amplified = point.capacity_per_s, point.arrivals_per_s * server.amplification
    growth = max(0.0, amplified - point.trigger_capacity_per_s) * 60.0 * point.trigger_minutes
    top = point.workers + math.ceil(1.3 * growth + 4.0 * capacity * point.timeout_s)
    orbit = math.ceil(1.6 * point.arrivals_per_s * (server.amplification - 1.0) * server.retry_delay_s) + 50
    rate = 0.005
    while rate < 1.0 and _levels(top, rate) * _levels(orbit, rate) > max_states:
        rate = min(1.0, rate * 1.4)
    return Grid(top, orbit, rate)


def _levels(top: int, growth: float) -> int:
    """How many levels ``Grid`` lays from 0 to ``top``: unit steps up to 1/growth, then growing by ``growth``."""
    if growth <= 0.0:
        return top + 1
    unit = min(top, math.floor(1.0 / growth) + 1)
    return unit + 1 + max(0, math.ceil(math.log(top / max(unit, 1)) / math.log1p(growth)))


def predict(
    point: OperatingPoint,
    *,
    within_min: float,
    horizon_min: float,
    run_min: float,
    max_states: int = MAX_STATES,
    shape: str = "fixed",
    spectrum: bool = False,
) -> Prediction:
    """The chain's class for ``point``: recovered within ``within_min`` minutes of the trigger's end (stable),
    not by ``horizon_min`` (metastable), collapsed within ``run_min`` minutes without a trigger (unstable)."""
    nan = math.nan
    if point.breakers:
        return Prediction(None, nan, nan, nan, nan, nan, 0)
    server = point.server(shape)
    busy = point.arrivals_per_s * point.service_s
    if point.load >= 1.0:
        return Prediction("unstable", math.inf, nan, 0.0, math.inf, nan, 0)
    grid = _grid(point, max_states)
    q = generator(server, grid)
    doom = np.repeat(doom_probability(server, grid.queue_levels), grid.shape[1])
    start = grid.index(busy, 0.0)
    collapse = float(hitting_times(q, doom >= COLLAPSED_DOOM)[0][start])
    relax = relaxation(q).relaxation_s if spectrum else nan
    if collapse <= 60.0 * run_min:
        return Prediction("unstable", math.inf, nan, collapse, math.inf, relax, grid.states)
    if point.trigger_minutes > 0:
        during = generator(server.with_service(point.trigger_service_s), grid)
        path = fluid(during, grid, busy, 0.0, 60.0 * point.trigger_minutes)
        end = grid.index(float(path.queue[-1]), float(path.orbit[-1]))
        backlog = float(path.queue[-1])
    else:
        end, backlog = start, busy
    mean, second = hitting_times(q, doom <= HEALTHY_DOOM, moments=2)
    recovery = float(mean[end])
    sd = math.sqrt(max(0.0, float(second[end]) - recovery**2)) if math.isfinite(recovery) else nan
    if recovery > 60.0 * horizon_min:
        cls = "metastable"
    elif recovery <= 60.0 * within_min:
        cls = "stable"
    else:
        cls = "mixed"
    return Prediction(cls, recovery, sd, collapse, backlog, relax, grid.states)

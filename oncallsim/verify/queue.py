"""Queue-only checks: the engine's M/M/N mode against Erlang C and the exact M/M/N quantile.

The driver is ``queue_only.simulate_mmn``'s minute loop, kept here because the checks need what it pools
away: each batch's own latency histogram (for the p99's confidence interval) and waits past a given t.
Confidence intervals are batch means: the measured minutes split into ``BATCHES`` consecutive batches, the
statistic computed per batch, ± t(0.975, B − 1)·sd/√B around the pooled value. Each operating point has its
own seed, so that the points' errors are independent (one seed everywhere would make them move together).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy import stats

from oncallsim.model.fields import REC
from oncallsim.model.request.drive import run_minute
from oncallsim.model.request.outcomes import HIST_BIN_S, M_WAIT_COUNT, M_WAIT_SUM, M_WAITED
from oncallsim.model.request.physics import quantile
from oncallsim.model.request.queue_only import queue_only_world
from oncallsim.verify import oracles

__all__ = ["BATCHES", "Estimate", "QueuePoint", "batch_ci", "queue_grid", "run_queue_point"]

BATCHES = 20
SERVICE_S = 0.050  # the default app time
TIMEOUT_S = 10.0  # far above any p99 of the grid: no request times out
WARMUP_MINUTES = 3  # from empty; the slowest point (N = 16, ρ = 0.98) relaxes in about half a minute


class Estimate(NamedTuple):
    """A pooled value and the half-width of its 95 % batch-means confidence interval."""

    value: float
    half: float

    def covers(self, x: float, widen: float = 1.0) -> bool:
        return abs(self.value - x) <= widen * self.half


class QueuePoint(NamedTuple):
    servers: int
    utilization: float  # offered, a/N
    service_s: float
    customers: int
    minutes: int
    seed: int
    wait_probability: Estimate
    erlang_c: float
    wait_t_s: float  # the t of the P(W > t) check: the mean conditional wait 1/(Nμ − λ), on a 0.1 ms bin
    wait_exceeds: Estimate
    wait_exceeds_formula: float
    mean_wait_s: Estimate
    mean_wait_formula_s: float
    p99_s: Estimate
    p99_exact_s: float
    p99_approx_s: float
    measured_utilization: float


def batch_ci(per_batch: np.ndarray, pooled: float) -> Estimate:
    """The pooled value with the batch means' 95 % half-width (Student t, B − 1 degrees of freedom)."""
    b = len(per_batch)
    half = float(stats.t.ppf(0.975, b - 1) * np.std(per_batch, ddof=1) / math.sqrt(b)) if b > 1 else math.inf
    return Estimate(pooled, half)


def run_queue_point(
    servers: int, utilization: float, customers: int, seed: int, service_s: float = SERVICE_S
) -> QueuePoint:
    """Simulate M/M/N at offered utilization ``utilization`` for about ``customers`` measured customers."""
    rate = utilization * servers / service_s
    minutes = max(BATCHES, math.ceil(customers / (rate * 60.0) / BATCHES) * BATCHES)
    per = minutes // BATCHES
    p, world, st = queue_only_world(servers, service_s, seed, 16 if servers % 16 == 0 else 1, TIMEOUT_S)
    drain = servers / service_s - rate
    t_s = max(1, round(1.0 / drain / HIST_BIN_S)) * HIST_BIN_S
    first = round(t_s / HIST_BIN_S)
    # per batch: answered, waited, customers, wait sum, waits past t, p99
    rows = np.zeros((BATCHES, 6))
    hist = np.zeros_like(world.meter.latency_hist)
    pooled = np.zeros_like(world.meter.latency_hist)
    busy = 0.0
    for t in range(WARMUP_MINUTES + minutes):
        minute = run_minute(p, world, st, t, poisson_rate=rate)
        world, rec = minute.world, minute.record
        i = t - WARMUP_MINUTES
        if i < 0:
            continue
        m = world.meter.measures
        b = i // per
        past = world.meter.wait_hist[first:].sum()
        rows[b, :5] += (world.meter.latency_hist.sum(), m[M_WAITED], m[M_WAIT_COUNT], m[M_WAIT_SUM], past)
        hist += world.meter.latency_hist
        busy += float(rec[REC.utilization])
        if (i + 1) % per == 0:
            rows[b, 5] = quantile(hist, 0.99, TIMEOUT_S)
            pooled += hist
            hist[:] = 0
    answered, waited, started, wait_sum, past = rows[:, :5].sum(axis=0)
    c = oracles.mmn_wait_probability(servers, rate, service_s)
    return QueuePoint(
        servers=servers,
        utilization=utilization,
        service_s=service_s,
        customers=int(started),
        minutes=minutes,
        seed=seed,
        wait_probability=batch_ci(rows[:, 1] / rows[:, 0], waited / answered),
        erlang_c=c,
        wait_t_s=t_s,
        wait_exceeds=batch_ci(rows[:, 4] / rows[:, 2], past / started),
        wait_exceeds_formula=c * math.exp(-drain * t_s),
        mean_wait_s=batch_ci(rows[:, 3] / rows[:, 2], wait_sum / started),
        mean_wait_formula_s=c / drain,
        p99_s=batch_ci(rows[:, 5], float(quantile(pooled, 0.99, TIMEOUT_S))),
        p99_exact_s=oracles.mmn_response_quantile_s(servers, rate, service_s),
        p99_approx_s=oracles.approx_p99_s(servers, rate, service_s),
        measured_utilization=busy / minutes,
    )


FULL_SERVERS = (16, 64, 160, 320, 640)
FULL_UTILIZATIONS = (0.3, 0.5, 0.7, 0.85, 0.9, 0.95, 0.98)
QUICK_SERVERS = (16, 160, 640)
QUICK_UTILIZATIONS = (0.5, 0.9, 0.98)


def queue_grid(quick: bool, seed: int = 1) -> list[QueuePoint]:
    """The grid of the report: N × ρ, S = 50 ms; 2 M customers a point (200 k when quick)."""
    servers = QUICK_SERVERS if quick else FULL_SERVERS
    utils = QUICK_UTILIZATIONS if quick else FULL_UTILIZATIONS
    customers = 200_000 if quick else 2_000_000
    return [
        run_queue_point(n, u, customers, seed * 1000 + i)
        for i, (n, u) in enumerate((n, u) for n in servers for u in utils)
    ]

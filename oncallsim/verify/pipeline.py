"""Cache and database checks: the engine's full pipeline at a fixed rate, fleet and TTL, minute after minute.

The driver sets the state vector by hand (no scenario, no noise, no shedding, no bad build, no warm-up job)
so that one stage at a time meets its formula: the cache starts in its steady state (``fill_cache``, as the
engine's opening minute does) and the hit ratio is measured against rT/(1 + rT); with TTL 0 every request
misses and the database's mean query time is measured against base/(1 − ρ). Confidence intervals are batch
means over ``BATCHES`` batches of consecutive minutes (``queue.batch_ci``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from oncallsim.model.fields import NUMERIC_FIELDS, REC, ST, STATE_SCHEMA
from oncallsim.model.kernel import kernel_params
from oncallsim.model.params import Params
from oncallsim.model.request.drive import run_minute
from oncallsim.model.request.engine import minute_count
from oncallsim.model.request.physics import fill_cache
from oncallsim.model.request.world import new_world
from oncallsim.verify import oracles
from oncallsim.verify.queue import Estimate, batch_ci

__all__ = ["CachePoint", "DbPoint", "cache_grid", "db_grid", "run_pipeline"]

BATCHES = 10
WORKERS = 16


class CachePoint(NamedTuple):
    arrivals_per_s: float
    ttl_s: float
    hit: Estimate
    formula: float  # rT/(1 + rT)
    refill_s: float  # mean lookup-to-store time of a miss: CPU + its reads
    formula_refill: float  # rT/(1 + r(T + refill))
    minutes: int


class DbPoint(NamedTuple):
    utilization: float  # offered: queries per second × base time / partitions
    measured_utilization: float
    query_ms: Estimate
    formula_ms: float
    minutes: int


def run_pipeline(
    arrivals_per_s: float, ttl_s: float, fleet: int, minutes: int, seed: int, **params: float
) -> np.ndarray:
    """(minutes × record fields): the measured record of each minute after one warm-up minute."""
    base = Params(max_fleet=fleet, **params)  # type: ignore[arg-type]
    p = kernel_params(base)
    world = new_world(base, seed)
    fill_cache(world.backend, world.gen, oracles.cache_hit_ratio(arrivals_per_s, ttl_s, base.hot_objects), ttl_s, 0.0)
    st = np.zeros(len(STATE_SCHEMA))
    st[ST.db_slowdown] = 1.0
    st[ST.serving] = fleet
    st[ST.ttl_s] = ttl_s
    count = minute_count(arrivals_per_s)
    out = np.zeros((minutes, len(NUMERIC_FIELDS)))
    for t in range(minutes + 1):
        minute = run_minute(p, world, st, t, arrivals=count)
        world = minute.world
        if t:
            out[t - 1] = minute.record
    return out


def _batches(column: np.ndarray, weights: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """Per-batch means of a per-minute column (weighted when the minutes' samples differ) and the pooled one."""
    w = np.ones_like(column) if weights is None else weights
    split = np.array_split(np.arange(len(column)), BATCHES)
    per = np.array([np.sum(column[i] * w[i]) / np.sum(w[i]) for i in split])
    return per, float(np.sum(column * w) / np.sum(w))


def cache_grid(quick: bool, seed: int = 1) -> list[CachePoint]:
    """Hit ratio over TTL × traffic; the database made large so that only the cache is under test."""
    rates = (200.0, 2500.0) if quick else (200.0, 1000.0, 2500.0)
    ttls = (0.0, 30.0, 300.0) if quick else (0.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)
    minutes = 20 if quick else 60
    params = Params()
    out = []
    for i, (rate, ttl) in enumerate((r, t) for r in rates for t in ttls):
        fleet = max(4, int(rate * 0.070 / WORKERS / 0.5) + 1)  # service ≈ 60 ms: utilization below 0.5
        recs = run_pipeline(rate, ttl, fleet, minutes, seed * 1000 + i, db_capacity_qps=1e6)
        per, pooled = _batches(recs[:, REC.cache_hit])
        query_s = float(recs[:, REC.query_time_ms].mean()) / 1000
        refill = params.app_time_ms / 1000 + params.queries_per_request * query_s
        out.append(
            CachePoint(
                rate,
                ttl,
                batch_ci(per, pooled),
                oracles.cache_hit_ratio(rate, ttl, params.hot_objects),
                refill,
                oracles.cache_hit_ratio(rate, ttl, params.hot_objects, refill),
                minutes,
            )
        )
    return out


def db_grid(quick: bool, seed: int = 1) -> list[DbPoint]:
    """Mean query time over ρ: TTL 0 (every request misses, 2 reads each) at λ = ρ·capacity/2."""
    utils = (0.5, 0.9) if quick else (0.1, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95)
    minutes = 20 if quick else 40
    params = Params()
    out = []
    for i, rho in enumerate(utils):
        rate = rho * params.db_capacity_qps / params.queries_per_request
        service_s = params.app_time_ms / 1000 + params.queries_per_request * params.db_base_query_ms / 1000 / (1 - rho)
        fleet = int(rate * service_s / WORKERS / 0.6) + 1
        recs = run_pipeline(rate, 0.0, fleet, minutes, seed * 1000 + 500 + i)
        per, pooled = _batches(recs[:, REC.query_time_ms], recs[:, REC.db_demand_qps])
        formula = oracles.db_query_time_s(rho, params.db_base_query_ms / 1000) * 1000
        out.append(DbPoint(rho, float(recs[:, REC.db_utilization].mean()), batch_ci(per, pooled), formula, minutes))
    return out

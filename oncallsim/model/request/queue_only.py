"""The request engine's "queue only" mode: M/M/N with a pooled balancer, as the validation and the benchmark
use it. A Poisson stream of λ per second, exponential service of a fixed mean, N servers, no cache, no
database, no builds: the same compiled loop as a full run (``physics``: the minute opened, run and closed),
minute after minute.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from oncallsim.model.errors import InvalidInput
from oncallsim.model.fields import REC, ST, STATE_SCHEMA
from oncallsim.model.kernel import kernel_params
from oncallsim.model.params import Params, coerce_param
from oncallsim.model.plan import REVISION
from oncallsim.model.request.balancers import I_CLIENTS
from oncallsim.model.request.discovery import register_initial
from oncallsim.model.request.drive import run_minute
from oncallsim.model.request.outcomes import HIST_BIN_S, M_WAIT_COUNT, M_WAIT_SUM, M_WAITED
from oncallsim.model.request.physics import quantile
from oncallsim.model.request.settings import set_world
from oncallsim.model.request.world import World, new_world

__all__ = ["QueueRun", "queue_only_world", "simulate_mmn"]


class QueueRun(NamedTuple):
    """What an M/M/N run measured after its warm-up, pooled over its minutes."""

    customers: int  # requests that started service (the sample for the wait statistics)
    answered: int  # requests answered (the sample for the response-time quantiles)
    waited: int  # answered requests that waited in the queue
    wait_sum_s: float  # total queue wait of the requests that started service
    wait_hist: npt.NDArray[np.int64]  # queue waits, 0.1 ms bins
    latency_hist: npt.NDArray[np.int64]  # response times, 0.1 ms bins, timeouts in the last
    utilization: float
    per_minute: npt.NDArray[np.float64]  # minutes × (answered, waited, wait sum s, customers): for batch means

    @property
    def wait_probability(self) -> float:
        return self.waited / self.answered if self.answered else 0.0

    @property
    def mean_wait_s(self) -> float:
        return self.wait_sum_s / self.customers if self.customers else 0.0

    def wait_exceeds(self, t_s: float) -> float:
        """Share of customers whose wait exceeded ``t_s`` (bin-exact for multiples of 0.1 ms)."""
        first = math.floor(t_s / HIST_BIN_S + 1e-9)
        return float(self.wait_hist[first:].sum()) / self.customers if self.customers else 0.0

    def response_quantile_s(self, q: float, timeout_s: float) -> float:
        return float(quantile(self.latency_hist, q, timeout_s))


def queue_only_world(
    servers: int,
    service_s: float,
    seed: int,
    workers_per_instance: int = 16,
    timeout_s: float = 10.0,
    revision: int = REVISION,
) -> tuple[npt.NDArray[np.float64], World, npt.NDArray[np.float64]]:
    """(parameters, world, state) for queue-only minutes: ``servers`` workers of exponential service of mean
    ``service_s``, no cache or database; the mechanisms by the rules of model version ``revision``."""
    if servers <= 0 or servers % workers_per_instance:
        raise InvalidInput("servers", f"must be a positive multiple of {workers_per_instance}, got {servers}")
    params = Params(
        workers_per_instance=workers_per_instance,
        max_fleet=servers // workers_per_instance,
        app_time_ms=service_s * 1000.0,
        feature_app_time_ms=0.0,
        timeout_s=timeout_s,
        hot_objects=1.0,
    )
    st = np.zeros(len(STATE_SCHEMA))
    st[ST.db_slowdown] = 1.0
    st[ST.serving] = servers // workers_per_instance
    world = new_world(params, seed, revision=revision)
    register_initial(world, servers // workers_per_instance, params)
    return kernel_params(params), world, st


def simulate_mmn(
    servers: int,
    arrivals_per_s: float,
    service_s: float,
    minutes: int,
    seed: int,
    warmup_minutes: int = 1,
    workers_per_instance: int = 16,
    timeout_s: float = 10.0,
    balancer: str = "pooled",
    clients: int = 1,
    revision: int = REVISION,
) -> QueueRun:
    """Run M/M/N in queue-only mode: ``minutes`` measured after ``warmup_minutes`` dropped. With another
    ``balancer`` than pooled, each instance (``workers_per_instance`` servers) keeps its own queue."""
    p, world, st = queue_only_world(servers, service_s, seed, workers_per_instance, timeout_s, revision)
    set_world(world, balancer=balancer)
    world.views.ints[I_CLIENTS] = coerce_param("clients", clients)
    wait_hist = np.zeros_like(world.meter.wait_hist)
    latency_hist = np.zeros_like(world.meter.latency_hist)
    customers = answered = waited = 0
    wait_sum = busy = 0.0
    per_minute = np.zeros((minutes, 4))
    for t in range(warmup_minutes + minutes):
        minute = run_minute(p, world, st, t, poisson_rate=arrivals_per_s)
        world, rec = minute.world, minute.record
        if t < warmup_minutes:
            continue
        m = world.meter.measures
        customers += int(m[M_WAIT_COUNT])
        wait_sum += float(m[M_WAIT_SUM])
        waited += int(m[M_WAITED])
        answered += int(world.meter.latency_hist.sum())
        wait_hist += world.meter.wait_hist
        latency_hist += world.meter.latency_hist
        busy += float(rec[REC.utilization])
        per_minute[t - warmup_minutes] = (world.meter.latency_hist.sum(), m[M_WAITED], m[M_WAIT_SUM], m[M_WAIT_COUNT])
    return QueueRun(customers, answered, waited, wait_sum, wait_hist, latency_hist, busy / max(minutes, 1), per_minute)

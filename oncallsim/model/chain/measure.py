"""A chain minute's measures: the record fields the minute model's close reads (the clients' answers: errors,
latency; the entry service's load), and the extras, per service, that only a chain has."""

from __future__ import annotations

from typing import Any

import numpy as np

from oncallsim.model.chain.layout import SV_MEAN_S, SV_TIMEOUT_S, SV_WORKERS, ChainLayout
from oncallsim.model.chain.world import (
    HIST_FLOOR_S,
    HIST_RATIO,
    M_ATTEMPTS,
    M_BEGUN,
    M_BUSY_S,
    M_CANCELLED,
    M_DENIED,
    M_FAILED,
    M_HEDGES,
    M_LIMITED,
    M_QUEUE_FULL,
    M_REFUSED,
    M_REJECTED,
    M_RETRIES,
    M_STARTED,
    M_SUCCEEDED,
    M_TIMEOUTS,
    M_WAIT_S,
    M_WASTED_S,
    MC_DEADLINE,
    MC_DECIDED,
    MC_ERROR,
    MC_OK,
    MC_SUM_US,
    SI_BUSY,
    SI_QLEN,
    ChainWorld,
)
from oncallsim.model.fields import EXT, REC

__all__ = ["chain_extras", "hist_quantile_s", "record_chain_minute"]


def hist_quantile_s(hist: np.ndarray[Any, Any], q: float) -> float | None:
    """The q-quantile (s) of a logarithmic latency histogram (world.py's bins, 1 % wide), geometrically
    interpolated in its bin; None when it holds nothing."""
    total = int(hist.sum())
    if total == 0:
        return None
    running = np.cumsum(hist)
    b = int(np.searchsorted(running, q * total))
    below = float(running[b - 1]) if b > 0 else 0.0
    share = (q * total - below) / float(hist[b]) if hist[b] > 0 else 0.0
    if b == 0:
        return HIST_FLOOR_S * share
    return float(HIST_FLOOR_S * HIST_RATIO ** (b - 1 + share))


def record_chain_minute(
    world: ChainWorld, layout: ChainLayout, rec: np.ndarray[Any, Any], ext: np.ndarray[Any, Any]
) -> None:
    """The minute's measured fields: the error rate and its parts from the clients' answers (a client's deadline
    passed: a timeout; an error answer, which a chain gives when a call below failed for good: overload), the
    response times, and the entry service's load as the minute model's single service."""
    mc = world.m_client
    decided = int(mc[MC_DECIDED])
    entry = layout.entry
    m = world.m_svc[entry]
    workers = float(world.svc[entry, SV_WORKERS])
    deadline = layout.deadline_s
    if decided > 0:
        e_timeout = mc[MC_DEADLINE] / decided
        e_error = mc[MC_ERROR] / decided
    else:
        e_timeout = e_error = 0.0
    rec[REC.error_timeout] = e_timeout
    rec[REC.error_overload] = e_error
    rec[REC.overload_share] = e_error
    rec[REC.timeout_share] = e_timeout
    rec[REC.error_bad_build] = 0.0
    rec[REC.error_dead_instance] = 0.0
    rec[REC.error_rate] = e_timeout + e_error
    # a client's answer comes at its deadline at the latest (its timer answers for it then): a quantile read from
    # the bin that holds the deadline is no later than the deadline (the bin's interpolation reached 1 % past it)
    patience = min(deadline, float(world.svc[entry, SV_TIMEOUT_S]))

    def client_quantile_s(q: float) -> float | None:
        value = hist_quantile_s(world.c_hist, q)
        return None if value is None else min(value, patience)

    p99 = client_quantile_s(0.99)
    rec[REC.p99_ms] = (deadline if p99 is None else p99) * 1000.0
    served = m[M_STARTED]
    service_s = m[M_BUSY_S] / served if served > 0 else float(layout.svc[entry, SV_MEAN_S])
    rec[REC.service_time_ms] = service_s * 1000.0
    rec[REC.servers] = workers
    rec[REC.capacity_per_s] = workers / service_s if service_s > 0 else 0.0
    rec[REC.erlangs] = m[M_ATTEMPTS] / 60.0 * service_s
    rec[REC.utilization] = min(1.0, m[M_BUSY_S] / (workers * 60.0))
    rec[REC.wait_probability] = 0.0
    # a chain's cache and database are services of the graph like the others (every field is written: the
    # minute's values are a buffer reused from minute to minute, never left as it was)
    for name in ("cache_warm", "cache_hit", "db_demand_qps", "db_utilization", "query_time_ms"):
        rec[getattr(REC, name)] = 0.0
    ext[EXT.p50_ms] = (client_quantile_s(0.5) or 0.0) * 1000.0
    ext[EXT.p999_ms] = (client_quantile_s(0.999) or 0.0) * 1000.0
    ext[EXT.mean_wait_ms] = m[M_WAIT_S] / served * 1000.0 if served > 0 else 0.0
    ext[EXT.queue_at_end] = world.svc_i[entry, SI_QLEN]
    ext[EXT.in_flight_at_end] = world.svc_i[entry, SI_BUSY]
    ext[EXT.completed_per_s] = m[M_SUCCEEDED] / 60.0
    ext[EXT.refused_per_s] = m[M_REFUSED] / 60.0
    total = world.m_svc.sum(axis=0)
    ext[EXT.attempts_per_s] = total[M_ATTEMPTS] / 60.0
    ext[EXT.retries_per_s] = total[M_RETRIES] / 60.0
    ext[EXT.retries_denied_per_s] = total[M_DENIED] / 60.0
    ext[EXT.goodput_per_s] = mc[MC_OK] / 60.0
    # every service's workers: the share of their time held for attempts nobody waited for any more
    ext[EXT.wasted_work_s] = total[M_WASTED_S]
    ext[EXT.wasted_work_share] = total[M_WASTED_S] / total[M_BUSY_S] if total[M_BUSY_S] > 0 else 0.0


def chain_extras(world: ChainWorld, layout: ChainLayout) -> dict[str, Any]:
    """Per service (by name, in declaration order; plain Python numbers, as every record's JSON), its minute:
    attempts that reached it, their outcomes, the retries and hedges it sent, the calls it gave up on and those its
    breakers rejected, per second; the clients' failed requests whose failure began here (docs/graphs.md, "Where
    the failures began"), per second; its workers' mean use, queue and busy workers at the minute's end, its
    answers' p50 and p99 (ms); and the clients' answers' sum and count."""
    services: dict[str, Any] = {}
    for s, service in enumerate(layout.services):
        m = world.m_svc[s]
        p50 = hist_quantile_s(world.m_hist[s], 0.5)
        p99 = hist_quantile_s(world.m_hist[s], 0.99)
        services[service.name] = {
            "attempts_per_s": float(m[M_ATTEMPTS] / 60.0),
            "started_per_s": float(m[M_STARTED] / 60.0),
            "succeeded_per_s": float(m[M_SUCCEEDED] / 60.0),
            "failed_per_s": float(m[M_FAILED] / 60.0),
            "refused_per_s": float(m[M_REFUSED] / 60.0),
            "cancelled_per_s": float(m[M_CANCELLED] / 60.0),
            "retries_per_s": float(m[M_RETRIES] / 60.0),
            "retries_denied_per_s": float(m[M_DENIED] / 60.0),
            "hedges_per_s": float(m[M_HEDGES] / 60.0),
            "timeouts_per_s": float(m[M_TIMEOUTS] / 60.0),
            "breaker_rejected_per_s": float(m[M_REJECTED] / 60.0),
            "queue_full_per_s": float(m[M_QUEUE_FULL] / 60.0),
            "limited_per_s": float(m[M_LIMITED] / 60.0),
            "busy_s": float(m[M_BUSY_S]),
            "wasted_s": float(m[M_WASTED_S]),
            "failures_begun_per_s": float(m[M_BEGUN] / 60.0),
            "utilization": float(m[M_BUSY_S] / (world.svc[s, SV_WORKERS] * 60.0)),
            "mean_wait_ms": float(m[M_WAIT_S] / m[M_STARTED] * 1000.0) if m[M_STARTED] > 0 else 0.0,
            "queue": int(world.svc_i[s, SI_QLEN]),
            "busy": int(world.svc_i[s, SI_BUSY]),
            "workers": int(world.svc[s, SV_WORKERS]),
            "p50_ms": None if p50 is None else float(p50 * 1000.0),
            "p99_ms": None if p99 is None else float(p99 * 1000.0),
        }
    return {
        "graph": {"entry": layout.services[layout.entry].name, "services": services},
        "latency_sum_s": int(world.m_client[MC_SUM_US]) / 1e6,
        "latency_buckets": np.cumsum(world.c_otel).tolist(),
    }

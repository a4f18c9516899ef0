"""The minute's measures: the record fields the request engine measures, and the extras only it knows,
from the counts the loop kept (``world.meter.measures``, the histograms, the world's state at the minute's end)."""

from __future__ import annotations

from typing import Any

from oncallsim.model.fields import EXT, EXTRA_SCHEMA, REC, ST
from oncallsim.model.kernel import P, step
from oncallsim.model.request.outcomes import (
    M_ABANDONED,
    M_ADMITTED,
    M_ARRIVED,
    M_BAD_ERROR,
    M_BUSY,
    M_COMPLETED,
    M_CUT_SHORT,
    M_DB_BUSY,
    M_DECIDED,
    M_DROPPED,
    M_HITS,
    M_LIMITED,
    M_LOOKUPS,
    M_MAX_QUEUE,
    M_OK,
    M_OVERLOAD,
    M_PRESENT,
    M_QUERIES,
    M_QUERY_TIME,
    M_REFUSED,
    M_RETRIES,
    M_RETRY_DENIED,
    M_SERVICE,
    M_SHED,
    M_STARTED,
    M_STARTED_BAD,
    M_THROTTLED,
    M_TIMEOUT,
    M_TO_DEAD,
    M_TO_QUEUE,
    M_TO_SERVICE,
    M_TO_SLOW,
    M_WAIT_COUNT,
    M_WAIT_SUM,
    M_WAITED,
    M_WASTED,
    quantile,
)
from oncallsim.model.request.queues import I_QLEN
from oncallsim.model.request.workers import I_BUSY, I_NBAD

__all__ = ["EXTRA_FIELDS", "record_minute"]

EXTRA_FIELDS = EXTRA_SCHEMA  # the extras vector, in order (its schema lives with the record's, in fields.py)

# the extras vector's positions by name are ``fields.EXT`` (``ext[EXT.p50_ms]``)


@step
def record_minute(p: Any, w: Any, st: Any, rec: Any, ext: Any, pipeline: bool, app_s: float) -> None:
    """The measured record fields and the extras, from the minute's counts."""
    m = w.meter.measures
    serving = int(st[ST.serving])
    servers = serving * int(p[P.workers_per_instance])
    timeout = p[P.timeout_s]
    admitted = m[M_ADMITTED] / 60.0
    rec[REC.requests_per_s] = m[M_ARRIVED] / 60.0
    rec[REC.admitted_per_s] = admitted
    rec[REC.shed_per_s] = m[M_SHED] / 60.0
    if pipeline:
        objects = len(w.backend.expiry)
        rt = admitted / objects * st[ST.ttl_s]
        steady = rt / (1.0 + rt)
        present = m[M_PRESENT] / objects
        rec[REC.cache_warm] = present / steady if steady > 0 else 1.0
        rec[REC.cache_hit] = m[M_HITS] / m[M_LOOKUPS] if m[M_LOOKUPS] > 0 else 0.0
        partitions = len(w.backend.db_free)
        rec[REC.db_demand_qps] = m[M_QUERIES] / 60.0
        rec[REC.db_utilization] = m[M_DB_BUSY] / (partitions * 60.0)
        rec[REC.query_time_ms] = m[M_QUERY_TIME] / m[M_QUERIES] * 1000.0 if m[M_QUERIES] > 0 else p[P.db_base_query_ms]
        ext[EXT.cache_present_share] = present
    service_s = m[M_SERVICE] / m[M_COMPLETED] if m[M_COMPLETED] > 0 else app_s
    rec[REC.service_time_ms] = service_s * 1000.0
    rec[REC.servers] = servers
    rec[REC.capacity_per_s] = servers / service_s if service_s > 0 else 0.0
    rec[REC.erlangs] = (admitted + m[M_RETRIES] / 60.0) * service_s  # the offered load: every attempt
    # busy time is a sum of many intervals: a fully busy minute can add up to N × 60 s plus round-off
    rec[REC.utilization] = min(1.0, m[M_BUSY] / (servers * 60.0)) if servers > 0 else 1.0
    decided = m[M_DECIDED]
    served = decided - m[M_OVERLOAD] - m[M_REFUSED]
    if served > 0:
        rec[REC.wait_probability] = m[M_WAITED] / served
        rec[REC.timeout_share] = m[M_TIMEOUT] / served
    else:
        rec[REC.wait_probability] = 1.0 if m[M_OVERLOAD] > 0 else 0.0
        rec[REC.timeout_share] = 0.0
    if decided > 0:
        e_overload = m[M_OVERLOAD] / decided
        e_timeout = (m[M_TIMEOUT] - m[M_TO_DEAD]) / decided
        e_bad = m[M_BAD_ERROR] / decided
        e_dead = (m[M_REFUSED] + m[M_TO_DEAD]) / decided
        ext[EXT.timeout_queue] = m[M_TO_QUEUE] / decided
        ext[EXT.timeout_slow_instance] = m[M_TO_SLOW] / decided
        ext[EXT.timeout_service] = m[M_TO_SERVICE] / decided
    else:
        e_overload = e_timeout = e_bad = e_dead = 0.0
    rec[REC.overload_share] = e_overload
    rec[REC.error_overload] = e_overload
    rec[REC.error_timeout] = e_timeout
    rec[REC.error_bad_build] = e_bad
    rec[REC.error_dead_instance] = e_dead
    rec[REC.error_rate] = e_overload + e_timeout + e_bad + e_dead
    if m[M_STARTED] > 0:
        rec[REC.bad_build_share] = m[M_STARTED_BAD] / m[M_STARTED]
    else:
        rec[REC.bad_build_share] = w.workers.ints[I_NBAD] / serving if serving > 0 else 0.0
    rec[REC.p99_ms] = (quantile(w.meter.latency_hist, 0.99, timeout) if served > 0 else timeout) * 1000.0
    ext[EXT.p50_ms] = quantile(w.meter.latency_hist, 0.5, timeout) * 1000.0
    ext[EXT.p999_ms] = quantile(w.meter.latency_hist, 0.999, timeout) * 1000.0
    ext[EXT.mean_wait_ms] = m[M_WAIT_SUM] / m[M_WAIT_COUNT] * 1000.0 if m[M_WAIT_COUNT] > 0 else 0.0
    ext[EXT.max_queue] = m[M_MAX_QUEUE]
    ext[EXT.queue_at_end] = w.queues.ints[I_QLEN]
    ext[EXT.in_flight_at_end] = w.workers.ints[I_BUSY]
    work = m[M_SERVICE] + m[M_CUT_SHORT]  # answered requests' service, and the work deadlines cut short
    ext[EXT.wasted_work_share] = m[M_WASTED] / work if work > 0 else 0.0
    ext[EXT.wasted_work_s] = m[M_WASTED]
    ext[EXT.completed_per_s] = m[M_COMPLETED] / 60.0
    ext[EXT.dropped_per_s] = m[M_DROPPED] / 60.0
    ext[EXT.abandoned_per_s] = m[M_ABANDONED] / 60.0
    ext[EXT.refused_per_s] = m[M_REFUSED] / 60.0
    ext[EXT.limited_per_s] = m[M_LIMITED] / 60.0
    ext[EXT.throttled_per_s] = m[M_THROTTLED] / 60.0
    ext[EXT.attempts_per_s] = admitted + m[M_RETRIES] / 60.0
    ext[EXT.retries_per_s] = m[M_RETRIES] / 60.0
    ext[EXT.retries_denied_per_s] = m[M_RETRY_DENIED] / 60.0
    ext[EXT.goodput_per_s] = m[M_OK] / 60.0

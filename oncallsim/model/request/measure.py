"""The minute's measures: the record fields the request engine measures, and the extras only it knows,
from the counts the loop kept (``world.meter.measures``, the histograms, the world's state at the minute's end)."""

from __future__ import annotations

from typing import Any

from oncallsim.model.fields import REC, ST
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

# The request-level extras (``MinuteRecord.extras``), in the order of the extras vector.
EXTRA_FIELDS = (
    ("p50_ms", "ms", "median response time of the minute's answered requests"),
    ("p999_ms", "ms", "99.9th percentile response time (timeouts count as the timeout)"),
    ("mean_wait_ms", "ms", "mean wait in the balancer's queue of requests that started service"),
    ("max_queue", "requests", "longest the balancer's queue got"),
    ("queue_at_end", "requests", "waiting at the minute's end (carried into the next minute)"),
    ("in_flight_at_end", "requests", "being served at the minute's end"),
    (
        "wasted_work_share",
        "fraction",
        "share of the work done (answered, or cut short by a deadline) that was for requests whose client had given up",
    ),
    ("completed_per_s", "req/s", "responses sent, whatever their outcome"),
    ("cache_present_share", "fraction", "hot objects in the cache at the minute's start"),
    ("dropped_per_s", "req/s", "answered at once with an error by a queue discipline or a full queue"),
    ("abandoned_per_s", "req/s", "work dropped because its deadline had passed (deadline propagation)"),
    ("refused_per_s", "req/s", "connections refused by crashed instances"),
    ("limited_per_s", "req/s", "rejected with 429 by an instance's concurrency limiter"),
    ("throttled_per_s", "req/s", "rejected by their own client (adaptive throttling)"),
    ("timeout_queue", "fraction", "timeouts of requests that spent their time waiting in a queue (of decided)"),
    ("timeout_slow_instance", "fraction", "timeouts of requests on a slow instance (of decided)"),
    ("timeout_service", "fraction", "timeouts of requests in service: CPU and database reads (of decided)"),
    ("attempts_per_s", "req/s", "attempts sent to the balancer: admitted requests plus their clients' retries"),
    ("retries_per_s", "req/s", "retries the clients sent"),
    ("retries_denied_per_s", "req/s", "retries the clients' retry budgets did not allow (the call failed)"),
    ("goodput_per_s", "req/s", "requests answered successfully (after their retries), as their users saw them"),
    ("wasted_work_s", "s", "worker-seconds of that wasted work (wasted_work_share's numerator)"),
)
(
    E_P50,
    E_P999,
    E_MEAN_WAIT,
    E_MAX_QUEUE,
    E_QUEUE_END,
    E_IN_FLIGHT_END,
    E_WASTED,
    E_COMPLETED,
    E_PRESENT,
    E_DROPPED,
    E_ABANDONED,
    E_REFUSED,
    E_LIMITED,
    E_THROTTLED,
    E_TO_QUEUE,
    E_TO_SLOW,
    E_TO_SERVICE,
    E_ATTEMPTS,
    E_RETRIES,
    E_RETRY_DENIED,
    E_GOODPUT,
    E_WASTED_S,
) = range(len(EXTRA_FIELDS))


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
        ext[E_PRESENT] = present
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
        ext[E_TO_QUEUE] = m[M_TO_QUEUE] / decided
        ext[E_TO_SLOW] = m[M_TO_SLOW] / decided
        ext[E_TO_SERVICE] = m[M_TO_SERVICE] / decided
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
    ext[E_P50] = quantile(w.meter.latency_hist, 0.5, timeout) * 1000.0
    ext[E_P999] = quantile(w.meter.latency_hist, 0.999, timeout) * 1000.0
    ext[E_MEAN_WAIT] = m[M_WAIT_SUM] / m[M_WAIT_COUNT] * 1000.0 if m[M_WAIT_COUNT] > 0 else 0.0
    ext[E_MAX_QUEUE] = m[M_MAX_QUEUE]
    ext[E_QUEUE_END] = w.queues.ints[I_QLEN]
    ext[E_IN_FLIGHT_END] = w.workers.ints[I_BUSY]
    work = m[M_SERVICE] + m[M_CUT_SHORT]  # answered requests' service, and the work deadlines cut short
    ext[E_WASTED] = m[M_WASTED] / work if work > 0 else 0.0
    ext[E_WASTED_S] = m[M_WASTED]
    ext[E_COMPLETED] = m[M_COMPLETED] / 60.0
    ext[E_DROPPED] = m[M_DROPPED] / 60.0
    ext[E_ABANDONED] = m[M_ABANDONED] / 60.0
    ext[E_REFUSED] = m[M_REFUSED] / 60.0
    ext[E_LIMITED] = m[M_LIMITED] / 60.0
    ext[E_THROTTLED] = m[M_THROTTLED] / 60.0
    ext[E_ATTEMPTS] = admitted + m[M_RETRIES] / 60.0
    ext[E_RETRIES] = m[M_RETRIES] / 60.0
    ext[E_RETRY_DENIED] = m[M_RETRY_DENIED] / 60.0
    ext[E_GOODPUT] = m[M_OK] / 60.0

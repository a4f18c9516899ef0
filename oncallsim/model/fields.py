"""The field schema: every value a minute records, and every value the state carries, declared once.

``MinuteRecord``, the state vector of the compiled minute, the batch ``Columns`` dtypes, the CSV/JSONL/
Parquet columns, the browser's field list and ``docs/records.md`` are generated from (or checked against)
these tables; tests/test_schema.py fails when one drifts.

Roles: ``record`` (measured or computed this minute), ``control`` (a setting in force), ``derived`` (a plain
function of other fields, kept for readers), ``label`` (minute, clock, events: not numbers).
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

from oncallsim.model.jit import positions

__all__ = [
    "NUMERIC_FIELDS",
    "REC",
    "RECORD_SCHEMA",
    "ST",
    "STATE_SCHEMA",
    "Field",
    "markdown_table",
]

Dtype = Literal["int", "float", "bool", "str", "events", "extras"]
Role = Literal["record", "control", "derived", "label", "state", "extra"]


class Field(NamedTuple):
    name: str
    dtype: Dtype
    unit: str
    meaning: str
    role: Role = "record"


RECORD_SCHEMA: tuple[Field, ...] = (
    Field("minute", "int", "min", "minutes since the start", "label"),
    Field("clock", "str", "HH:MM", "time of day", "label"),
    Field("expected_requests_per_s", "float", "req/s", "λ(t) before noise"),
    Field("requests_per_s", "float", "req/s", "observed arrivals"),
    Field("admitted_per_s", "float", "req/s", "after load shedding (λₐ)"),
    Field("shed_share", "float", "fraction", "share of the low-priority traffic shed", "control"),
    Field("shed_per_s", "float", "req/s", 'requests rejected with "retry later"'),
    Field("ttl_s", "float", "s", "cache TTL in force", "control"),
    Field("recommendations", "bool", "bool", "feature on", "control"),
    Field("cache_warm", "float", "fraction", "how full the cache is"),
    Field("cache_hit", "float", "fraction", "hit ratio"),
    Field("mean_age_s", "float", "s", "mean age of a cached answer (TTL/2)", "derived"),
    Field("warmup_active", "bool", "bool", "the warm-up job runs this minute"),
    Field("db_demand_qps", "float", "queries/s", "load on the database"),
    Field("db_utilization", "float", "fraction", "ρ, may exceed 1"),
    Field("query_time_ms", "float", "ms", "database query time"),
    Field("service_time_ms", "float", "ms", "S"),
    Field("servers", "int", "workers", "N = serving × workers per instance"),
    Field("capacity_per_s", "float", "req/s", "N/S: what the serving fleet completes at full utilization", "derived"),
    Field("erlangs", "float", "Erlangs", "offered load a = λₐ·S", "derived"),
    Field("utilization", "float", "fraction", "min(1, a/N)"),
    Field("wait_probability", "float", "fraction", "Erlang C (1 when saturated)"),
    Field("timeout_share", "float", "fraction", "P(W > timeout)"),
    Field("overload_share", "float", "fraction", "1 − N/a when a ≥ N"),
    Field("bad_build_share", "float", "fraction", "traffic on the bad build"),
    Field("error_rate", "float", "fraction", "errors among admitted requests"),
    Field("error_overload", "float", "fraction", "errors by overload (`errors_by_cause.overload` in JSON)"),
    Field("error_timeout", "float", "fraction", "errors by timeout (`errors_by_cause.timeout` in JSON)"),
    Field("error_bad_build", "float", "fraction", "errors by the bad build (`errors_by_cause.bad_build` in JSON)"),
    Field(
        "error_dead_instance",
        "float",
        "fraction",
        "errors at dead instances: refused, or never answered (`errors_by_cause.dead_instance`; request engine)",
    ),
    Field("p99_ms", "float", "ms", "approximate 99th percentile latency, capped at the timeout"),
    Field("burn", "float", "×", "this minute's burn rate"),
    Field("burn_1h", "float", "×", "burn rate over the long window (1 h)"),
    Field("burn_5m", "float", "×", "burn rate over the short window (5 min)"),
    Field("budget_left", "float", "fraction", "of the 30-day error budget, after this minute"),
    Field("page_firing", "bool", "bool", "the burn-rate page is firing"),
    Field("serving", "int", "instances", "serving this minute"),
    Field("booting", "int", "instances", "booting this minute"),
    Field("desired", "int", "instances", "the autoscaler's decision at the minute's end (the floor when off)"),
    Field("floor", "int", "instances", "fleet floor", "control"),
    Field("autoscaler", "bool", "bool", "autoscaler on", "control"),
    Field("target_utilization", "float", "fraction", "the autoscaler's target", "control"),
    Field("rollback_active", "bool", "bool", "a rollback is being prepared (fleet billed double)"),
    Field("cost_per_hour", "float", "$/h", "fleet cost rate this minute"),
    Field("cost_so_far", "float", "$", "cost including this minute"),
    Field("recommendations_available", "float", "fraction", "1 with the feature on, 0 off", "derived"),
    Field("events", "events", "list", 'what happened: "deploy started", "page fired", "rollback ready", …', "label"),
    Field(
        "extras",
        "extras",
        "object",
        "request engine only (absent from CSV): p50, p99.9, queue, wasted work, per instance; docs/requests.md",
        "label",
    ),
)

# The record's numbers, in order: the compiled minute writes them into one float vector.
NUMERIC_FIELDS: tuple[Field, ...] = tuple(f for f in RECORD_SCHEMA if f.role != "label")

# The state a minute reads and the next minute's state it writes (besides the booting and burn arrays).
STATE_SCHEMA: tuple[Field, ...] = (
    *(f for f in RECORD_SCHEMA if f.role == "control"),  # the settings in force
    Field("serving", "int", "instances", "serving instances", "state"),
    Field("quiet_minutes", "int", "min", "minutes in a row the autoscaler wanted fewer", "state"),
    Field("cache_warm", "float", "fraction", "how full the cache is", "state"),
    Field("warmup_left", "int", "min", "minutes the warm-up job still runs", "state"),
    Field("bad_build_share", "float", "fraction", "traffic on the bad build", "state"),
    Field("deploying", "bool", "bool", "a rollout is under way", "state"),
    Field("rollback_left", "int", "min", "minutes until the rollback is ready", "state"),
    Field("page_firing", "bool", "bool", "the page is firing", "state"),
    Field("budget_left", "float", "fraction", "error budget left", "state"),
    Field("cost_so_far", "float", "$", "cost so far", "state"),
    Field("db_slowdown", "float", "×", "the database's slowdown this minute (a brownout; 1 = none)", "state"),
)


def _index(name: str, fields: tuple[Field, ...]) -> Any:
    """Field positions by name, as a named tuple of ints (compiled code reads each as a constant)."""
    return positions(name, [f.name for f in fields])


REC: Any = _index("RecordIndex", NUMERIC_FIELDS)  # positions in the record vector
ST: Any = _index("StateIndex", STATE_SCHEMA)  # positions in the state vector


def markdown_table() -> str:
    """The record's fields as docs/records.md lists them (the per-cause errors folded into one object)."""
    lines = ["| field | unit | meaning |", "|---|---|---|"]
    for f in RECORD_SCHEMA:
        if f.name in ("error_timeout", "error_bad_build", "error_dead_instance"):
            continue
        if f.name == "error_overload":
            causes = "`overload`, `timeout`, `bad_build`, `dead_instance`: shares that add up to `error_rate`"
            lines.append(f"| `errors_by_cause` | object | {causes} |")
            continue
        lines.append(f"| `{f.name}` | {f.unit} | {f.meaning} |")
    return "\n".join(lines)


# The request engine's measures beyond the minute model's (``MinuteRecord.extras``, and the extras vector its
# compiled minute writes, in this order: ``ext[EXT.goodput_per_s]``); a minute-engine record has none.
EXTRA_SCHEMA: tuple[Field, ...] = (
    Field("p50_ms", "float", "ms", "median response time of the minute's answered requests", "extra"),
    Field("p999_ms", "float", "ms", "99.9th percentile response time (timeouts count as the timeout)", "extra"),
    Field("mean_wait_ms", "float", "ms", "mean wait in the balancer's queue of requests that started service", "extra"),
    Field("max_queue", "float", "requests", "longest the balancer's queue got", "extra"),
    Field("queue_at_end", "float", "requests", "waiting at the minute's end (carried into the next minute)", "extra"),
    Field("in_flight_at_end", "float", "requests", "being served at the minute's end", "extra"),
    Field(
        "wasted_work_share",
        "float",
        "fraction",
        "share of the work done (answered, or cut short by a deadline) that was for requests whose client had given up",
        "extra",
    ),
    Field("completed_per_s", "float", "req/s", "responses sent, whatever their outcome", "extra"),
    Field("cache_present_share", "float", "fraction", "hot objects in the cache at the minute's start", "extra"),
    Field(
        "dropped_per_s",
        "float",
        "req/s",
        "answered at once with an error by a queue discipline or a full queue",
        "extra",
    ),
    Field(
        "abandoned_per_s",
        "float",
        "req/s",
        "work dropped because its deadline had passed (deadline propagation)",
        "extra",
    ),
    Field("refused_per_s", "float", "req/s", "connections refused by crashed instances", "extra"),
    Field("limited_per_s", "float", "req/s", "rejected with 429 by an instance's concurrency limiter", "extra"),
    Field("throttled_per_s", "float", "req/s", "rejected by their own client (adaptive throttling)", "extra"),
    Field(
        "timeout_queue",
        "float",
        "fraction",
        "timeouts of requests that spent their time waiting in a queue (of decided)",
        "extra",
    ),
    Field(
        "timeout_slow_instance", "float", "fraction", "timeouts of requests on a slow instance (of decided)", "extra"
    ),
    Field(
        "timeout_service",
        "float",
        "fraction",
        "timeouts of requests in service: CPU and database reads (of decided)",
        "extra",
    ),
    Field(
        "attempts_per_s",
        "float",
        "req/s",
        "attempts sent to the balancer: admitted requests plus their clients' retries",
        "extra",
    ),
    Field("retries_per_s", "float", "req/s", "retries the clients sent", "extra"),
    Field(
        "retries_denied_per_s",
        "float",
        "req/s",
        "retries the clients' retry budgets did not allow (the call failed)",
        "extra",
    ),
    Field(
        "goodput_per_s",
        "float",
        "req/s",
        "requests answered successfully (after their retries), as their users saw them",
        "extra",
    ),
    Field("wasted_work_s", "float", "s", "worker-seconds of that wasted work (wasted_work_share's numerator)", "extra"),
)
EXT: Any = _index("ExtraIndex", EXTRA_SCHEMA)  # positions in the extras vector


def extras_by_name(ext: Any) -> dict[str, float]:
    """An extras vector as the record's ``extras`` mapping holds it (``EXTRA_SCHEMA`` order)."""
    return dict(zip((f.name for f in EXTRA_SCHEMA), ext.tolist(), strict=True))

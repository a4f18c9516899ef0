"""The metric names: every number a minute records, as a Prometheus metric, declared here and nowhere else.

Generated from the record schema (``model/fields.py``: ``RECORD_SCHEMA``, ``EXTRA_SCHEMA``) by the rules of
Prometheus' naming (base units: seconds, ratios 0–1; a counter's samples end in ``_total``; the unit is the
name's suffix) and, where they fit, OpenTelemetry's HTTP semantic conventions
(``http_server_request_duration_seconds``, ``http_server_active_requests``). A field whose unit is a rate
(req/s) becomes a counter of the minute's amounts; a fraction a ``_ratio`` gauge; milliseconds a ``_seconds``
gauge. A few fields fold into one metric with a label (the requests by status class and cause, the burn rate
by window, the response time by quantile) and a few names are chosen by hand (``_CHOSEN``); a field that is
not a metric says why (``NOT_EXPORTED``). The OpenMetrics export, the live ``/runs/{id}/metrics``, the shipped
rules and dashboard and ``docs/metrics.md`` (``markdown_table``) all read ``METRICS``;
``tests/test_metrics.py`` checks that every numeric field of both schemas is a metric or says why not.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

from oncallsim.model.fields import EXTRA_SCHEMA, RECORD_SCHEMA, Field
from oncallsim.model.record import MinuteRecord
from oncallsim.model.request.histogram import LATENCY_BOUNDS_S

__all__ = [
    "CAUSES",
    "METRICS",
    "NOT_EXPORTED",
    "PREFIX",
    "Metric",
    "Sample",
    "markdown_table",
    "metric",
]

PREFIX = "oncallsim_"
Kind = Literal["counter", "gauge", "histogram", "summary"]
Labels = tuple[tuple[str, str], ...]
# One sample of a minute: the sample's name suffix ("" or a histogram's "_bucket", "_sum", "_count"), its labels
# (without ``service``), and its value: a counter's or a histogram's amount in the minute, a gauge's value.
Sample = tuple[str, Labels, float]

# The causes of a failed request, as the record names them (``error_<cause>``): the ``cause`` label's values.
CAUSES: tuple[str, ...] = tuple(
    f.name.removeprefix("error_") for f in RECORD_SCHEMA if f.name.startswith("error_") and f.name != "error_rate"
)


@dataclass(frozen=True)
class Metric:
    """A metric family: its name (a counter's samples add ``_total``), its type, the OpenMetrics unit (the
    name's suffix), its help, its labels besides ``service``, the record fields it is made from, which engine
    has it, and how a minute's record gives its samples."""

    name: str
    kind: Kind
    unit: str
    help: str
    labels: tuple[str, ...]
    fields: tuple[str, ...]
    engine: Literal["both", "request"]
    read: Callable[[MinuteRecord], Iterator[Sample]]
    running: bool = False  # a counter whose field is already its running total (the cost so far)

    @property
    def sample_name(self) -> str:
        """What a PromQL selector names: ``…_total`` for a counter, the family's name otherwise (a histogram's
        samples add ``_bucket``, ``_sum``, ``_count``)."""
        return self.name + "_total" if self.kind == "counter" else self.name


# --- the rules: a field's unit gives its type, scale and suffix ---------------------------------------------

_RATE_UNITS = {"req/s": "", "queries/s": ""}  # per second: a counter of the minute's amount (× 60)
_GAUGE_UNITS = {  # unit → (suffix, scale)
    "fraction": ("ratio", 1.0),
    "ms": ("seconds", 0.001),
    "s": ("seconds", 1.0),
    "bool": ("", 1.0),
    "instances": ("instances", 1.0),
    "requests": ("requests", 1.0),
    "Erlangs": ("", 1.0),
    "$/h": ("dollars_per_hour", 1.0),
}
_NAME_SUFFIXES = ("_per_s", "_qps", "_per_hour", "_ms", "_s")

# Names and kinds chosen by hand where the rules would mislead: field → (name, kind, unit, scale, running). A
# counter adds up the minute's amounts (a per-second field × 60), or is already a running total (``running``).
_CHOSEN: dict[str, tuple[str, Kind, str, float, bool]] = {
    "db_demand_qps": ("db_queries", "counter", "", 60.0, False),
    "capacity_per_s": ("capacity_requests_per_second", "gauge", "", 1.0, False),
    "servers": ("workers", "gauge", "", 1.0, False),
    "budget_left": ("error_budget_remaining_ratio", "gauge", "ratio", 1.0, False),
    "cost_so_far": ("cost_dollars", "counter", "dollars", 1.0, True),
    "queue_at_end": ("queued_requests", "gauge", "requests", 1.0, False),
    "wasted_work_s": ("wasted_work_seconds", "counter", "seconds", 1.0, False),
}

# Fields that are not metrics of their own, and why.
NOT_EXPORTED: dict[str, str] = {
    "recommendations_available": "the same number as oncallsim_recommendations (1 with the feature on)",
}


def _value(record: MinuteRecord, field: str, extra: bool) -> float | None:
    if extra:
        return record.extra(field)
    return float(getattr(record, field))


def _field_metric(field: Field, extra: bool) -> Metric:
    """A field as a metric of its own, by the rules (or ``_CHOSEN``)."""
    base = field.name
    for suffix in _NAME_SUFFIXES:
        base = base.removesuffix(suffix)
    running = False
    if field.name in _CHOSEN:
        name, kind, unit, scale, running = _CHOSEN[field.name]
    elif field.unit in _RATE_UNITS:
        name, kind, unit, scale = base, "counter", "", 60.0
    elif field.unit in _GAUGE_UNITS:
        unit, scale = _GAUGE_UNITS[field.unit]
        name, kind = (f"{base}_{unit}" if unit else base), "gauge"
    else:
        raise ValueError(f"{field.name}: no rule for the unit {field.unit!r}: choose its name in _CHOSEN")

    def read(record: MinuteRecord) -> Iterator[Sample]:
        value = _value(record, field.name, extra)
        if value is not None:
            yield "", (), value * scale

    engine: Literal["both", "request"] = "request" if extra else "both"
    return Metric(PREFIX + name, kind, unit, field.meaning, (), (field.name,), engine, read, running)


# --- the metrics folded from several fields ------------------------------------------------------------------


def _requests(record: MinuteRecord) -> Iterator[Sample]:
    admitted = record.admitted_per_s * 60.0
    yield "", (("status_class", "2xx"),), admitted * (1.0 - record.error_rate)
    yield "", (("status_class", "4xx"), ("cause", "shed")), record.shed_per_s * 60.0
    for cause, share in record.errors_by_cause.items():
        yield "", (("status_class", "5xx"), ("cause", cause)), admitted * share


def _burn(record: MinuteRecord) -> Iterator[Sample]:
    yield "", (("window", "1m"),), record.burn
    yield "", (("window", "5m"),), record.burn_5m
    yield "", (("window", "1h"),), record.burn_1h


_QUANTILES = (("0.5", "p50_ms"), ("0.99", "p99_ms"), ("0.999", "p999_ms"))


def _response_time(record: MinuteRecord) -> Iterator[Sample]:
    for quantile, field in _QUANTILES:
        value = record.p99_ms if field == "p99_ms" else record.extra(field)
        if value is not None:
            yield "", (("quantile", quantile),), value / 1000.0


def _duration_histogram(record: MinuteRecord) -> Iterator[Sample]:
    extras = record.extras or {}
    counts = extras.get("latency_buckets")
    if counts is None:  # a minute-engine record, or one saved before the request engine kept its histogram
        return
    for bound, count in zip((*LATENCY_BOUNDS_S, "+Inf"), counts, strict=True):
        yield "_bucket", (("le", str(bound)),), float(count)
    yield "_count", (), float(counts[-1])
    yield "_sum", (), float(extras["latency_sum_s"])


def _instance_line(line: str, scale: float = 1.0) -> Callable[[MinuteRecord], Iterator[Sample]]:
    def read(record: MinuteRecord) -> Iterator[Sample]:
        lines = (record.extras or {}).get("instances") or {}
        for i, value in enumerate(lines.get(line, ())):
            if value is not None:
                yield "", (("instance", f"i{i}"),), float(value) * scale

    return read


_FOLDED: tuple[Metric, ...] = (
    Metric(
        "http_server_requests",
        "counter",
        "",
        "requests that reached the service, by status class (2xx served, 4xx shed with 'retry later', 5xx failed) "
        "and the cause of a failure",
        ("status_class", "cause"),
        ("requests_per_s", "admitted_per_s", "shed_per_s", "error_rate", *(f"error_{c}" for c in CAUSES)),
        "both",
        _requests,
    ),
    Metric(
        "http_server_request_duration_seconds",
        "histogram",
        "seconds",
        "response times of the requests answered or timed out (OpenTelemetry's http.server.request.duration; "
        "a timeout counts at the timeout)",
        ("le",),
        ("extras.latency_buckets", "extras.latency_sum_s"),
        "request",
        _duration_histogram,
    ),
    Metric(
        "http_server_active_requests",
        "gauge",
        "",
        "requests being served at the minute's end, per instance (OpenTelemetry's http.server.active_requests)",
        ("instance",),
        ("in_flight_at_end",),
        "request",
        _instance_line("in_flight"),
    ),
    Metric(
        PREFIX + "response_time_seconds",
        "summary",
        "seconds",
        "the minute's response-time quantiles (0.99 on both engines, capped at the timeout; 0.5 and 0.999 on the "
        "request engine); a summary of quantiles only",
        ("quantile",),
        ("p99_ms", "p50_ms", "p999_ms"),
        "both",
        _response_time,
    ),
    Metric(
        PREFIX + "burn_rate",
        "gauge",
        "",
        "the built-in burn rate: error rate over the window / 0.1 % (1m: this minute; 1h pre-filled with the "
        "opening minute)",
        ("window",),
        ("burn", "burn_5m", "burn_1h"),
        "both",
        _burn,
    ),
    Metric(
        PREFIX + "instance_served",
        "counter",
        "",
        "requests an instance finished serving",
        ("instance",),
        ("extras.instances.served",),
        "request",
        _instance_line("served"),
    ),
    Metric(
        PREFIX + "instance_errors",
        "counter",
        "",
        "failed requests an instance answered or held (refused, limited, timed out on it)",
        ("instance",),
        ("extras.instances.errors",),
        "request",
        _instance_line("errors"),
    ),
    Metric(
        PREFIX + "instance_busy_seconds",
        "counter",
        "seconds",
        "worker-seconds an instance spent serving",
        ("instance",),
        ("extras.instances.busy_s",),
        "request",
        _instance_line("busy_s"),
    ),
    Metric(
        PREFIX + "instance_queued_requests",
        "gauge",
        "requests",
        "requests waiting in an instance's own queue at the minute's end",
        ("instance",),
        ("extras.instances.queue",),
        "request",
        _instance_line("queue"),
    ),
    Metric(
        PREFIX + "instance_response_time_p99_seconds",
        "gauge",
        "seconds",
        "an instance's 99th percentile response time in the minute (1 ms bins)",
        ("instance",),
        ("extras.instances.p99_ms",),
        "request",
        _instance_line("p99_ms", 0.001),
    ),
)

_FOLDED_FIELDS = frozenset(f for m in _FOLDED for f in m.fields)


def _catalog() -> tuple[Metric, ...]:
    out: list[Metric] = []
    for schema, extra in ((RECORD_SCHEMA, False), (EXTRA_SCHEMA, True)):
        for field in schema:
            if field.role == "label" or field.name in _FOLDED_FIELDS or field.name in NOT_EXPORTED:
                continue
            out.append(_field_metric(field, extra))
    # the folded metrics first (the requests, the response time, the burn rate), each engine's after its fields
    both = [m for m in (*_FOLDED, *out) if m.engine == "both"]
    request = [m for m in (*_FOLDED, *out) if m.engine == "request"]
    return (*both, *request)


METRICS: tuple[Metric, ...] = _catalog()
_BY_NAME = {m.name: m for m in METRICS}


def metric(name: str) -> Metric:
    """A metric family by its name (or a counter's by its ``_total`` sample name)."""
    return _BY_NAME[name.removesuffix("_total")] if name.removesuffix("_total") in _BY_NAME else _BY_NAME[name]


def markdown_table() -> str:
    """The metrics as docs/metrics.md lists them: name as PromQL selects it, type, labels, source, meaning."""
    lines = ["| metric | type | labels | from the record's | meaning |", "|---|---|---|---|---|"]
    for m in METRICS:
        labels = ", ".join(f"`{label}`" for label in ("service", *m.labels))
        fields = ", ".join(f"`{f}`" for f in m.fields)
        engine = "" if m.engine == "both" else " (request engine)"
        lines.append(f"| `{m.sample_name}` | {m.kind} | {labels} | {fields} | {m.help}{engine} |")
    return "\n".join(lines)

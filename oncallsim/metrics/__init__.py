"""Runs as Prometheus metrics: the names (``names``), and the OpenMetrics text of a run's minutes, exported
with timestamps or read live (``exposition``). docs/metrics.md lists every metric."""

from oncallsim.metrics.exposition import (
    CONTENT_TYPE,
    DEFAULT_SERVICE,
    TEXT_CONTENT_TYPE,
    Accumulator,
    check_service,
    current_text,
    default_start,
    openmetrics_export,
    parse_start,
)
from oncallsim.metrics.names import METRICS, Metric, metric

__all__ = [
    "CONTENT_TYPE",
    "DEFAULT_SERVICE",
    "METRICS",
    "TEXT_CONTENT_TYPE",
    "Accumulator",
    "Metric",
    "check_service",
    "current_text",
    "default_start",
    "metric",
    "openmetrics_export",
    "parse_start",
]

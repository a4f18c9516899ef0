"""Runs as Prometheus metrics: the names (``names``), and the OpenMetrics text of a run's minutes, exported
with timestamps or read live (``exposition``). docs/metrics.md lists every metric. Names are imported on first
use (``oncallsim.lazy``): the command line's help reads the defaults without the model."""

from typing import TYPE_CHECKING as _TYPE_CHECKING

from oncallsim.lazy import exports as _exports

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

_HOMES = {
    **dict.fromkeys(
        (
            "CONTENT_TYPE",
            "TEXT_CONTENT_TYPE",
            "Accumulator",
            "current_text",
            "default_start",
            "openmetrics_export",
            "parse_start",
        ),
        "oncallsim.metrics.exposition",
    ),
    **dict.fromkeys(("DEFAULT_SERVICE", "check_service"), "oncallsim.metrics.service"),
    **dict.fromkeys(("METRICS", "Metric", "metric"), "oncallsim.metrics.names"),
}

if _TYPE_CHECKING:
    from oncallsim.metrics.exposition import (
        CONTENT_TYPE,
        TEXT_CONTENT_TYPE,
        Accumulator,
        current_text,
        default_start,
        openmetrics_export,
        parse_start,
    )
    from oncallsim.metrics.names import METRICS, Metric, metric
    from oncallsim.metrics.service import DEFAULT_SERVICE, check_service

__getattr__, __dir__ = _exports(__name__, _HOMES)

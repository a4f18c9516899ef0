"""A Grafana dashboard for a run's metrics (``examples/grafana/oncallsim.json``), made from ``METRICS`` so that a
renamed metric cannot leave it behind: ``python scripts/update_dashboard.py`` writes it, a test compares the two
and has ``promtool`` parse every query.

It reads a Prometheus data source (chosen when imported) and a ``service`` variable; it suits a backfilled export
(docs/metrics.md) and a live run or game-day room scraped at the real-time speed.
"""

from __future__ import annotations

from typing import Any

from oncallsim.metrics.names import metric

__all__ = ["PANELS", "dashboard", "queries"]

SERVICE = '{service="$service"}'


def _m(name: str) -> str:
    """A metric's name as PromQL selects it (a KeyError for a name ``METRICS`` does not have)."""
    return metric(name).sample_name


def _sel(name: str, extra: str = "") -> str:
    inner = 'service="$service"' + (f",{extra}" if extra else "")
    return f"{_m(name)}{{{inner}}}"


_REQ = "http_server_requests"
_FAILED = _sel(_REQ, 'status_class="5xx"')
_SERVED = _sel(_REQ, 'cause!="shed"')  # the SLI's valid events: what the service chose to serve (MODEL.md §8)
_SHED = _sel(_REQ, 'cause="shed"')


def _sli(window: str) -> str:
    return f"sum(rate({_FAILED}[{window}])) / sum(rate({_SERVED}[{window}]))"


# (title, unit, [(PromQL, legend)], kind): the panels, top to bottom, two a row.
PANELS: list[tuple[str, str, list[tuple[str, str]], str]] = [
    (
        "Requests by status class",
        "reqps",
        [(f"sum by (status_class) (rate({_sel(_REQ)}[$__rate_interval]))", "{{status_class}}")],
        "timeseries",
    ),
    (
        "Failed requests by cause",
        "reqps",
        [(f"sum by (cause) (rate({_FAILED}[$__rate_interval]))", "{{cause}}")],
        "timeseries",
    ),
    (
        "Error ratio (the SLI) over 5 min and 1 h",
        "percentunit",
        [(_sli("5m"), "5 min"), (_sli("1h"), "1 h")],
        "timeseries",
    ),
    (
        "Built-in burn rate (page at 14.4× over 1 h and 5 min)",
        "none",
        [(f"{_m('oncallsim_burn_rate')}{SERVICE}", "{{window}}")],
        "timeseries",
    ),
    (
        "Error budget remaining (30 days)",
        "percentunit",
        [(f"{_m('oncallsim_error_budget_remaining_ratio')}{SERVICE}", "budget")],
        "timeseries",
    ),
    ("Built-in page", "none", [(f"{_m('oncallsim_page_firing')}{SERVICE}", "firing")], "state-timeline"),
    (
        "Response time",
        "s",
        [
            (f"{_m('oncallsim_response_time_seconds')}{SERVICE}", "p{{quantile}} (the minute's)"),
            (
                "histogram_quantile(0.99, sum by (le) (rate("
                f"{_m('http_server_request_duration_seconds')}_bucket{SERVICE}[$__rate_interval])))",
                "p99 from the histogram (request engine)",
            ),
        ],
        "timeseries",
    ),
    (
        "Fleet",
        "none",
        [
            (f"{_m('oncallsim_serving_instances')}{SERVICE}", "serving"),
            (f"{_m('oncallsim_booting_instances')}{SERVICE}", "booting"),
            (f"{_m('oncallsim_desired_instances')}{SERVICE}", "desired"),
            (f"{_m('oncallsim_floor_instances')}{SERVICE}", "floor"),
        ],
        "timeseries",
    ),
    (
        "Utilization",
        "percentunit",
        [
            (f"{_m('oncallsim_utilization_ratio')}{SERVICE}", "service"),
            (f"{_m('oncallsim_db_utilization_ratio')}{SERVICE}", "database"),
            (f"{_m('oncallsim_cache_hit_ratio')}{SERVICE}", "cache hit ratio"),
        ],
        "timeseries",
    ),
    (
        "Active requests by instance (request engine)",
        "none",
        [(f"{_m('http_server_active_requests')}{SERVICE}", "{{instance}}")],
        "timeseries",
    ),
    ("Fleet cost", "currencyUSD", [(f"{_m('oncallsim_cost_dollars_per_hour')}{SERVICE}", "$/h")], "timeseries"),
    (
        "Retries and load shed (request engine: retries)",
        "reqps",
        [
            (f"sum(rate({_m('oncallsim_retries_total')}{SERVICE}[$__rate_interval]))", "retries"),
            (f"sum(rate({_SHED}[$__rate_interval]))", "shed"),
        ],
        "timeseries",
    ),
]


def queries() -> list[str]:
    """Every PromQL query of the dashboard, as written (with its variables)."""
    return [expr for _, _, targets, _ in PANELS for expr, _ in targets]


def dashboard() -> dict[str, Any]:
    panels = []
    for i, (title, unit, targets, kind) in enumerate(PANELS):
        panels.append(
            {
                "id": i + 1,
                "type": kind,
                "title": title,
                "datasource": {"type": "prometheus", "uid": "${datasource}"},
                "gridPos": {"h": 8, "w": 12, "x": 12 * (i % 2), "y": 8 * (i // 2)},
                "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
                "targets": [
                    {
                        "refId": chr(ord("A") + j),
                        "datasource": {"type": "prometheus", "uid": "${datasource}"},
                        "expr": expr,
                        "legendFormat": legend,
                    }
                    for j, (expr, legend) in enumerate(targets)
                ],
            }
        )
    return {
        "title": "oncallsim: a simulated service",
        "uid": "oncallsim",
        "description": "A run of oncallsim as Prometheus metrics (docs/metrics.md).",
        "tags": ["oncallsim", "slo"],
        "schemaVersion": 39,
        "editable": True,
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "1m",
        "templating": {
            "list": [
                {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Prometheus"},
                {
                    "name": "service",
                    "type": "query",
                    "label": "service",
                    "datasource": {"type": "prometheus", "uid": "${datasource}"},
                    "query": f"label_values({_m(_REQ)}, service)",
                    "refresh": 2,
                },
            ]
        },
        "panels": panels,
    }

"""A zoomed minute as one self-contained HTML page (plotly.js inlined: it opens offline)."""

from __future__ import annotations

import itertools
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio
from jinja2 import Environment, select_autoescape
from plotly.offline import get_plotlyjs
from plotly.subplots import make_subplots

from oncallsim.zoom.minute import ZoomedMinute

__all__ = ["render_zoom_html", "zoom_figure"]

_LINE_LABELS = {
    "arrivals": "arrivals",
    "completed": "answered",
    "errors": "errors",
    "queue": "waiting in the queue",
    "in_flight": "being served",
}
_INSTANCE_LABELS = {"served": "requests served", "errors": "errors", "busy_s": "busy seconds", "bad_build": "bad build"}


def zoom_figure(z: ZoomedMinute) -> go.Figure:
    """Latency histogram (p50, p99, timeout marked), per-second lines, the instances side by side."""
    fig = make_subplots(
        rows=3,
        cols=1,
        subplot_titles=(
            f"Response times, {z.clock} (answered requests; {z.timeouts:,} timed out)",
            "Second by second",
            "Instances side by side",
        ),
        vertical_spacing=0.1,
    )
    edges = z.histogram_edges_ms
    centers = [(a + b) / 2 for a, b in itertools.pairwise(edges)]
    fig.add_trace(
        go.Bar(x=centers, y=z.histogram_counts, width=edges[1] - edges[0], name="requests", showlegend=False),
        row=1,
        col=1,
    )
    marks = (("p50", z.measured["p50_ms"]), ("p99", z.measured["p99_ms"]), ("timeout", z.timeout_ms))
    for label, value in marks:
        if value <= edges[-1] * 1.02:
            fig.add_vline(x=value, line_dash="dash", annotation_text=f"{label} {value:,.0f} ms", row=1, col=1)
    fig.update_xaxes(title_text="ms", row=1, col=1)
    seconds = list(range(60))
    for line, values in z.seconds.items():
        fig.add_trace(go.Scatter(x=seconds, y=values, mode="lines", name=_LINE_LABELS[line]), row=2, col=1)
    fig.update_xaxes(title_text="second of the minute", row=2, col=1)
    names = [f"#{i + 1}{' (bad build)' if bad else ''}" for i, bad in enumerate(z.instances["bad_build"])]
    fig.add_trace(go.Bar(x=names, y=z.instances["served"], name=_INSTANCE_LABELS["served"]), row=3, col=1)
    fig.add_trace(go.Bar(x=names, y=z.instances["errors"], name=_INSTANCE_LABELS["errors"]), row=3, col=1)
    fig.update_layout(height=1000, barmode="group", margin={"t": 60, "l": 50, "r": 20, "b": 40})
    return fig


_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>oncallsim: minute {{ z.clock }} zoomed</title>
<style>
body { font-family: system-ui, sans-serif; margin: 1rem auto; max-width: 1100px; padding: 0 1rem; }
table { border-collapse: collapse; font-size: 0.9rem; } td, th { padding: 0.2rem 0.5rem; text-align: right; }
th { border-bottom: 1px solid #999; } .scroll { overflow-x: auto; } .num { font-variant-numeric: tabular-nums; }
</style>
{% if plotly_src %}<script src="{{ plotly_src }}"></script>
{% else %}<script>{{ plotly_js | safe }}</script>{% endif %}
</head>
<body>
<h1>Minute {{ z.minute }} ({{ z.clock }}) request by request</h1>
<p>Re-simulated at request level from the run's record of the minute ({{ z.source_engine }} engine):
{{ z.record.serving }} serving instances, {{ "%.0f" | format(z.record.bad_build_share * 100) }} % of traffic on the bad
build, {{ "{:,.0f}".format(z.record.requests_per_s * 60) }} requests, the cache at its steady state for a
{{ "%.1f" | format(z.record.cache_hit * 100) }} % hit ratio.
{% if z.warmed_up %}A minute at the same rate went by first, so queues start in their steady state.
{% else %}The minute is unstable (offered load ≥ workers): queues start empty and grow.{% endif %}</p>
<table class="num"><tr><th></th><th>the run's record</th><th>zoomed</th></tr>
{% for key, label in rows %}<tr><td style="text-align:left">{{ label }}</td>
<td>{{ fmt(z.record[key]) }}</td><td>{{ fmt(z.measured[key]) }}</td></tr>{% endfor %}
<tr><td style="text-align:left">p50 / p99.9 ms</td><td>–</td>
<td>{{ fmt(z.measured.p50_ms) }} / {{ fmt(z.measured.p999_ms) }}</td></tr>
</table>
{{ chart_div | safe }}
<h2>Sampled requests ({{ z.samples | length }})</h2>
<div class="scroll"><table class="num"><tr>{% for h in headers %}<th>{{ h }}</th>{% endfor %}</tr>
{% for s in z.samples %}<tr><td>{{ "%.3f" | format(s.arrival_s) }}</td>
<td>{{ "low" if s.low_priority else "high" }}</td>
<td>{{ {1.0: "hit", 0.0: "miss"}.get(s.hit, "–") }}</td><td>{{ "%.1f" | format(s.wait_ms) }}</td>
<td>{{ "%.1f" | format(s.service_ms) }}</td><td>{{ s.queries | int }}</td>
<td>{{ "#%d" | format(s.instance + 1) if s.instance >= 0 else "–" }}</td>
<td>{{ "%.1f" | format(s.response_ms) if s.outcome not in ("shed", "pending") else "–" }}</td>
<td style="text-align:left">{{ s.outcome }}</td></tr>{% endfor %}
</table></div>
{{ chart_script | safe }}
</body></html>
"""

_ROWS = (
    ("requests_per_s", "requests/s"),
    ("cache_hit", "cache hit ratio"),
    ("utilization", "utilization"),
    ("wait_probability", "share that waited"),
    ("query_time_ms", "query time ms"),
    ("error_rate", "error rate"),
    ("p99_ms", "p99 ms"),
)
_HEADERS = ("arrival s", "priority", "cache", "wait ms", "service ms", "reads", "instance", "response ms", "outcome")


def _fmt(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    return f"{value:,.4f}" if abs(value) < 1 else f"{value:,.1f}"


def render_zoom_html(z: ZoomedMinute, plotly_src: str | None = None) -> str:
    """The page; plotly.js inlined (a file that opens offline) unless ``plotly_src`` names where it is served."""
    html = pio.to_html(
        zoom_figure(z), include_plotlyjs=False, full_html=False, div_id="zoom-chart", config={"displaylogo": False}
    )
    split = html.index("<script")
    env = Environment(autoescape=select_autoescape(default_for_string=True, default=True))
    return env.from_string(_PAGE).render(
        z=z,
        rows=_ROWS,
        headers=_HEADERS,
        fmt=_fmt,
        chart_div=html[:split],
        chart_script=html[split:],
        plotly_js="" if plotly_src else get_plotlyjs(),
        plotly_src=plotly_src,
    )

"""A zoomed minute as one self-contained HTML page (plotly.js inlined: it opens offline)."""

from __future__ import annotations

import itertools
import json
from functools import cache
from importlib import resources
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio
from jinja2 import Environment, select_autoescape
from plotly.offline import get_plotlyjs
from plotly.subplots import make_subplots

from oncallsim.model.request.settings import in_force
from oncallsim.zoom.minute import ZoomedMinute

__all__ = ["diagram_data", "render_zoom_html", "zoom_figure"]

_LINE_LABELS = {
    "arrivals": "arrivals",
    "completed": "answered",
    "errors": "errors",
    "queue": "waiting in the queue",
    "in_flight": "being served",
}
_INSTANCE_LABELS = {"served": "requests served", "errors": "errors", "busy_s": "busy seconds", "bad_build": "bad build"}


def zoom_figure(z: ZoomedMinute) -> go.Figure:
    """Latency histogram (p50, p99, p99.9 and the timeout marked), per-second rates and levels, the instances
    side by side; each chart with its own legend and axis titles."""
    top_ms = z.histogram_edges_ms[-1]
    shows_timeout = z.timeouts > 0 or top_ms >= 0.8 * z.timeout_ms
    titles = (
        "Response times, answered requests",
        "Per second: in, out, errors",
        "Per second: waiting, served",
        "Instances",
    )
    fig = make_subplots(rows=4, cols=1, subplot_titles=titles, vertical_spacing=0.08)
    edges = z.histogram_edges_ms
    width = edges[1] - edges[0]
    centers = [(a + b) / 2 for a, b in itertools.pairwise(edges)]
    fig.add_trace(
        go.Bar(x=centers, y=z.histogram_counts, width=width, name=f"requests per {width:g} ms", legend="legend"),
        row=1,
        col=1,
    )
    marks = [("p50", z.measured["p50_ms"]), ("p99", z.measured["p99_ms"]), ("p99.9", z.measured["p999_ms"])]
    if shows_timeout:
        marks.append(("timeout", z.timeout_ms))
    for k, (label, value) in enumerate(marks):  # values are in the table above; labels stack down the chart
        if value > top_ms * 1.02:
            continue
        fig.add_vline(
            x=value,
            line_dash="dot" if label == "timeout" else "dash",
            line_color="#b00" if label == "timeout" else "#444",
            annotation_text=label,
            annotation_yshift=-15 * k,
            row=1,
            col=1,
        )
    fig.update_xaxes(title_text="response time, ms", row=1, col=1)
    fig.update_yaxes(title_text="requests", row=1, col=1)
    seconds = list(range(60))
    for line, color in (("arrivals", "#1f77b4"), ("completed", "#2ca02c"), ("errors", "#d62728")):
        fig.add_trace(
            go.Scatter(x=seconds, y=z.seconds[line], mode="lines", name=_LINE_LABELS[line], line_color=color,
                       legend="legend2"),
            row=2,
            col=1,
        )  # fmt: skip
    for line, color in (("queue", "#ff7f0e"), ("in_flight", "#9467bd")):
        fig.add_trace(
            go.Scatter(x=seconds, y=z.seconds[line], mode="lines", name=_LINE_LABELS[line], line_color=color,
                       legend="legend3"),
            row=3,
            col=1,
        )  # fmt: skip
    for row in (2, 3):
        fig.update_xaxes(title_text="second of the minute", row=row, col=1)
    fig.update_yaxes(title_text="requests / s", row=2, col=1)
    fig.update_yaxes(title_text="requests", row=3, col=1)
    names = [f"#{i + 1}{' bad build' if bad else ''}" for i, bad in enumerate(z.instances["bad_build"])]
    answered_ok = [s - e for s, e in zip(z.instances["served"], z.instances["errors"], strict=True)]
    busy = [f"busy {b / (60.0 * z.workers_per_instance):.0%}" for b in z.instances["busy_s"]]
    fig.add_trace(
        go.Bar(x=names, y=answered_ok, name="answered well", marker_color="#2ca02c", legend="legend4",
               hovertext=busy),
        row=4,
        col=1,
    )  # fmt: skip
    fig.add_trace(
        go.Bar(x=names, y=z.instances["errors"], name="errors", marker_color="#d62728", legend="legend4",
               hovertext=busy),
        row=4,
        col=1,
    )  # fmt: skip
    fig.update_yaxes(title_text="requests", row=4, col=1)
    layout: dict[str, Any] = {
        "height": 1300,
        "barmode": "stack",
        "margin": {"t": 60, "l": 60, "r": 20, "b": 40},
    }
    for n, row in ((1, 1), (2, 2), (3, 3), (4, 4)):  # each chart's legend at its own top right
        domain = fig.get_subplot(row, 1).yaxis.domain
        layout["legend" if n == 1 else f"legend{n}"] = {
            "x": 1.0, "xanchor": "right", "y": domain[1], "yanchor": "top", "bgcolor": "rgba(255,255,255,0.7)",
        }  # fmt: skip
    fig.update_layout(**layout)
    return fig


_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>oncallsim: minute {{ z.clock }} zoomed</title>
<link rel="icon" href="data:,">
<style>
table { border-collapse: collapse; font-size: 0.9rem; } td, th { padding: 0.2rem 0.5rem; text-align: right; }
th { border-bottom: 1px solid #999; } .num { font-variant-numeric: tabular-nums; }
.scroll { overflow-x: auto; border-inline-end: 3px solid #ddd; } tr.bad td { background: #fde8e8; }
summary { cursor: pointer; font-weight: 600; margin: 1rem 0 0.5rem; } .key { color: #555; font-size: 0.9rem; }
</style>
{% if plotly_src %}<link rel="stylesheet" href="/static/css/app.css">
{% else %}<style>{{ app_css | safe }}</style>{% endif %}
<style>
body { font-family: system-ui, sans-serif; margin: 1rem auto; max-width: 1100px; padding: 0 1rem; }
.diagram { height: auto; max-height: 120px; min-width: 0; } .diagram .instance rect { stroke-width: 1; }
.diagram .instance.bad-build rect { stroke: var(--bad); stroke-width: 2; }
.seconds { display: flex; gap: 0.6rem; align-items: center; flex-wrap: wrap; }
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
{% if z.record.db_slowdown and z.record.db_slowdown > 1 %}The database is in a brownout: every read takes
{{ "%.2f" | format(z.record.db_slowdown) }}× as long.
{% endif %}{% if in_force %}In force: {{ in_force | join("; ") }}.
{% endif %}{% if z.warmed_up %}A minute at the same rate went by first, so queues start in their steady state.
{% else %}The minute is unstable (offered load ≥ workers): queues start empty here and grow; a backlog the run
carried in from the minutes before is not in this zoom.{% endif %}</p>
<p>{{ "{:,}".format(z.timeouts) }} requests timed out (the client gives up after {{ "{:,.0f}".format(z.timeout_ms) }}
ms{% if z.histogram_edges_ms[-1] < 0.8 * z.timeout_ms %}, off the histogram's right edge{% endif %}).</p>
<section aria-labelledby="diagram-title">
<h2 id="diagram-title">The service in this minute</h2>
<p class="key">The console's diagram for this minute. Move through its seconds: the traffic in and the fleet's busy
share are the zoom's, second by second; the cache and the database are the minute's. Each square under the fleet
is one instance, coloured by how busy it was this minute (outlined red: on the bad build).</p>
<svg id="diagram" class="diagram" viewBox="0 0 760 84" role="img"
  aria-label="The service: load balancer, fleet, cache, database" data-diagram="{{ diagram_json }}">
  <line data-part="lb-fleet" x1="120" y1="30" x2="250" y2="30"/>
  <line data-part="shed" class="shed" x1="60" y1="50" x2="60" y2="64"/>
  <line data-part="fleet-cache" x1="400" y1="30" x2="470" y2="30"/>
  <line data-part="cache-db" x1="590" y1="30" x2="630" y2="30"/>
  <g data-part="lb" data-level="calm"><rect x="2" y="8" width="118" height="44" rx="6"/>
    <text x="61" y="26">Load balancer</text><text data-part="lb-text" class="value" x="61" y="44"></text></g>
  <text data-part="shed-text" class="shed-text" x="70" y="62"></text>
  <g data-part="fleet" data-level="calm"><rect x="250" y="2" width="150" height="56" rx="6"/>
    <text x="325" y="18">Fleet</text><text data-part="fleet-text" class="value" x="325" y="35"></text>
    <text data-part="fleet-sub" class="value" x="325" y="51"></text></g>
  <g data-part="cache" data-level="calm"><rect x="470" y="8" width="120" height="44" rx="6"/>
    <text x="530" y="26">Cache</text><text data-part="cache-text" class="value" x="530" y="44"></text></g>
  <g data-part="db" data-level="calm"><rect x="630" y="8" width="128" height="44" rx="6"/>
    <text x="694" y="26">Database</text><text data-part="db-text" class="value" x="694" y="44"></text></g>
  <g data-part="instances">{% for i in instances %}
    <g class="instance{{ ' bad-build' if i.bad_build }}" data-level="{{ i.level }}"><title>{{ i.title }}</title>
    <rect x="{{ i.x }}" y="66" width="{{ i.width }}" height="14" rx="2"/></g>{% endfor %}</g>
</svg>
<p class="seconds"><label for="zoom-second">Second of the minute</label>
<input type="range" id="zoom-second" min="0" max="59" step="1" value="0">
<output id="zoom-second-clock" for="zoom-second">{{ z.clock }}</output>
<button type="button" id="zoom-whole-minute" aria-pressed="true">The whole minute</button></p>
</section>
<table class="num"><tr><th></th><th>the run's record</th><th>zoomed</th></tr>
{% for key, label in rows %}<tr><td style="text-align:left">{{ label }}</td>
<td>{{ fmt(z.record[key]) if key in z.record else "–" }}</td><td>{{ fmt(z.measured[key]) }}</td></tr>{% endfor %}
</table>
{{ chart_div | safe }}
<details{% if samples | length <= 40 %} open{% endif %}>
<summary>Sampled requests: {{ samples | length }}, every {{ z.sample_every }}th arrival, errors first, then the
slowest</summary>
<p class="key">ok: answered in time · bad_build: answered with the bad build's error · timeout: the client gave up
after {{ "{:,.0f}".format(z.timeout_ms) }} ms · overload / dropped: failed at once · shed: turned away as low priority
· pending: still waiting or being served when the minute ended. A wait of ≥ {{ "{:,.0f}".format(z.timeout_ms) }} ms:
still queued when its client gave up.</p>
<div class="scroll"><table class="num"><tr>{% for h in headers %}<th>{{ h }}</th>{% endfor %}</tr>
{% for s in samples %}<tr{% if s.outcome not in ("ok", "pending", "shed") %} class="bad"{% endif %}>
<td>{{ "%.3f" | format(s.arrival_s) }}</td>
<td>{{ "low" if s.low_priority else "high" }}</td>
<td>{{ {1.0: "hit", 0.0: "miss"}.get(s.hit, "–") }}</td>
{% if s.instance < 0 and s.outcome == "timeout" %}<td>≥ {{ "{:,.0f}".format(s.wait_ms) }}</td>
{% else %}<td>{{ "%.1f" | format(s.wait_ms) }}</td>{% endif %}
<td>{{ "%.1f" | format(s.service_ms) }}</td><td>{{ s.queries | int }}</td>
<td>{{ "#%d" | format(s.instance + 1) if s.instance >= 0 else "–" }}</td>
<td>{{ "%.1f" | format(s.response_ms) if s.outcome not in ("shed", "pending", "overload", "dropped") else "–" }}</td>
<td style="text-align:left">{{ s.outcome }}</td></tr>{% endfor %}
</table></div>
</details>
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
    ("p50_ms", "p50 ms"),
    ("p99_ms", "p99 ms"),
    ("p999_ms", "p99.9 ms"),
    ("queue_at_end", "waiting at the minute's end"),
)
_HEADERS = ("arrival s", "priority", "cache", "wait ms", "service ms", "reads", "instance", "response ms", "outcome")
_ORDER = {"timeout": 0, "overload": 1, "dropped": 1, "bad_build": 2}


def _fmt(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    return f"{value:,.3f}" if abs(value) < 1 else f"{value:,.1f}"


def _reading_order(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Errors first, then the slowest answers: what a person scanning the table is looking for."""
    return sorted(samples, key=lambda s: (_ORDER.get(s["outcome"], 3), -s["response_ms"], s["arrival_s"]))


def render_zoom_html(z: ZoomedMinute, served: bool = False) -> str:
    """The page: a file that opens offline (plotly.js and the chart's script inline), or, ``served`` by the
    console, plotly.js and the page's script from the console and the figure as data (its Content Security
    Policy runs no inline script)."""
    fig = zoom_figure(z)
    catalog = json.dumps(_diagram_catalog(), ensure_ascii=False).replace("</", "<\\/")
    if served:
        figure = fig.to_json().replace("</", "<\\/")  # the JSON cannot end its <script> element
        chart_div = '<div id="zoom-chart"></div>'
        chart_script = (
            f'<script id="zoom-figure" type="application/json">{figure}</script>'
            f'<script id="catalog" type="application/json">{catalog}</script>'
            + "".join(f'<script src="/static/js/{name}"></script>' for name in _SCRIPTS)
        )
    else:  # a file that opens offline: the same scripts, inline
        html = pio.to_html(fig, include_plotlyjs=False, full_html=False, div_id="zoom-chart", config=_CONFIG)
        split = html.index("<script")
        chart_div = html[:split]
        chart_script = (
            html[split:]
            + f'<script id="catalog" type="application/json">{catalog}</script>'
            + "".join(f"<script>{_static(f'js/{name}')}</script>" for name in _SCRIPTS)
        )
    env = Environment(autoescape=select_autoescape(default_for_string=True, default=True))
    return env.from_string(_PAGE).render(
        z=z,
        samples=_reading_order(z.samples),
        rows=_ROWS,
        headers=_HEADERS,
        fmt=_fmt,
        chart_div=chart_div,
        chart_script=chart_script,
        plotly_js="" if served else get_plotlyjs(),
        plotly_src="/vendor/plotly.min.js" if served else None,
        app_css="" if served else _static("css/app.css"),
        diagram_json=json.dumps(diagram_data(z)),
        instances=_instances(z),
        in_force=in_force(z.record.get("settings") or {}),
    )


_CONFIG = {"displaylogo": False, "responsive": True}


# The console's own scripts, in order: the translation layer, the diagram (web/static/js/diagram.js, reused as it
# is), then the page's (the charts and the diagram's seconds).
_SCRIPTS = ("i18n.js", "diagram.js", "zoom_page.js")


@cache
def _static(name: str) -> str:
    """A file of the console's static folder (the offline page inlines what the served one links)."""
    text = (resources.files("oncallsim.web") / "static" / name).read_text(encoding="utf-8")
    return text.replace("</", "<\\/") if name.endswith(".js") else text


def _diagram_catalog() -> dict[str, Any]:
    """The page catalog the console's scripts read their texts and number formats from (the zoom page is in
    English)."""
    from oncallsim.i18n import page_catalog

    return page_catalog()


def diagram_data(z: ZoomedMinute) -> dict[str, Any]:
    """What the console's diagram shows for the zoomed minute, as a record-like mapping (the fields diagram.js
    reads): the whole minute, and each second. The zoom counts arrivals and requests being served second by
    second; the cache's hit ratio and the database's load are the minute's, and so is the shed share."""
    r, m = z.record, z.measured
    minute: dict[str, Any] = {k: r[k] for k in ("capacity_per_s", "serving", "booting")}
    for key in ("requests_per_s", "admitted_per_s", "shed_per_s", "cache_hit", "utilization", "db_utilization"):
        minute[key] = float(m.get(key, r.get(key, 0.0)))
    offered = minute["requests_per_s"]
    admitted = minute["admitted_per_s"] / offered if offered > 0 else 1.0
    workers = max(1, int(r["serving"])) * z.workers_per_instance
    seconds = [
        {
            **minute,
            "requests_per_s": arrivals,
            "admitted_per_s": arrivals * admitted,
            "shed_per_s": arrivals * (1.0 - admitted),
            "utilization": min(1.0, in_flight / workers),
        }
        for arrivals, in_flight in zip(z.seconds["arrivals"], z.seconds["in_flight"], strict=True)
    ]
    return {"clock": z.clock, "minute": minute, "seconds": seconds}


def _instances(z: ZoomedMinute) -> list[dict[str, Any]]:
    """One square per instance under the fleet's box: its busy share this minute (the level), a title to hover."""
    inst = z.instances
    n = len(inst["served"])
    width = min(10.0, 150.0 / max(n, 1) - 1.0)
    out = []
    for i in range(n):
        busy = inst["busy_s"][i] / (60.0 * z.workers_per_instance)
        bad = bool(inst["bad_build"][i])
        title = f"#{i + 1}: busy {busy:.0%}, {inst['served'][i]:,.0f} answered, {inst['errors'][i]:,.0f} errors" + (
            ", on the bad build" if bad else ""
        )
        level = "hot" if busy >= 1.0 else "warm" if busy >= 0.8 else "calm"
        out.append({"x": 250 + i * (width + 1), "width": width, "level": level, "bad_build": bad, "title": title})
    return out

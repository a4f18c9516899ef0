"""A zoomed minute as one HTML page in the reader's language: served by the console, or a self-contained file
that opens offline (plotly.js inlined). Its sentences are the template's (``templates/zoom.html.j2``, extracted
into the catalogs with the other templates), its chart's words the page catalog's (``chart.zoom.*``,
``series.zoom.*``: translated by the debrief's ``translate_text``), its numbers written the language's way."""

from __future__ import annotations

import functools
import itertools
import json
from functools import cache
from importlib import resources
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio
from jinja2 import Environment, PackageLoader, select_autoescape
from plotly.offline import get_plotlyjs
from plotly.subplots import make_subplots

from oncallsim.debrief.html import translate_text, value_text
from oncallsim.i18n import (
    DEFAULT_LANGUAGE,
    direction,
    format_number,
    format_percent,
    number_formatter,
    number_patterns,
    number_symbols,
    page_catalog,
    translations,
)
from oncallsim.model.request.settings import in_force
from oncallsim.zoom.minute import ZoomedMinute

__all__ = ["IN_FORCE_JOIN", "diagram_data", "render_page", "render_zoom_html", "zoom_figure"]

# The charts' words in English: the page catalog's ``chart.zoom.*`` and ``series.zoom.*`` entries (and the console's
# own "requests", "timeout"), which ``translate_text`` finds them by.
_LINE_LABELS = {
    "arrivals": "arrivals",
    "completed": "answered",
    "errors": "errors",
    "queue": "waiting in the queue",
    "in_flight": "being served",
}
BUSY = "busy %(share)s"  # an instance's busy share (the chart's hover, the diagram's square)


def zoom_figure(z: ZoomedMinute, language: str = DEFAULT_LANGUAGE) -> go.Figure:
    """Latency histogram (p50, p99, p99.9 and the timeout marked), per-second rates and levels, the instances
    side by side; each chart with its own legend and axis titles, in ``language`` (its words and numbers)."""
    say = functools.partial(translate_text, language=language)
    busy_text = translations(language).gettext(BUSY)
    top_ms = z.histogram_edges_ms[-1]
    shows_timeout = z.timeouts > 0 or top_ms >= 0.8 * z.timeout_ms
    titles = tuple(
        say(t)
        for t in (
            "Response times, answered requests",
            "Per second: in, out, errors",
            "Per second: waiting, served",
            "Instances",
        )
    )
    fig = make_subplots(rows=4, cols=1, subplot_titles=titles, vertical_spacing=0.08)
    edges = z.histogram_edges_ms
    width = edges[1] - edges[0]
    centers = [(a + b) / 2 for a, b in itertools.pairwise(edges)]
    fig.add_trace(
        go.Bar(x=centers, y=z.histogram_counts, width=width, name=say(f"requests per {width:g} ms"), legend="legend"),
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
            annotation_text=say(label),
            annotation_yshift=-15 * k,
            row=1,
            col=1,
        )
    fig.update_xaxes(title_text=say("response time, ms"), row=1, col=1)
    fig.update_yaxes(title_text=say("requests"), row=1, col=1)
    seconds = list(range(60))
    for line, color in (("arrivals", "#1f77b4"), ("completed", "#2ca02c"), ("errors", "#d62728")):
        fig.add_trace(
            go.Scatter(x=seconds, y=z.seconds[line], mode="lines", name=say(_LINE_LABELS[line]), line_color=color,
                       legend="legend2"),
            row=2,
            col=1,
        )  # fmt: skip
    for line, color in (("queue", "#ff7f0e"), ("in_flight", "#9467bd")):
        fig.add_trace(
            go.Scatter(x=seconds, y=z.seconds[line], mode="lines", name=say(_LINE_LABELS[line]), line_color=color,
                       legend="legend3"),
            row=3,
            col=1,
        )  # fmt: skip
    for row in (2, 3):
        fig.update_xaxes(title_text=say("second of the minute"), row=row, col=1)
    fig.update_yaxes(title_text=say("requests / s"), row=2, col=1)
    fig.update_yaxes(title_text=say("requests"), row=3, col=1)
    bad_build = say("bad build")
    names = [f"#{i + 1}{' ' + bad_build if bad else ''}" for i, bad in enumerate(z.instances["bad_build"])]
    answered_ok = [s - e for s, e in zip(z.instances["served"], z.instances["errors"], strict=True)]
    shares = [b / (60.0 * z.workers_per_instance) for b in z.instances["busy_s"]]
    busy = [busy_text % {"share": format_percent(share, language)} for share in shares]
    fig.add_trace(
        go.Bar(x=names, y=answered_ok, name=say("answered well"), marker_color="#2ca02c", legend="legend4",
               hovertext=busy),
        row=4,
        col=1,
    )  # fmt: skip
    fig.add_trace(
        go.Bar(x=names, y=z.instances["errors"], name=say("errors"), marker_color="#d62728", legend="legend4",
               hovertext=busy),
        row=4,
        col=1,
    )  # fmt: skip
    fig.update_yaxes(title_text=say("requests"), row=4, col=1)
    layout: dict[str, Any] = {
        "height": 1300,
        "barmode": "stack",
        "margin": {"t": 60, "l": 60, "r": 20, "b": 40},
        "separators": number_symbols(language)["decimal"] + number_symbols(language)["group"],
    }
    for n, row in ((1, 1), (2, 2), (3, 3), (4, 4)):  # each chart's legend at its own top right
        domain = fig.get_subplot(row, 1).yaxis.domain
        layout["legend" if n == 1 else f"legend{n}"] = {
            "x": 1.0, "xanchor": "right", "y": domain[1], "yanchor": "top", "bgcolor": "rgba(255,255,255,0.7)",
        }  # fmt: skip
    fig.update_layout(**layout)
    return fig


# The comparison table's rows (their labels are the template's, translated there).
_ROWS = (
    "requests_per_s",
    "cache_hit",
    "utilization",
    "wait_probability",
    "query_time_ms",
    "error_rate",
    "p50_ms",
    "p99_ms",
    "p999_ms",
    "queue_at_end",
)
_ORDER = {"timeout": 0, "overload": 1, "dropped": 1, "bad_build": 2}
# "In force: a; b; c": the list joined the language's way (Arabic's semicolon is "؛").
IN_FORCE_JOIN = "%(first)s; %(next)s"


def _reading_order(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Errors first, then the slowest answers: what a person scanning the table is looking for."""
    return sorted(samples, key=lambda s: (_ORDER.get(s["outcome"], 3), -s["response_ms"], s["arrival_s"]))


def render_zoom_html(
    z: ZoomedMinute, served: bool = False, language: str = DEFAULT_LANGUAGE, back: str | None = None
) -> str:
    """The page in ``language``: a file that opens offline (plotly.js and the chart's script inline), or, ``served``
    by the console, plotly.js and the page's script from the console and the figure as data (its Content Security
    Policy runs no inline script). ``back``: a link to the run's console (the served page's, in its language)."""
    fig = zoom_figure(z, language)
    catalog = json.dumps(page_catalog(language), ensure_ascii=False).replace("</", "<\\/")
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
    return render_page(
        "zoom.html.j2",
        z,
        language,
        back,
        served,
        samples=_reading_order(z.samples),
        rows=_ROWS,
        fmt=functools.partial(_fmt, language=language),
        num=number_formatter(language),
        chart_div=chart_div,
        chart_script=chart_script,
        plotly_js="" if served else get_plotlyjs(),
        plotly_src="/vendor/plotly.min.js" if served else None,
        diagram_json=json.dumps(diagram_data(z)),
        instances=_instances(z),
        in_force=in_force_text(z.record.get("settings") or {}, language),
    )


def render_page(template: str, z: Any, language: str, back: str | None, served: bool, **fields: Any) -> str:
    """A zoom page (one service's minute or a chain's) from ``template``: what every zoom page's template reads
    (the zoom, the language's direction and numbers, the link back, the console's stylesheet inlined unless the
    console ``served`` it) and the page's own ``fields``; one place, so the two pages cannot drift apart."""
    return (
        _env(language)
        .get_template(template)
        .render(
            z=z,
            language=language,
            direction=direction(language),
            symbols=number_symbols(language),
            patterns=number_patterns(language),
            back=back,
            app_css="" if served else _static("css/app.css"),
            served=served,
            **fields,
        )
    )


@cache
def _env(language: str) -> Environment:
    """The template's environment in ``language``: ``_()`` from its catalog, ``number`` and ``percent`` filters
    writing the language's numbers (Babel), as the console's pages have."""
    env = Environment(
        loader=PackageLoader("oncallsim.zoom", "templates"),
        autoescape=select_autoescape(enabled_extensions=("html", "j2"), default_for_string=True, default=True),
        extensions=["jinja2.ext.i18n"],
    )
    env.install_gettext_translations(translations(language), newstyle=False)  # type: ignore[attr-defined]
    env.filters["number"] = lambda value, digits=0: format_number(value, language, digits)
    env.filters["percent"] = lambda value, digits=0: format_percent(value, language, digits)
    return env


def _fmt(value: Any, language: str = DEFAULT_LANGUAGE) -> str:
    """A value of the comparison table: three decimals under 1, else one."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    return number_formatter(language)(value, 3 if abs(value) < 1 else 1)


def in_force_text(settings: dict[str, Any], language: str = DEFAULT_LANGUAGE) -> str:
    """The request engine's settings in force as one list in ``language`` ("the p2c balancer; FIFO queues"):
    each spec's phrase from the catalog, its value as the console writes it (``value_text``)."""
    gettext = translations(language).gettext
    phrases = in_force(settings, gettext, lambda name, value: value_text(name, value, language))
    if not phrases:
        return ""
    return functools.reduce(lambda first, then: gettext(IN_FORCE_JOIN) % {"first": first, "next": then}, phrases)


_CONFIG = {"displaylogo": False, "responsive": True}


# The console's own scripts, in order: the translation layer, the diagram (web/static/js/diagram.js, reused as it
# is), then the page's (the charts and the diagram's seconds).
_SCRIPTS = ("i18n.js", "diagram.js", "zoom_page.js")


@cache
def _static(name: str) -> str:
    """A file of the console's static folder (the offline page inlines what the served one links)."""
    text = (resources.files("oncallsim.web") / "static" / name).read_text(encoding="utf-8")
    return text.replace("</", "<\\/") if name.endswith(".js") else text


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
    """One square per instance under the fleet's box: its busy share this minute (the level), and what its title
    says (the template writes it in the page's language)."""
    inst = z.instances
    n = len(inst["served"])
    width = min(10.0, 150.0 / max(n, 1) - 1.0)
    out = []
    for i in range(n):
        busy = inst["busy_s"][i] / (60.0 * z.workers_per_instance)
        bad = bool(inst["bad_build"][i])
        level = "hot" if busy >= 1.0 else "warm" if busy >= 0.8 else "calm"
        out.append(
            {
                "x": 250 + i * (width + 1),
                "width": width,
                "level": level,
                "bad_build": bad,
                "n": i + 1,
                "busy": busy,
                "served": inst["served"][i],
                "errors": inst["errors"][i],
            }
        )
    return out

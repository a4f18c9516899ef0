"""The debrief as one self-contained HTML file: works offline (plotly.js inlined, nothing fetched)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache

import plotly.io as pio
from jinja2 import Environment, PackageLoader, select_autoescape
from plotly.offline import get_plotlyjs

from oncallsim.debrief.charts import debrief_figure
from oncallsim.debrief.report import Report
from oncallsim.debrief.scorecard import ObjectiveResult
from oncallsim.model import MODEL_VERSION, MinuteRecord, Params, RunPlan
from oncallsim.simulation import Action

__all__ = ["CAUSE_LABELS", "COMPARISONS", "fmt", "fmt_objective", "render_html"]

COMPARISONS = (
    ("error budget spent", "budget_spent", "pct"),
    ("error budget left", "budget_left", "pct"),
    ("cost", "cost", "usd"),
    ("worst p99", "worst_p99_ms", "ms"),
    ("minutes over the latency target", "minutes_over_latency_target", "int"),
    ("requests shed", "shed_requests", "int"),
    ("first action after the incident", "time_to_first_mitigation_min", "min"),
    ("recovery after the incident", "time_to_recovery_min", "min"),
)


CAUSE_LABELS = {"overload": "overload", "timeout": "timeout", "bad_build": "bad build"}

FORMATS = {
    "pct": "{:.2%}",
    "pct0": "{:.0%}",
    "usd": "${:.2f}",
    "ms": "{:.0f} ms",
    "min": "{:.0f} min",
    "int": "{:,.0f}",
}


def fmt(value: float | int | None, kind: str) -> str:
    return "—" if value is None else FORMATS[kind].format(value)


# How each objective kind's measured value reads.
OBJECTIVE_FORMATS = {
    "budget_left_at_least": "pct",
    "budget_spent_at_most": "pct",
    "cost_at_most": "usd",
    "db_within_capacity": "min",
    "recover_within": "min",
    "turned_away_at_most": "pct",
}


def fmt_objective(o: ObjectiveResult) -> str:
    if o.value is None:
        return "never"
    if o.kind == "p99_within":
        return f"{o.value:.1%} of minutes"
    return fmt(o.value, OBJECTIVE_FORMATS.get(o.kind, "int"))


@cache
def _env() -> Environment:
    # every template escapes (select_autoescape()'s default list does not match "report.html.j2")
    return Environment(
        loader=PackageLoader("oncallsim.debrief", "templates"),
        autoescape=select_autoescape(enabled_extensions=("html", "j2"), default_for_string=True, default=True),
    )


def render_html(
    report: Report,
    timeline: Sequence[MinuteRecord],
    plan: RunPlan,
    params: Params,
    actions: Sequence[Action],
    counterfactuals: Mapping[str, Sequence[MinuteRecord]] | None = None,
) -> str:
    from oncallsim import __version__

    fig = debrief_figure(timeline, params, actions, report.latency_target_ms, counterfactuals)
    html = pio.to_html(
        fig,
        include_plotlyjs=False,
        full_html=False,
        div_id="debrief-chart",
        config={"displaylogo": False, "responsive": True},
    )
    # to_html gives "<div>…</div> <script>…</script>": the div goes where the charts belong, the script after plotly.js
    split = html.index("<script")
    return (
        _env()
        .get_template("report.html.j2")
        .render(
            r=report,
            comparisons=COMPARISONS,
            causes=CAUSE_LABELS,
            fmt=fmt,
            fmt_objective=fmt_objective,
            clock=plan.clock,
            chart_div=html[:split],
            chart_script=html[split:],
            plotly_js=get_plotlyjs(),
            version=__version__,
            model_version=MODEL_VERSION,
        )
    )

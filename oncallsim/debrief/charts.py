"""The debrief's charts as one plotly figure: six panels on a shared time axis (a seventh, goodput against
throughput, for a request-engine run), each with its own legend and its time axis under it; the scenario's events,
the page and the decisions marked with readable labels; the counterfactual lines overlaid in styles of their own,
named as the comparison table names them. Pure: returns a figure, writes nothing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from oncallsim.debrief.report import COUNTERFACTUAL_LABELS
from oncallsim.debrief.summary import describe
from oncallsim.model import MinuteRecord, Params
from oncallsim.model.placeholders import fill
from oncallsim.model.plan import time_label
from oncallsim.simulation import Action

__all__ = ["DECISIONS", "PANELS", "REQUEST_PANELS", "debrief_figure"]

PANELS = (
    "Requests vs capacity (req/s)",
    "p99 latency vs target (ms)",
    "Burn rate (×), page at ⟪page_burn_threshold⟫×",
    "Error budget left (%)",
    "Cache hit and DB utilization (%)",
    "Fleet (instances) and cost ($/h)",
)
# A request-engine run's records also say what its retries cost: the answers that were useful against all sent
REQUEST_PANELS = ("Goodput vs throughput (req/s)",)
# A chain's run (its records carry each service's measures): the first panel is each service's saturation, not one
# fleet's capacity, and the fifth each service's p99, not a cache and a database it does not have; the console's
# charts say the same words (page.json ``chart.saturation``, ``chart.services``: translated as theirs)
CHAIN_PANELS = {
    0: "Each service's utilization: workers busy (%)",
    4: "Each service's p99 vs the clients' deadline (ms)",
}
SERVICE_COLORS = ("#1d4ed8", "#b91c1c", "#15803d", "#a16207", "#7c3aed", "#0891b2", "#be185d", "#475569")
# (colour, dash): neither is the run's solid line nor the other's pattern
COUNTERFACTUAL_STYLE = {
    "hands-off": ("#9a3412", "dash"),
    "textbook": ("#166534", "dashdot"),
    "p2c": ("#6d28d9", "longdash"),
    **{mechanism: ("#0e7490", "longdashdot") for mechanism in COUNTERFACTUAL_LABELS},  # one is kept at most
}
# The run's own events marked on every panel, with their colours (decisions are marked in slate).
MARKED_EVENTS = {"deploy_started": "#64748b", "cache_flushed": "#64748b", "page_fired": "#b91c1c"}
# The decisions' traces (one per panel): their name, and their colour
DECISIONS = "decisions"
DECISION_COLOR = "#334155"


def axis_labels(timeline: Sequence[MinuteRecord]) -> list[str]:
    """The time axis: the records' clocks, with the day when the run is longer than one (else clocks repeat)."""
    if not timeline:
        return []
    hours, minutes = timeline[0].clock.split(":")
    start = int(hours) * 60 + int(minutes) - timeline[0].minute
    days = timeline[-1].minute >= 1440
    return [time_label(start, r.minute, days) for r in timeline]


def axis(letter: str, row: int) -> str:
    """A panel's axis as a trace or a shape names it: "x", "x2", …"""
    return letter if row == 1 else f"{letter}{row}"


def decision_marks(fig: go.Figure, x: Sequence[str], actions: Sequence[Action], rows: int) -> None:
    """The operator's decisions, one trace per panel, so the figure's size grows with the action minutes, never its
    cost with their square: a dotted line at each action minute across the panel (on a hidden axis of its own
    overlaying the panel's, from 0 to 1) and a ▼ at its top, what was done at that minute on hover."""
    said: dict[int, list[str]] = {}
    for a in actions:
        if a.minute < len(x):
            said.setdefault(a.minute, []).append(describe(a))
    if not said:
        return
    xs: list[str | None] = []
    ys: list[float | None] = []
    texts: list[str] = []
    sizes: list[int] = []
    for minute in sorted(said):
        label = ", ".join(said[minute])
        xs += [x[minute], x[minute], None]
        ys += [1.0, 0.0, None]
        texts += [label, label, ""]
        sizes += [8, 0, 0]
    for row in range(1, rows + 1):
        overlay = rows + row  # the hidden axes come after the panels' own
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                text=texts,
                name=DECISIONS,
                meta=DECISIONS,
                mode="lines+markers",
                line={"color": DECISION_COLOR, "width": 1, "dash": "dot"},
                marker={"symbol": "triangle-down", "size": sizes, "color": DECISION_COLOR},
                hovertemplate="▼ %{x}: %{text}<extra></extra>",  # its own minute: a hover near it shows it too
                cliponaxis=False,
                connectgaps=False,
                showlegend=False,
                legend="legend" if row == 1 else f"legend{row}",
                xaxis=axis("x", row),
                yaxis=f"y{overlay}",
            )
        )
        fig.layout[f"yaxis{overlay}"] = {
            "overlaying": axis("y", row),
            "anchor": axis("x", row),
            "range": [0, 1],
            "visible": False,
            "fixedrange": True,
        }


def chain_services(timeline: Sequence[MinuteRecord]) -> list[str]:
    """A chain run's services, in the order its records list them (none for one service)."""
    for r in timeline:
        graph = (r.extras or {}).get("graph")
        if isinstance(graph, dict) and isinstance(graph.get("services"), dict):
            return list(graph["services"])
    return []


def service_value(record: MinuteRecord, service: str, name: str) -> float | None:
    """One service's measure in a chain's record (None when the minute had none, as a p99 with no answer)."""
    value = (((record.extras or {}).get("graph") or {}).get("services") or {}).get(service, {}).get(name)
    return None if value is None else float(value)


def percent(share: float | None) -> float | None:
    return None if share is None else 100.0 * share


def debrief_figure(
    timeline: Sequence[MinuteRecord],
    params: Params,
    actions: Sequence[Action] = (),
    latency_target_ms: float = 1000.0,
    counterfactuals: Mapping[str, Sequence[MinuteRecord]] | None = None,
    deadline_ms: float | None = None,
) -> go.Figure:
    """The figure; ``deadline_ms`` is a chain's clients' deadline (its graph's), drawn under its services' p99."""
    request = any(r.engine == "request" for r in timeline)
    services = chain_services(timeline)
    panels = tuple(CHAIN_PANELS.get(i, title) if services else title for i, title in enumerate(PANELS))
    panels += REQUEST_PANELS if request else ()
    titles = [fill(title, params) for title in panels]
    spacing = 0.05 * len(PANELS) / len(panels)
    fig = make_subplots(rows=len(panels), cols=1, shared_xaxes=True, subplot_titles=titles, vertical_spacing=spacing)
    x = axis_labels(timeline)

    def goodput(records: Sequence[MinuteRecord]) -> list[float]:
        return [r.extra("goodput_per_s") or 0.0 for r in records]

    def line(
        row: int, y: Sequence[float | None], name: str, color: str, dash: str = "solid", group: str = "run"
    ) -> None:
        fig.add_trace(
            go.Scatter(
                x=x[: len(y)],
                y=y,
                name=name,
                mode="lines",
                line={"color": color, "dash": dash, "width": 2},
                legendgroup=group,
                legend="legend" if row == 1 else f"legend{row}",
            ),
            row=row,
            col=1,
        )

    if services:
        for k, name in enumerate(services):
            color = SERVICE_COLORS[k % len(SERVICE_COLORS)]
            line(1, [percent(service_value(r, name, "utilization")) for r in timeline], name, color)
            line(5, [service_value(r, name, "p99_ms") for r in timeline], name, color)
        line(1, [100.0] * len(timeline), "all workers busy", "#111827", "dash")
        if deadline_ms is not None:
            line(5, [deadline_ms] * len(timeline), "deadline", "#111827", "dash")
    else:
        line(1, [r.requests_per_s for r in timeline], "requests", "#1d4ed8")
        line(1, [r.capacity_per_s for r in timeline], "capacity", "#64748b", "dot")
    line(2, [r.p99_ms for r in timeline], "p99", "#7c3aed")
    line(2, [latency_target_ms] * len(timeline), "latency target", "#94a3b8", "dash")
    if not services:  # a chain's clients wait its graph's deadline, not the one service's timeout
        line(2, [params.timeout_s * 1000.0] * len(timeline), "timeout", "#b91c1c", "dot")
    elif deadline_ms is not None:
        line(2, [deadline_ms] * len(timeline), "deadline", "#b91c1c", "dot")
    line(3, [r.burn_1h for r in timeline], "burn 1 h", "#b91c1c")
    line(3, [r.burn_5m for r in timeline], "burn 5 min", "#f97316", "dot")
    line(
        3,
        [params.page_burn_threshold] * len(timeline),
        f"page threshold {params.page_burn_threshold:g}×",
        "#111827",
        "dash",
    )
    line(4, [100 * r.budget_left for r in timeline], "budget left", "#0f766e")
    if not services:
        line(5, [100 * r.cache_hit for r in timeline], "cache hit", "#0891b2")
        line(5, [100 * r.db_utilization for r in timeline], "DB utilization", "#a16207")
    line(6, [float(r.serving) for r in timeline], "serving", "#1d4ed8")
    line(6, [float(r.booting) for r in timeline], "booting", "#93c5fd", "dot")
    line(6, [r.cost_per_hour for r in timeline], "cost $/h", "#15803d", "dash")
    if request:
        line(7, goodput(timeline), "goodput", "#15803d")
        line(7, [r.extra("completed_per_s") or 0.0 for r in timeline], "throughput", "#475569", "dot")

    for name, other in (counterfactuals or {}).items():
        color, dash = COUNTERFACTUAL_STYLE.get(name, ("#6b7280", "longdash"))
        label = COUNTERFACTUAL_LABELS.get(name, name)  # "with CoDel", as the comparison table heads it
        line(2, [r.p99_ms for r in other], f"p99 ({label})", color, dash, name)
        line(3, [r.burn_1h for r in other], f"burn 1 h ({label})", color, dash, name)
        line(4, [100 * r.budget_left for r in other], f"budget left ({label})", color, dash, name)
        line(6, [float(r.serving) for r in other], f"serving ({label})", color, dash, name)
        if request:
            line(7, goodput(other), f"goodput ({label})", color, dash, name)

    marks: list[tuple[int, str, str]] = []  # (minute, label, colour)
    for r in timeline:
        for e in r.events:
            code = getattr(e, "code", "")
            if code in MARKED_EVENTS:
                marks.append((r.minute, str(e), MARKED_EVENTS[code]))
    # The run's events: a dotted line across every panel and a label at the top (a few a run). Built as one list
    # and set at once: plotly's add_vline/add_annotation re-validate every shape so far, a cost in the square.
    shapes = [
        {
            "type": "line",
            "xref": axis("x", row),
            "yref": f"{axis('y', row)} domain",
            "x0": x[minute],
            "x1": x[minute],
            "y0": 0,
            "y1": 1,
            "line": {"color": color, "width": 1, "dash": "dot"},
        }
        for minute, _, color in marks
        for row in range(1, len(panels) + 1)
    ]
    notes = [
        {
            "x": x[minute],
            "y": 1.0,
            "yref": "paper",
            "text": "▼ " + label,
            "showarrow": False,
            "font": {"size": 10, "color": color},
            "textangle": -90,
            "xanchor": "right",
            "yanchor": "top",
        }
        for minute, label, color in marks
    ]
    fig.update_layout(shapes=shapes, annotations=[*fig.layout.annotations, *notes])
    decision_marks(fig, x, actions, len(panels))
    fig.update_xaxes(nticks=16, showticklabels=True)  # the time axis under each panel, not only the last
    if services:  # as the console's: a slow leaf's tens of ms stay apart from a filled entry's minutes
        fig.update_yaxes(type="log", row=5, col=1)
    legends = {}
    for row in range(1, len(panels) + 1):
        top = fig.layout[f"yaxis{'' if row == 1 else row}"].domain[1]
        legends["legend" if row == 1 else f"legend{row}"] = {
            "x": 1.01,
            "y": top,
            "yanchor": "top",
            "font": {"size": 10},
        }
    fig.update_layout(
        height=1600 * len(panels) // len(PANELS),
        margin={"l": 60, "r": 20, "t": 40, "b": 40},
        template="plotly_white",
        hovermode="x unified",
        **legends,
    )
    return fig

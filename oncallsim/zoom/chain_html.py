"""A zoomed chain minute as one HTML page in the reader's language (``templates/zoom_chain.html.j2``): the attempts
per service, the requests (failed first, then the slowest), and a waterfall per request. Drawn as SVG on the
server, with no script: the served page and the offline file are the same page (the console's stylesheet linked
or inlined), and the console's Content Security Policy has nothing to allow."""

from __future__ import annotations

import functools
from typing import Any

from oncallsim.i18n import DEFAULT_LANGUAGE, number_formatter
from oncallsim.zoom.chain import OUTCOMES, ChainZoom

__all__ = ["WATERFALLS", "render_chain_zoom_html", "waterfall"]

WATERFALLS = 30  # requests drawn (the first in reading order); the rest are in the list
COLORS = {
    "ok": "#2ca02c",
    "failed": "#d62728",
    "refused": "#9467bd",
    "timed out": "#ff7f0e",
    "cancelled": "#7f7f7f",
    "open": "#1f77b4",
}
_ORDER = {"timed out": 0, "failed": 1, "refused": 1, "cancelled": 2, "open": 3, "ok": 4}
LABEL_W, BAR_W, ROW_H = 190.0, 560.0, 16.0


def reading_order(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Failed requests first (timed out, then error answers), then the slowest."""
    return sorted(requests, key=lambda r: (_ORDER.get(r["outcome"], 5), -(r["latency_ms"] or 0.0), r["number"]))


def waterfall(request: dict[str, Any], deadline_ms: float) -> dict[str, Any]:
    """A request's waterfall in SVG units: a row per span (depth-first, a child under its parent), the caller's
    wait as a thin line (sent → its caller done waiting), the attempt at its service as a bar (arrived → done:
    lighter while queued), the clients' deadline as a line."""
    spans = request["spans"]
    children: dict[Any, list[dict[str, Any]]] = {}
    for s in spans:
        children.setdefault(s["parent"], []).append(s)
    ordered: list[dict[str, Any]] = []

    def walk(parent: Any) -> None:
        for s in sorted(children.get(parent, []), key=lambda s: (s["sent_ms"], s["id"])):
            ordered.append(s)
            walk(s["id"])

    walk(None)
    ends = [v for s in spans for v in (s["end_ms"], s["caller_end_ms"], s["sent_ms"]) if v is not None]
    top = max([deadline_ms, *ends]) * 1.05 or 1.0
    scale = BAR_W / top

    def x(ms: float | None, fallback: float) -> float:
        return LABEL_W + scale * (fallback if ms is None else ms)

    rows = []
    for k, s in enumerate(ordered):
        y = 20.0 + k * ROW_H
        arrived = s["arrived_ms"]
        start = s["start_ms"]
        end = s["end_ms"] if s["end_ms"] is not None else top
        caller_end = s["caller_end_ms"] if s["caller_end_ms"] is not None else top
        rows.append(
            {
                "span": s,
                "y": y,
                "indent": 6.0 + 12.0 * s["depth"],
                "line_x1": x(s["sent_ms"], 0.0),
                "line_x2": x(caller_end, top),
                "queue_x": x(arrived, s["sent_ms"]),
                "queue_w": max(0.0, scale * ((start if start is not None else end) - (arrived or s["sent_ms"]))),
                "bar_x": x(start, end) if arrived is not None else x(s["sent_ms"], 0.0),
                "bar_w": max(1.0, scale * (end - start)) if start is not None else 0.0,
                "color": COLORS.get(s["outcome"], "#444"),
            }
        )
    ticks = []
    step = _tick_step(top)
    t = 0.0
    while t <= top:
        ticks.append({"x": x(t, 0.0), "ms": t})
        t += step
    return {
        "rows": rows,
        "height": 36.0 + len(rows) * ROW_H,
        "width": LABEL_W + BAR_W + 10.0,
        "deadline_x": x(deadline_ms, 0.0),
        "ticks": ticks,
    }


def _tick_step(top: float) -> float:
    for step in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000):
        if top / step <= 8:
            return float(step)
    return 100000.0


def service_bars(z: ChainZoom) -> list[dict[str, Any]]:
    """Each service's spans as one stacked bar by outcome (the width of the widest service's total)."""
    widest = max([z.counts[name]["spans"] for name in z.services] + [1])
    bars = []
    for name in z.services:
        c = z.counts[name]
        x = 0.0
        parts = []
        for outcome in OUTCOMES:
            w = 300.0 * c[outcome] / widest
            if w > 0:
                parts.append({"x": x, "w": w, "color": COLORS[outcome], "outcome": outcome, "n": c[outcome]})
            x += w
        bars.append({"name": name, "parts": parts})
    return bars


def render_chain_zoom_html(
    z: ChainZoom, served: bool = False, language: str = DEFAULT_LANGUAGE, back: str | None = None
) -> str:
    """The page in ``language``; ``served`` by the console (its stylesheet linked) or a file that opens offline
    (inlined). ``back``: a link to the run's console."""
    from oncallsim.zoom.html import render_page

    ordered = reading_order(z.requests)
    return render_page(
        "zoom_chain.html.j2",
        z,
        language,
        back,
        served,
        requests=ordered,
        waterfalls=[(r, waterfall(r, z.deadline_ms)) for r in ordered[:WATERFALLS]],
        bars=service_bars(z),
        colors=COLORS,
        outcomes=OUTCOMES,
        num=functools.partial(_num, language=language),
    )


def _num(value: float | None, digits: int = 1, language: str = DEFAULT_LANGUAGE) -> str:
    return "–" if value is None else number_formatter(language)(value, digits)

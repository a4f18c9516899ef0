"""What ``oncallsim cliff`` writes: the runs and the points as Parquet, the map as an offline HTML page (plotly.js
inlined, no CDN) and as a PNG (matplotlib), for one or two axes (more: the Parquet files only)."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from oncallsim.batch.cliff_map import CONFIG_KEY, OUTCOMES, MapPlan, PointResult
from oncallsim.extras import require

__all__ = ["CLASS_COLOURS", "map_html", "map_png", "points_path", "write_points", "write_runs"]

CLASS_ORDER = ("stable", "mixed", "metastable", "unstable")
CLASS_COLOURS = {"stable": "#15803d", "mixed": "#d97706", "metastable": "#b91c1c", "unstable": "#4c1d95"}
CHAIN_SYMBOLS = {
    "stable": "circle-open",
    "mixed": "diamond-open",
    "metastable": "x-thin-open",
    "unstable": "square-open",
}
CHAIN_MARKERS = {"stable": "o", "mixed": "D", "metastable": "x", "unstable": "s"}


def points_path(out: Path) -> Path:
    """Where the points go beside the runs: ``map.parquet`` → ``map-points.parquet``."""
    return out.with_name(f"{out.stem}-points{out.suffix}")


def _write(path: Path, columns: dict[str, Any], config: dict[str, Any]) -> None:
    require("pyarrow", "sweep")  # a missing extra: one line naming it
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({k: pa.array(list(v) if v.dtype == object else v) for k, v in columns.items()})
    table = table.replace_schema_metadata({CONFIG_KEY: json.dumps(config).encode()})
    tmp = path.with_name(path.name + ".part")
    pq.write_table(table, tmp)
    tmp.replace(path)


def write_runs(out: Path, runs: dict[str, Any], config: dict[str, Any]) -> None:
    """One row per run: its point (number and values), seed, outcome, recovery minutes, minutes run, budget."""
    _write(out, runs, config)


def write_points(out: Path, results: Sequence[PointResult], config: dict[str, Any]) -> Path:
    """One row per point: its values, class, runs by outcome, recovery p10/p50/p90, where it stands and the
    chain's prediction (recovery in minutes; ∞ never)."""
    path = points_path(out)
    columns: dict[str, Any] = {"point": np.array([r.number for r in results], dtype=np.int64)}
    for name in results[0].values if results else ():
        values = [r.values[name] for r in results]
        columns[f"grid_{name}"] = np.array(values, dtype=object if isinstance(values[0], str) else None)
    columns["class"] = np.array([r.cls for r in results], dtype=object)
    for outcome in OUTCOMES:
        columns[f"runs_{outcome}"] = np.array([r.counts[outcome] for r in results], dtype=np.int64)
    for q in (10, 50, 90):
        columns[f"recovery_p{q}_min"] = np.array(
            [float(np.percentile(r.recovery_min, q)) if r.recovery_min else math.nan for r in results]
        )
    columns["arrivals_per_s"] = np.array([r.operating.arrivals_per_s for r in results])
    columns["capacity_per_s"] = np.array([r.operating.capacity_per_s for r in results])
    columns["trigger_capacity_per_s"] = np.array([r.operating.trigger_capacity_per_s for r in results])
    columns["load"] = np.array([r.operating.load for r in results])
    columns["amplified_load"] = np.array([r.amplified for r in results])
    columns["zone"] = np.array([r.zone for r in results], dtype=object)
    columns["chain_class"] = np.array([r.chain.cls or "" for r in results], dtype=object)
    columns["chain_recovery_min"] = np.array([r.chain.recovery_s / 60.0 for r in results])
    columns["chain_recovery_sd_min"] = np.array([r.chain.recovery_sd_s / 60.0 for r in results])
    columns["chain_backlog"] = np.array([r.chain.backlog for r in results])
    columns["chain_collapse_s"] = np.array([r.chain.collapse_s for r in results])
    columns["chain_states"] = np.array([r.chain.states for r in results], dtype=np.int64)
    _write(path, columns, config)
    return path


def _axes(plan: MapPlan) -> tuple[str, list[Any], str | None, list[Any]]:
    names = list(plan.spec.vary)
    if len(names) > 2:
        raise ValueError("a map of one or two axes")
    x = names[0]
    y = names[1] if len(names) > 1 else None
    return x, plan.spec.vary[x], y, plan.spec.vary[y] if y else [""]


def _grid_of(plan: MapPlan, results: Sequence[PointResult], value: Any) -> np.ndarray[Any, Any]:
    """A (y, x) array of ``value(result)`` in the axes' order."""
    x, xs, y, ys = _axes(plan)
    out = np.empty((len(ys), len(xs)), dtype=object)
    for r in results:
        i = ys.index(r.values[y]) if y else 0
        out[i, xs.index(r.values[x])] = value(r)
    return out


def _numeric(values: Sequence[Any]) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def _summary(r: PointResult) -> str:
    counts = ", ".join(f"{r.counts[o]} {o}" for o in OUTCOMES if r.counts[o])
    times = " / ".join(f"{np.percentile(r.recovery_min, q):.0f}" for q in (10, 50, 90)) if r.recovery_min else "—"
    chain = r.chain.cls or "not modelled"
    mean = "never" if math.isinf(r.chain.recovery_s) else f"{r.chain.recovery_s / 60:.1f} min"
    return (
        f"{r.cls}: {counts}<br>recovery p10/p50/p90: {times} min<br>λ/cμ {r.operating.load:.2f}, "
        f"λA/cμ {r.amplified:.2f} ({r.zone})<br>chain: {chain}, recovery {mean}"
    )


def map_html(plan: MapPlan, results: Sequence[PointResult], title: str) -> str:
    """The map as an offline page: the classes by cell, the chain's class as a marker in each, the line where
    λA = cμ (numeric axes), and the runs' median recovery beside it; every number in the hover."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    x, xs, y, ys = _axes(plan)
    classes = _grid_of(plan, results, lambda r: CLASS_ORDER.index(r.cls))
    hover = _grid_of(plan, results, _summary)
    xlab = [str(v) for v in xs]
    ylab = [str(v) for v in ys]
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=("class of the runs (cells), the chain's (markers)", "runs' median recovery, minutes"),
        horizontal_spacing=0.12,
    )
    scale = []
    for k, cls in enumerate(CLASS_ORDER):
        lo, hi = k / len(CLASS_ORDER), (k + 1) / len(CLASS_ORDER)
        scale += [[lo, CLASS_COLOURS[cls]], [hi, CLASS_COLOURS[cls]]]
    fig.add_trace(
        go.Heatmap(
            x=xlab, y=ylab, z=classes.astype(float), zmin=-0.5, zmax=len(CLASS_ORDER) - 0.5, colorscale=scale,
            text=hover, hovertemplate="%{text}<extra></extra>", showscale=False, xgap=1, ygap=1,
        ),
        row=1, col=1,
    )  # fmt: skip
    for cls in CLASS_ORDER:
        mine = [r for r in results if r.chain.cls == cls]
        if mine:
            fig.add_trace(
                go.Scatter(
                    x=[str(r.values[x]) for r in mine], y=[str(r.values[y]) if y else "" for r in mine],
                    mode="markers", name=f"chain: {cls}", hoverinfo="skip",
                    marker={"symbol": CHAIN_SYMBOLS[cls], "size": 9, "color": "white", "line": {"width": 2}},
                ),
                row=1, col=1,
            )  # fmt: skip
    for cls in CLASS_ORDER:  # the legend of the cells' colours
        fig.add_trace(
            go.Scatter(
                x=[None], y=[None], mode="markers", name=f"runs: {cls}",
                marker={"symbol": "square", "size": 12, "color": CLASS_COLOURS[cls]},
            ),
            row=1, col=1,
        )  # fmt: skip
    if y and _numeric(xs) and _numeric(ys) and len(xs) > 1 and len(ys) > 1:
        amplified = _grid_of(plan, results, lambda r: r.amplified).astype(float)
        fig.add_trace(
            go.Contour(
                x=xlab, y=ylab, z=amplified, showscale=False, name="λA = cμ", showlegend=True, hoverinfo="skip",
                contours={"start": 1.0, "end": 1.0, "size": 1.0, "coloring": "lines"},
                line={"color": "black", "width": 2, "dash": "dash"},
            ),
            row=1, col=1,
        )  # fmt: skip
    medians = _grid_of(plan, results, lambda r: float(np.median(r.recovery_min)) if r.recovery_min else math.nan)
    fig.add_trace(
        go.Heatmap(
            x=xlab, y=ylab, z=medians.astype(float), text=hover, hovertemplate="%{text}<extra></extra>",
            colorscale="Viridis", colorbar={"title": "min", "x": 1.02}, xgap=1, ygap=1,
        ),
        row=1, col=2,
    )  # fmt: skip
    for col in (1, 2):
        fig.update_xaxes(title_text=x, type="category", row=1, col=col)
        fig.update_yaxes(title_text=y or "", type="category", row=1, col=col)
    fig.update_layout(title=title, height=620, template="plotly_white", legend={"orientation": "h", "y": -0.18})
    html: str = fig.to_html(include_plotlyjs=True, full_html=True)
    return html


def map_png(plan: MapPlan, results: Sequence[PointResult], path: Path, title: str) -> None:
    """The map's left panel as a PNG: the classes, the chain's markers, the line where λA = cμ."""
    require("matplotlib", "reports")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    x, xs, y, ys = _axes(plan)
    classes = _grid_of(plan, results, lambda r: CLASS_ORDER.index(r.cls)).astype(float)
    fig, ax = plt.subplots(figsize=(8.6, 5.6 if y else 2.4))
    ax.imshow(
        classes, origin="lower", aspect="auto", cmap=ListedColormap([CLASS_COLOURS[c] for c in CLASS_ORDER]),
        vmin=-0.5, vmax=len(CLASS_ORDER) - 0.5, interpolation="nearest",
    )  # fmt: skip
    for cls in CLASS_ORDER:
        mine = [r for r in results if r.chain.cls == cls]
        if mine:
            filled: dict[str, Any] = (
                {"color": "white"} if cls == "metastable" else {"facecolors": "none", "edgecolors": "white"}
            )
            ax.scatter(
                [xs.index(r.values[x]) for r in mine],
                [ys.index(r.values[y]) if y else 0 for r in mine],
                marker=CHAIN_MARKERS[cls], s=36, linewidths=1.4, **filled,
            )  # fmt: skip
    if y and _numeric(xs) and _numeric(ys) and len(xs) > 1 and len(ys) > 1:
        amplified = _grid_of(plan, results, lambda r: r.amplified).astype(float)
        ax.contour(np.arange(len(xs)), np.arange(len(ys)), amplified, levels=[1.0], colors="black", linestyles="--")
    ax.set_xticks(range(len(xs)), [f"{v:g}" if _numeric([v]) else str(v) for v in xs], rotation=45, fontsize=7)
    ax.set_yticks(range(len(ys)), [f"{v:g}" if _numeric([v]) else str(v) for v in ys] if y else [""], fontsize=7)
    ax.set_xlabel(x)
    ax.set_ylabel(y or "")
    ax.set_title(title, fontsize=9)
    handles: list[Any] = [Patch(color=CLASS_COLOURS[c], label=f"runs: {c}") for c in CLASS_ORDER]
    handles += [
        Line2D(
            [], [], marker=CHAIN_MARKERS[c], color="grey", linestyle="none", markerfacecolor="none", label=f"chain: {c}"
        )
        for c in CLASS_ORDER
    ]
    handles.append(Line2D([], [], color="black", linestyle="--", label="λA = cμ"))
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=90, metadata={"Software": None})
    plt.close(fig)

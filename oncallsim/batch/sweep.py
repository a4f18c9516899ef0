"""Sweeps: every grid point × N seeds, in chunks, on local worker processes or a Dask cluster, into Parquet.

Durability. Each finished chunk becomes a closed Parquet file in ``OUT.parts/`` (written under a temporary name,
then renamed), so a kill — SIGKILL included — keeps every finished chunk. At the end, and also on Ctrl-C or
SIGTERM, the parts are merged into the single file ``OUT`` and the folder is removed. ``OUT`` records the
sweep's whole configuration in its metadata (as does ``OUT.parts/_sweep.json`` while the sweep runs);
``resume`` refuses a different configuration and runs only the seeds that have no row yet.

Memory stays flat in the seed count: chunks are generated lazily and only a few are in flight at a time.
Local workers start once per sweep — on Linux as forks of the sweep's process (nothing to import again), elsewhere
as fresh ``python`` processes that import once — take one chunk at a time over a pipe, send back only the summary
rows (as typed arrays) and die with their parent (``PR_SET_PDEATHSIG`` on Linux, a watch on the parent
elsewhere); no multiprocessing resource tracker is started.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from oncallsim.batch.executors import DaskExecutor, LocalExecutor, stop_on_signals
from oncallsim.batch.sweep_output import (
    CONFIG_FILE,
    CONFIG_KEY,
    check_output,
    merge_parts,
    open_parts,
    part_files,
    parts_dir,
    read_config,
    write_part,
)
from oncallsim.batch.sweep_plan import SweepPlan, SweepSpec, Task, parse_grid, plan_sweep, run_task
from oncallsim.extras import require
from oncallsim.model import InvalidInput

__all__ = [
    "DaskExecutor",
    "LocalExecutor",
    "SweepPlan",
    "SweepSpec",
    "Task",
    "aggregate",
    "check_output",
    "distribution_html",
    "parse_grid",
    "parts_dir",
    "plan_sweep",
    "rows_in",
    "run_task",
    "stop_on_signals",
    "sweep",
    "sweep_frame",
]


def sweep(
    spec: SweepSpec,
    executor: LocalExecutor | DaskExecutor,
    out: Path,
    resume: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Run the sweep into ``out``; returns the rows in the file. Ctrl-C (KeyboardInterrupt) keeps every finished
    chunk: they are merged into ``out`` before the exception goes on; after a kill they wait in ``out.parts/``."""
    plan = plan_sweep(spec)
    state = check_output(plan, out, resume)
    workers = getattr(executor, "workers", 1)
    remaining = plan.remaining(state.done)
    size = plan.chunk_size(remaining, workers)
    tasks: dict[int, Task] = {}

    def planned() -> Iterator[Task]:
        for task in plan.tasks(state.done, size):
            tasks[task.index] = task
            yield task

    if remaining == 0 and out.is_file() and not state.parts.exists():
        return state.rows  # nothing left to run: the file stays as it is
    open_parts(state, plan.config)
    metadata = {CONFIG_KEY: json.dumps(plan.config).encode()}
    schema: Any = None
    finished = 0
    results = executor.map_unordered(planned())
    try:
        if progress is not None:
            progress(0, remaining)
        for index, columns in results:
            import pyarrow as pa  # here, once the workers have their chunks: it imports pandas (~0.3 s)

            table = pa.table(columns)
            if schema is None:
                schema = table.schema.with_metadata(metadata)
            table = table.replace_schema_metadata(metadata).cast(schema)
            write_part(state.parts, tasks.pop(index, None), index, table)
            finished += table.num_rows
            if progress is not None:
                progress(finished, remaining)
    finally:
        results.close()  # local workers end here, before the merge
        rows = merge_parts(out, state.parts, plan.config)
    return rows


def rows_in(out: Path) -> int:
    """Rows kept for ``out``: in the file, or in its parts after a kill."""
    import pyarrow.parquet as pq

    if out.is_file():
        return int(pq.read_metadata(out).num_rows)
    return sum(int(pq.read_metadata(p).num_rows) for p in part_files(parts_dir(out)))


def sweep_frame(path: str | Path) -> Any:
    """A sweep's rows as a ``pandas.DataFrame`` (the ``notebook`` extra): the Parquet file, or the finished chunks
    of a sweep still running or killed (its ``.parts`` folder); the sweep's configuration (scenario, policy, grid,
    seeds, model version) in ``DataFrame.attrs["sweep"]``."""
    require("pandas", "notebook")
    pq = require("pyarrow.parquet", "sweep")
    out = Path(path)
    if out.is_file():
        frame = pq.read_table(out).to_pandas()
        frame.attrs["sweep"] = read_config(out)
        return frame
    parts = out if out.is_dir() else parts_dir(out)
    files = part_files(parts)
    if not files:
        raise InvalidInput(str(out), "no sweep here: neither its Parquet file nor a folder of its finished chunks")
    frame = pq.ParquetDataset(files).read().to_pandas()
    frame.attrs["sweep"] = json.loads((parts / CONFIG_FILE).read_text(encoding="utf-8"))
    return frame


def aggregate(path: Path, grid_names: Sequence[str]) -> list[dict[str, Any]]:
    """Per grid point: runs, p10/p50/p90 of budget spent, cost and worst p99, and the share of runs passing."""
    import pyarrow.parquet as pq

    metrics = ("budget_spent", "cost", "worst_p99_ms")
    keys = [f"grid_{n}" for n in grid_names]
    table = pq.read_table(path, columns=[*keys, *metrics, "passed", "objectives_passed", "objectives_total"])
    points = [tuple(row) for row in zip(*(table.column(k).to_pylist() for k in keys), strict=True)]
    groups: dict[tuple[Any, ...], list[int]] = {}
    if keys:
        for i, key in enumerate(points):
            groups.setdefault(key, []).append(i)
    elif table.num_rows:
        groups[()] = list(range(table.num_rows))
    columns = {name: table.column(name).to_numpy(zero_copy_only=False) for name in table.column_names}
    out = []
    for key, members in sorted(groups.items()):
        index = np.asarray(members)
        summary: dict[str, Any] = dict(zip(grid_names, key, strict=True))
        summary["runs"] = len(members)
        for metric in metrics:
            values = columns[metric][index].astype(np.float64)
            values = values[~np.isnan(values)]
            for q in (0.1, 0.5, 0.9):
                summary[f"{metric}_p{int(q * 100)}"] = float(np.quantile(values, q)) if len(values) else math.nan
        summary["passed_share"] = float(columns["passed"][index].astype(bool).mean())
        summary["objectives_met_share"] = float(columns["objectives_passed"][index].sum()) / max(
            1, int(columns["objectives_total"][index].sum())
        )
        out.append(summary)
    return out


def distribution_html(path: Path, grid_names: Sequence[str], title: str) -> str:
    """An offline HTML page (plotly.js inlined) with the distributions of budget spent, cost and worst p99."""
    import plotly.graph_objects as go
    import pyarrow.parquet as pq
    from plotly.subplots import make_subplots

    metrics = (("budget_spent", "error budget spent"), ("cost", "cost ($)"), ("worst_p99_ms", "worst p99 (ms)"))
    keys = [f"grid_{n}" for n in grid_names]
    rows = pq.read_table(path, columns=[*keys, *(m[0] for m in metrics)]).to_pylist()
    fig = make_subplots(rows=1, cols=3, subplot_titles=[m[1] for m in metrics])
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        label = ", ".join(f"{n}={r[f'grid_{n}']}" for n in grid_names) or "all runs"
        groups.setdefault(label, []).append(r)
    for col, (metric, _) in enumerate(metrics, start=1):
        for label, group in sorted(groups.items()):
            fig.add_trace(
                go.Box(
                    y=[g[metric] for g in group], name=label, boxpoints=False, showlegend=col == 1, legendgroup=label
                ),
                row=1,
                col=col,
            )
    fig.update_layout(title=title, height=560, template="plotly_white")
    html: str = fig.to_html(include_plotlyjs=True, full_html=True)
    return html

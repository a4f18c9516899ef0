"""Sweeps: every grid point × N seeds, in chunks, on local worker processes or a Dask cluster, streamed to Parquet.

Memory stays flat as N grows: a chunk's rows go to the file as soon as the chunk is done. The file is written
under a temporary name and renamed when closed, also on Ctrl-C (the rows already written are kept and
``resume`` continues from them); bad input is refused before any file is created.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oncallsim.batch.runs import run_seeds
from oncallsim.model import InvalidInput, Params
from oncallsim.model.controls import coerce_control_value
from oncallsim.model.params import coerce_param
from oncallsim.policies import load_policy
from oncallsim.scenarios import Scenario, load_scenario
from oncallsim.simulation import MAX_SEED, Simulation, split_overrides

__all__ = ["DaskExecutor", "LocalExecutor", "SweepSpec", "Task", "parse_grid", "plan_tasks", "run_task", "sweep"]


def rows_per_task() -> int:
    """Seeds per chunk: big enough to vectorize well, small enough to stream (ONCALLSIM_ROWS_PER_TASK overrides)."""
    return int(os.environ.get("ONCALLSIM_ROWS_PER_TASK", "512"))


def parse_grid(items: Sequence[str]) -> dict[str, list[Any]]:
    """``NAME=v1,v2,…`` (repeatable) → {NAME: [v1, v2, …]}, each value checked and typed by the model."""
    grid: dict[str, list[Any]] = {}
    for item in items:
        name, sep, values = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise InvalidInput("--grid", f"expects NAME=v1,v2,…, got {item!r}")
        parts = [v.strip() for v in values.split(",")]
        if not values.strip() or any(not v for v in parts):
            raise InvalidInput(f"--grid {name}", f"has an empty value in {item!r}")
        split_overrides({name: parts[0]})  # unknown names are refused with the known ones listed
        if name in grid:
            raise InvalidInput("--grid", f"{name} is given twice")
        is_param = name in Params.__dataclass_fields__
        grid[name] = [coerce_param(name, v) if is_param else coerce_control_value(name, v) for v in parts]
    return grid


@dataclass(frozen=True)
class Task:
    """One chunk: a grid point and a run of seeds. Plain data, so it travels to any worker."""

    index: int
    scenario: dict[str, Any]
    point: dict[str, Any]
    overrides: dict[str, Any]
    seeds: tuple[int, ...]
    policy: str | None
    noise: bool
    minutes: int | None
    clock: str | None


def run_task(task: Task) -> tuple[int, list[dict[str, Any]]]:
    """Runs on a worker: the rows of one chunk, grid values first."""
    spec = Scenario.model_validate(task.scenario)
    rows = run_seeds(
        spec, task.seeds, task.policy, {**task.overrides, **task.point}, task.noise, task.minutes, task.clock
    )
    return task.index, [{**{f"grid_{k}": v for k, v in task.point.items()}, **r} for r in rows]


@dataclass
class SweepSpec:
    scenario: str | Path | Scenario
    seeds: int
    seed_start: int = 0
    policy: str | None = None
    grid: dict[str, list[Any]] = field(default_factory=dict)
    overrides: dict[str, Any] = field(default_factory=dict)
    noise: bool = True
    minutes: int | None = None
    clock: str | None = None
    rows_per_task: int = field(default_factory=rows_per_task)


def plan_tasks(spec: SweepSpec) -> list[Task]:
    if spec.seeds < 1:
        raise InvalidInput("--seeds", f"must be at least 1, got {spec.seeds}")
    if not 0 <= spec.seed_start or spec.seed_start + spec.seeds - 1 > MAX_SEED:
        raise InvalidInput("--seed-start", f"seeds must stay within 0–{MAX_SEED}")
    scenario = load_scenario(spec.scenario)
    if spec.policy is not None:
        load_policy(spec.policy)  # a policy path that does not import fails here, before any output
    names = list(spec.grid)
    points = [dict(zip(names, combo, strict=True)) for combo in itertools.product(*spec.grid.values())] or [{}]
    for point in points:  # each grid point must make a valid run
        Simulation(scenario, seed=spec.seed_start, overrides={**spec.overrides, **point}, minutes=1)
    seeds = list(range(spec.seed_start, spec.seed_start + spec.seeds))
    size = max(1, spec.rows_per_task)
    tasks: list[Task] = []
    for point in points:
        for k in range(0, len(seeds), size):
            tasks.append(
                Task(
                    len(tasks),
                    scenario.model_dump(mode="json"),
                    point,
                    dict(spec.overrides),
                    tuple(seeds[k : k + size]),
                    spec.policy,
                    spec.noise,
                    spec.minutes,
                    spec.clock,
                )
            )
    return tasks


class LocalExecutor:
    """Worker processes on this machine (the default: one per CPU)."""

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers or os.cpu_count() or 1
        if self.workers < 1:
            raise InvalidInput("--workers", f"must be at least 1, got {self.workers}")
        self.description = f"{self.workers} local worker process{'es' * (self.workers != 1)}"

    def map_unordered(self, tasks: Sequence[Task]) -> Iterator[tuple[int, list[dict[str, Any]]]]:
        if self.workers == 1 or len(tasks) == 1:
            for task in tasks:
                yield run_task(task)
            return
        import multiprocessing

        with ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            pending: set[Future[tuple[int, list[dict[str, Any]]]]] = set()
            queue = list(tasks)
            try:
                while queue or pending:
                    while queue and len(pending) < 2 * self.workers:
                        pending.add(pool.submit(run_task, queue.pop(0)))
                    done, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for future in done:
                        yield future.result()
            finally:
                for future in pending:
                    future.cancel()


class DaskExecutor:
    """An existing Dask distributed cluster (``--scheduler tcp://HOST:PORT``; the ``cluster`` extra)."""

    def __init__(self, address: str, timeout_s: float = 10.0) -> None:
        try:
            from distributed import Client
        except ImportError:
            raise InvalidInput("--scheduler", "needs Dask distributed: pip install 'oncallsim[cluster]'") from None
        try:
            self.client = Client(address, timeout=timeout_s)
        except (OSError, TimeoutError) as exc:
            raise InvalidInput("--scheduler", f"cannot reach {address}: {exc}") from None
        workers = len(self.client.scheduler_info().get("workers", {}))
        self.description = f"Dask scheduler {address} ({workers} workers)"

    def map_unordered(self, tasks: Sequence[Task]) -> Iterator[tuple[int, list[dict[str, Any]]]]:
        from distributed import as_completed

        futures = [self.client.submit(run_task, task, pure=False) for task in tasks]
        try:
            for future in as_completed(futures):
                yield future.result()
        finally:
            for future in futures:
                future.cancel()

    def close(self) -> None:
        self.client.close()


def done_keys(path: Path, grid_names: Sequence[str]) -> set[tuple[Any, ...]]:
    """(grid values…, seed) of the rows an earlier, interrupted sweep already wrote."""
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=[*(f"grid_{n}" for n in grid_names), "seed"])
    columns = [table.column(name).to_pylist() for name in table.column_names]
    return set(zip(*columns, strict=True))


def sweep(
    spec: SweepSpec,
    executor: LocalExecutor | DaskExecutor,
    out: Path,
    resume: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Run the sweep, streaming rows to ``out``; returns the rows in the file. Ctrl-C keeps what is written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tasks = plan_tasks(spec)
    names = list(spec.grid)
    kept = None
    if out.exists():
        if not resume:
            raise InvalidInput(str(out), "exists; pass --resume to continue it, or choose another --out")
        kept = pq.read_table(out)
        done = done_keys(out, names)
        tasks = [t for t in tasks if not all((*t.point.values(), s) in done for s in t.seeds)]
    total_runs = sum(len(t.seeds) for t in tasks)
    part = out.with_name(out.name + ".part")
    writer: pq.ParquetWriter | None = None
    rows_written = 0
    if kept is not None:
        writer = pq.ParquetWriter(part, kept.schema)
        writer.write_table(kept)
        rows_written = kept.num_rows
    finished = 0
    try:
        for _index, rows in executor.map_unordered(tasks):
            table = pa.Table.from_pylist(rows)
            if writer is None:
                writer = pq.ParquetWriter(part, table.schema)
            writer.write_table(table.cast(writer.schema))
            rows_written += len(rows)
            finished += len(rows)
            if progress is not None:
                progress(finished, total_runs)
    finally:
        if writer is not None:
            writer.close()
            part.replace(out)
    return rows_written


def quantile(values: Sequence[float], q: float) -> float:
    data = sorted(v for v in values if not math.isnan(v))
    if not data:
        return math.nan
    pos = (len(data) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def aggregate(path: Path, grid_names: Sequence[str]) -> list[dict[str, Any]]:
    """Per grid point: runs, p10/p50/p90 of budget spent, cost and worst p99, and the share of runs passing."""
    import pyarrow.parquet as pq

    table = pq.read_table(path).to_pylist()
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in table:
        groups.setdefault(tuple(r[f"grid_{n}"] for n in grid_names), []).append(r)
    out = []
    for key, rows in sorted(groups.items()):
        summary: dict[str, Any] = dict(zip(grid_names, key, strict=True))
        summary["runs"] = len(rows)
        for metric in ("budget_spent", "cost", "worst_p99_ms"):
            for q in (0.1, 0.5, 0.9):
                summary[f"{metric}_p{int(q * 100)}"] = quantile([r[metric] for r in rows], q)
        summary["passed_share"] = sum(bool(r["passed"]) for r in rows) / len(rows)
        summary["objectives_met_share"] = sum(r["objectives_passed"] for r in rows) / max(
            1, sum(r["objectives_total"] for r in rows)
        )
        out.append(summary)
    return out


def distribution_html(path: Path, grid_names: Sequence[str], title: str) -> str:
    """An offline HTML page (plotly.js inlined) with the distributions of budget spent, cost and worst p99."""
    import plotly.graph_objects as go
    import pyarrow.parquet as pq
    from plotly.subplots import make_subplots

    rows = pq.read_table(path).to_pylist()
    metrics = (("budget_spent", "error budget spent"), ("cost", "cost ($)"), ("worst_p99_ms", "worst p99 (ms)"))
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

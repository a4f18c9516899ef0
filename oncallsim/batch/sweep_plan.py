"""A sweep's plan: the grid × seeds as chunks (tasks) of runs, sized so every worker gets equal work, and what
one chunk computes (``run_task``: the summary rows of its runs, as typed columns)."""

from __future__ import annotations

import itertools
import json
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from oncallsim.batch.policies import vectorized
from oncallsim.batch.runs import run_seeds
from oncallsim.model import MODEL_VERSION, InvalidInput, Params
from oncallsim.model.controls import coerce_control_value
from oncallsim.model.engine import DEFAULT_ENGINE, get_engine
from oncallsim.model.params import coerce_param
from oncallsim.policies import load_policy
from oncallsim.scenarios import Scenario, load_scenario
from oncallsim.simulation import MAX_SEED, Simulation, split_overrides

__all__ = ["Columns", "SweepPlan", "SweepSpec", "Task", "parse_grid", "plan_sweep", "run_task"]


# Runs per chunk: the batch engine's per-minute cost per run falls with the batch size (numpy's per-call
# overhead is shared), so chunks are as big as this allows while every worker still gets equal work.
MAX_CHUNK_VECTOR = 5000
MAX_CHUNK_SCALAR = 64
MAX_STEPS_PER_CHUNK = 10_000_000  # so that a chunk of a long scenario still finishes (and is kept) every few s

Columns = dict[str, npt.NDArray[Any]]


def rows_per_task() -> int | None:
    """Seeds per chunk when ONCALLSIM_ROWS_PER_TASK is set; otherwise None (sized from the sweep and workers)."""
    value = os.environ.get("ONCALLSIM_ROWS_PER_TASK")
    return int(value) if value else None


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
        grid[name] = [_coerce(name, v) for v in parts]
    return grid


def _coerce(name: str, value: Any) -> Any:
    return coerce_param(name, value) if name in Params.__dataclass_fields__ else coerce_control_value(name, value)


@dataclass(frozen=True)
class Task:
    """One chunk: a grid point and a run of seeds. Plain data, so it travels to any worker."""

    index: int
    scenario: dict[str, Any]
    point: dict[str, Any]
    overrides: dict[str, Any]
    seeds: Sequence[int]  # a range when the seeds are consecutive (small to send)
    policy: str | None
    noise: bool
    minutes: int | None
    clock: str | None
    point_index: int = 0
    engine: str = DEFAULT_ENGINE


def _int_outcomes() -> frozenset[str]:
    from oncallsim.debrief.summary import Outcome

    return frozenset(name for name, f in Outcome.model_fields.items() if f.annotation is int)


def run_task(task: Task) -> tuple[int, Columns]:
    """Runs on a worker: the rows of one chunk as typed columns (grid values first), nothing else."""
    spec = Scenario.model_validate(task.scenario)
    rows = run_seeds(
        spec,
        task.seeds,
        task.policy,
        {**task.overrides, **task.point},
        task.noise,
        task.minutes,
        task.clock,
        engine=task.engine,
    )
    n = len(rows)
    columns: Columns = {}
    for name, value in task.point.items():
        columns[f"grid_{name}"] = np.full(n, value, dtype=_grid_dtype(value))
    ints = _int_outcomes() | {"seed", "objectives_passed", "objectives_total"}
    for name in rows[0] if rows else ():
        values = [r[name] for r in rows]
        if name in ints:
            columns[name] = np.array(values, dtype=np.int64)
        elif all(isinstance(v, bool | np.bool_) for v in values):
            columns[name] = np.array(values, dtype=np.bool_)
        else:  # a number that may be missing (NaN), whatever type this chunk's values happen to have
            columns[name] = np.array([math.nan if v is None else v for v in values], dtype=np.float64)
    return task.index, columns


def _grid_dtype(value: Any) -> Any:
    if isinstance(value, bool):
        return np.bool_
    if isinstance(value, int):
        return np.int64
    if isinstance(value, float):
        return np.float64
    return object


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
    rows_per_task: int | None = field(default_factory=rows_per_task)  # None: sized from the sweep and workers
    engine: str | None = None  # None: the scenario's engine, else the minute model


@dataclass
class SweepPlan:
    """A checked sweep: the scenario, the grid points, the configuration recorded in the output."""

    spec: SweepSpec
    scenario: Scenario
    points: list[dict[str, Any]]
    overrides: dict[str, Any]
    minutes: int
    vector: bool
    config: dict[str, Any]

    @property
    def seed_stop(self) -> int:
        return self.spec.seed_start + self.spec.seeds

    def chunk_size(self, runs: int, workers: int) -> int:
        """Equal chunks, as big as allowed, in whole rounds over the workers (so none waits on the others)."""
        if self.spec.rows_per_task is not None:
            return max(1, self.spec.rows_per_task)
        cap = MAX_CHUNK_VECTOR if self.vector else MAX_CHUNK_SCALAR
        cap = max(1, min(cap, MAX_STEPS_PER_CHUNK // max(1, self.minutes)))
        rounds = max(1, math.ceil(runs / (max(1, workers) * cap)))
        return max(1, math.ceil(runs / (max(1, workers) * rounds)))

    def remaining(self, done: Mapping[int, npt.NDArray[np.int64]]) -> int:
        per_point = self.spec.seeds
        return sum(
            per_point - _count_between(done.get(p), self.spec.seed_start, self.seed_stop)
            for p in range(len(self.points))
        )

    def tasks(self, done: Mapping[int, npt.NDArray[np.int64]], size: int) -> Iterator[Task]:
        """The chunks still to run, made one at a time (never a list of all seeds)."""
        scenario = self.scenario.model_dump(mode="json")
        index = 0
        for p, point in enumerate(self.points):
            seen = done.get(p, np.empty(0, dtype=np.int64))
            remaining = self.spec.seeds - _count_between(seen, self.spec.seed_start, self.seed_stop)
            if remaining <= 0:
                continue
            chunks = math.ceil(remaining / size)
            cursor = self.spec.seed_start
            for k in range(chunks):
                want = remaining // chunks + (k < remaining % chunks)
                seeds, cursor = _take_missing(seen, cursor, want)
                yield Task(
                    index,
                    scenario,
                    point,
                    dict(self.overrides),
                    seeds,
                    self.spec.policy,
                    self.spec.noise,
                    self.spec.minutes,
                    self.spec.clock,
                    p,
                    self.spec.engine or DEFAULT_ENGINE,
                )
                index += 1


def _count_between(seen: npt.NDArray[np.int64] | None, lo: int, hi: int) -> int:
    if seen is None or not len(seen):
        return 0
    return int(np.searchsorted(seen, hi) - np.searchsorted(seen, lo))


def _take_missing(seen: npt.NDArray[np.int64], cursor: int, want: int) -> tuple[Sequence[int], int]:
    """The next ``want`` seeds from ``cursor`` on that are not in ``seen`` (sorted), and the cursor after them."""
    pieces: list[range] = []
    at = int(np.searchsorted(seen, cursor))
    while want > 0:
        while at < len(seen) and seen[at] == cursor:  # skip seeds already done
            cursor += 1
            at += 1
        nxt = int(seen[at]) if at < len(seen) else cursor + want
        take = min(want, nxt - cursor)
        pieces.append(range(cursor, cursor + take))
        cursor += take
        want -= take
    if len(pieces) == 1:
        return pieces[0], cursor
    return tuple(itertools.chain.from_iterable(pieces)), cursor


def plan_sweep(spec: SweepSpec) -> SweepPlan:
    """Check every input (before any worker starts or any file is made) and describe the sweep."""
    for name, value in (("--seeds", spec.seeds), ("--seed-start", spec.seed_start)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidInput(name, f"must be a whole number, got {value!r}")
    if not 0 <= spec.seed_start <= MAX_SEED:
        raise InvalidInput("--seed-start", f"must be from 0 to {MAX_SEED}, got {spec.seed_start}")
    room = MAX_SEED - spec.seed_start + 1
    if not 1 <= spec.seeds <= room:
        raise InvalidInput("--seeds", f"must be from 1 to {room} (seeds stay within 0–{MAX_SEED}), got {spec.seeds}")
    if spec.rows_per_task is not None and spec.rows_per_task < 1:
        raise InvalidInput("rows per task", f"must be at least 1, got {spec.rows_per_task}")
    if spec.engine is not None:
        get_engine(spec.engine)  # a bad name is refused first
    scenario = load_scenario(spec.scenario)
    spec.engine = get_engine(spec.engine or scenario.engine or DEFAULT_ENGINE).name
    engine = get_engine(spec.engine)
    if spec.policy is not None:
        load_policy(spec.policy)  # a policy path that does not import fails here, before any output
    names = list(spec.grid)
    points = [dict(zip(names, combo, strict=True)) for combo in itertools.product(*spec.grid.values())] or [{}]
    overrides = {name: _coerce(name, value) for name, value in spec.overrides.items()}
    split_overrides(overrides)
    length = 0
    for point in points:  # each grid point must make a valid run
        sim = Simulation(
            scenario,
            seed=spec.seed_start,
            overrides={**overrides, **point},
            noise=spec.noise,
            minutes=spec.minutes,
            clock=spec.clock,
            engine=spec.engine,
        )
        length = sim.plan.minutes
    config = {
        "format": 1,
        "model_version": MODEL_VERSION,
        "engine": engine.name,
        "scenario": scenario.model_dump(mode="json"),
        "overrides": dict(sorted(overrides.items())),
        "policy": spec.policy or "hands-off",
        "minutes": spec.minutes,
        "clock": spec.clock,
        "noise": spec.noise,
        "grid": {name: list(values) for name, values in spec.grid.items()},
        "seed_start": spec.seed_start,
    }
    config = json.loads(json.dumps(config))  # as it reads back from the file
    vector = engine.vectorized and vectorized(spec.policy) is not None
    return SweepPlan(spec, scenario, points, overrides, length, vector, config)

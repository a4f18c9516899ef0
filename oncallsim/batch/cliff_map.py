"""The cliff map (issue 26; docs/cliff.md): a scenario on the request engine over a grid of settings, every run
meeting the same trigger at the same minute, each point classed by what its runs do after the trigger ends.

A run: ``warmup`` minutes, the trigger (``--trigger``, or the scenario's own brownout at its midpoints) for its
minutes, then up to ``horizon`` minutes. A minute is degraded when its error rate exceeds the SLO's allowance
(1 − SLO, the debrief's rule). A run is

- **unstable** when it is degraded in the minute before the trigger (it needed none);
- **recovered** after k minutes when the k-th minute after the trigger starts ``hold`` healthy minutes in a row
  (the run stops there: nothing is left to see), **stable** if k ≤ ``within``;
- **metastable** when it is still degraded when the horizon ends.

A point is stable, metastable or unstable when at least 95 % of its seeds are, mixed otherwise; its recovery-time
distribution is its runs' k. Beside each point: its operating point (λ/cμ, λA/cμ, the zone) and the chain's
prediction (``cliff.predict``). Local worker processes by default, a Dask cluster with a scheduler address
(``batch.executors``); the rows are the same either way.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from oncallsim.batch.executors import DaskExecutor, LocalExecutor
from oncallsim.batch.sweep_plan import Columns
from oncallsim.cliff.point import RETRY_CONTROLS, OperatingPoint, pilot_point, point_settings
from oncallsim.cliff.predict import Prediction, predict
from oncallsim.cliff.trigger import Trigger, scenario_trigger, with_trigger
from oncallsim.cliff.zone import position
from oncallsim.model import MODEL_VERSION, InvalidInput, Params
from oncallsim.model.controls import coerce_control_value
from oncallsim.model.errors import number_text
from oncallsim.model.params import coerce_param
from oncallsim.scenarios import Scenario, load_scenario
from oncallsim.simulation import MAX_SEED, Simulation, split_overrides

__all__ = [
    "CONFIG_KEY",
    "OUTCOMES",
    "QUORUM",
    "CliffSpec",
    "CliffTask",
    "MapPlan",
    "PointResult",
    "observe_run",
    "parse_vary",
    "plan_map",
    "run_cliff_task",
    "run_map",
]

CONFIG_KEY = b"oncallsim.cliff"
LOAD = "load"  # the axis that scales the scenario's traffic (base_requests_per_s × load)
QUORUM = 0.95  # a point's class needs this share of its seeds
SUSTAINED_ERRORS = 0.99  # a minute of a sustained loop: at least this share of the calls fail
OUTCOMES = ("stable", "slow", "metastable", "unstable")  # a run's: recovered in time, later, never, needed no trigger
MAX_POINTS = 10_000
MAX_RUNS = 1_000_000


def parse_vary(items: Sequence[str]) -> dict[str, list[Any]]:
    """``NAME=a:b:n`` (n values from a to b, evenly) or ``NAME=v1,v2,…`` → {NAME: values}, each checked and typed
    by the model (a whole-number setting takes whole numbers only). ``load`` scales the scenario's traffic."""
    axes: dict[str, list[Any]] = {}
    for item in items:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name or not text.strip():
            raise InvalidInput("--vary", f"expects NAME=a:b:n or NAME=v1,v2,…, got {item!r}")
        if name in axes:
            raise InvalidInput("--vary", f"{name} is given twice")
        if name != LOAD:
            split_overrides({name: None})  # an unknown name is refused with the known ones listed
        if ":" in text:
            if text.count(":") != 2:
                raise InvalidInput(f"--vary {name}", f"expects a:b:n (n values from a to b), got {text!r}")
            axes[name] = _range(name, text)
        else:
            parts = [p.strip() for p in text.split(",")]
            if any(not p for p in parts):
                raise InvalidInput(f"--vary {name}", f"has an empty value in {text!r}")
            axes[name] = [_value(name, p) for p in parts]
        if len(set(map(str, axes[name]))) != len(axes[name]):
            raise InvalidInput(f"--vary {name}", f"gives a value twice: {', '.join(map(str, axes[name]))}")
    if LOAD in axes and "base_requests_per_s" in axes:
        raise InvalidInput("--vary", "load scales base_requests_per_s: vary one of them, not both")
    return axes


def _range(name: str, text: str) -> list[Any]:
    a, b, n = (t.strip() for t in text.split(":"))
    try:
        lo, hi, count = number_text(a), number_text(b), number_text(n)
    except ValueError:
        raise InvalidInput(f"--vary {name}", f"expects a:b:n with numbers, got {text!r}") from None
    if not isinstance(count, int) or not 1 <= count <= 1000:
        raise InvalidInput(f"--vary {name}", f"n must be a whole number from 1 to 1000, got {n!r}")
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise InvalidInput(f"--vary {name}", f"a and b must be finite, got {text!r}")
    values = [lo] if count == 1 else [lo + (hi - lo) * k / (count - 1) for k in range(count)]
    return [_value(name, _round(v)) for v in values]


def _round(x: float) -> float | int:
    """A grid value without the float noise of its construction (0.30000000000000004 → 0.3)."""
    if isinstance(x, int) or float(x).is_integer():
        return int(x)
    return float(f"{x:.10g}")


def _value(name: str, value: Any) -> Any:
    if name == LOAD:
        try:
            x = number_text(value) if isinstance(value, str) else value
        except ValueError:
            x = None
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not (0.0 < x <= 100.0):
            raise InvalidInput(
                "--vary load", f"must be above 0 and at most 100 (× the scenario's traffic), got {value!r}"
            )
        return float(x)
    if name in Params.__dataclass_fields__:
        return coerce_param(name, value)
    return coerce_control_value(name, value)


@dataclass
class CliffSpec:
    scenario: str | Path | Scenario
    vary: dict[str, list[Any]]
    trigger: Trigger | None = None  # None: the scenario's own brownout
    seeds: int = 20
    seed_start: int = 0
    overrides: dict[str, Any] = field(default_factory=dict)
    warmup_min: int = 5
    horizon_min: int = 20
    within_min: int = 5
    hold_min: int = 3
    play_out: bool = False  # play every run to the horizon (no early call of a sustained loop)
    runs_per_task: int | None = None  # None: sized from the map and the workers


class MapPlan(NamedTuple):
    spec: CliffSpec
    scenario: Scenario  # with the trigger at its minute
    trigger: Trigger
    points: list[dict[str, Any]]  # the axes' values of each point
    overrides: list[dict[str, Any]]  # each point's overrides (the spec's, then the point's; load as traffic)
    config: dict[str, Any]

    @property
    def minutes(self) -> int:
        return self.spec.warmup_min + self.trigger.minutes + self.spec.horizon_min


def plan_map(spec: CliffSpec) -> MapPlan:
    """Check every input before a worker starts or a file is made; the points and the scenario with its trigger."""
    for name, value, lo, hi in (
        ("--seeds", spec.seeds, 1, 10_000),
        ("--seed-start", spec.seed_start, 0, MAX_SEED),
        ("--warmup", spec.warmup_min, 2, 120),
        ("--horizon", spec.horizon_min, 1, 600),
        ("--within", spec.within_min, 1, 600),
        ("--hold", spec.hold_min, 1, 60),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise InvalidInput(name, f"must be a whole number from {lo} to {hi}, got {value!r}")
    if spec.seed_start + spec.seeds - 1 > MAX_SEED:
        raise InvalidInput("--seeds", f"the seeds must stay within 0–{MAX_SEED}")
    if spec.within_min > spec.horizon_min:
        raise InvalidInput("--within", f"must be at most --horizon ({spec.horizon_min}), got {spec.within_min}")
    if not spec.vary:
        raise InvalidInput("--vary", "give at least one axis: NAME=a:b:n or NAME=v1,v2,…")
    base = load_scenario(spec.scenario)
    trigger = spec.trigger or scenario_trigger(base)
    if trigger is None:
        raise InvalidInput(
            "--trigger", f"{base.id} has no brownout of its own: give one, e.g. brownout:minutes=5,slowdown=3"
        )
    scenario = with_trigger(base, trigger, spec.warmup_min)
    overrides = dict(spec.overrides)
    split_overrides(overrides)
    names = list(spec.vary)
    points = [dict(zip(names, combo, strict=True)) for combo in itertools.product(*spec.vary.values())]
    if len(points) > MAX_POINTS or len(points) * spec.seeds > MAX_RUNS:
        raise InvalidInput("--vary", f"makes {len(points):,} points × {spec.seeds} seeds: at most {MAX_RUNS:,} runs")
    traffic = Params().with_overrides(
        {**base.params, **{k: v for k, v in overrides.items() if k in Params.__dataclass_fields__}}
    )
    point_overrides = []
    minutes = spec.warmup_min + trigger.minutes + spec.horizon_min
    for point in points:
        values = {**overrides, **{k: v for k, v in point.items() if k != LOAD}}
        if LOAD in point:
            values["base_requests_per_s"] = traffic.base_requests_per_s * point[LOAD]
        Simulation(scenario, seed=spec.seed_start, overrides=values, minutes=minutes, engine="request")  # checked
        point_overrides.append(values)
    config = {
        "format": 1,
        "model_version": MODEL_VERSION,
        "scenario": scenario.model_dump(mode="json"),
        "trigger": trigger.text(),
        "overrides": dict(sorted(overrides.items())),
        "vary": {k: list(v) for k, v in spec.vary.items()},
        "seeds": spec.seeds,
        "seed_start": spec.seed_start,
        "warmup_min": spec.warmup_min,
        "horizon_min": spec.horizon_min,
        "within_min": spec.within_min,
        "hold_min": spec.hold_min,
        "play_out": spec.play_out,
    }
    return MapPlan(spec, scenario, trigger, points, point_overrides, json.loads(json.dumps(config)))


@dataclass(frozen=True)
class CliffTask:
    """Some seeds of one point: plain data, so it travels to any worker."""

    index: int
    point_index: int
    point: dict[str, Any]
    scenario: dict[str, Any]
    overrides: dict[str, Any]
    seeds: Sequence[int]
    warmup_min: int
    trigger_minutes: int
    horizon_min: int
    hold_min: int
    play_out: bool = False


class RunOutcome(NamedTuple):
    seed: int
    outcome: str  # OUTCOMES
    recovery_min: float  # k: recovered by the end of the k-th minute after the trigger (nan: not recovered)
    minutes: int  # minutes simulated (a run stops once it has recovered and held, or its loop sustains itself)
    budget_spent: float  # of the error budget, over the minutes simulated
    arrivals_per_s: float  # λ admitted in the minute before the trigger
    workers: int  # serving then
    capacity_per_s: float  # cμ = N/S measured then
    trigger_capacity_per_s: float  # cμ measured over the trigger's minutes (their mean)


def observe_run(
    scenario: Scenario,
    overrides: Mapping[str, Any],
    seed: int,
    *,
    warmup_min: int,
    trigger_minutes: int,
    horizon_min: int,
    hold_min: int,
    play_out: bool = False,
) -> RunOutcome:
    """One run of a point, minute by minute. It stops once recovered for ``hold_min`` minutes, or (unless
    ``play_out``) once its retry loop has sustained itself for ``hold_min`` minutes after the trigger: every call
    failing and the queue longer at each minute's end than at the one before. The wait then only grows, every
    attempt keeps timing out and being retried, and nothing inside the run can bring it back: metastable."""
    end = warmup_min + trigger_minutes + horizon_min
    sim = Simulation(scenario, seed=seed, overrides=overrides, minutes=end, engine="request")
    allowance = sim.params.error_budget
    after = warmup_min + trigger_minutes  # the first minute after the trigger
    healthy_since: int | None = None
    sustained = 0
    queue = math.inf
    spent = 0.0
    scale = 1.0 / allowance / sim.params.budget_period_min
    degraded_before = False
    before = (math.nan, 0, math.nan)
    during: list[float] = []
    while not sim.done:
        record = sim.step()
        spent += record.error_rate * scale
        degraded = record.error_rate > allowance
        waiting = float((record.extras or {}).get("queue_at_end", 0.0))
        if record.minute == warmup_min - 1:
            degraded_before = degraded
            before = (record.admitted_per_s, int(record.servers), record.capacity_per_s)
        elif warmup_min <= record.minute < after:
            during.append(record.capacity_per_s)
        if record.minute >= after:
            if degraded:
                healthy_since = None
            elif healthy_since is None:
                healthy_since = record.minute
            if healthy_since is not None and record.minute - healthy_since + 1 >= hold_min:
                break
            sustained = sustained + 1 if record.error_rate >= SUSTAINED_ERRORS and waiting > queue else 0
            if sustained >= hold_min and not play_out:
                break
        queue = waiting
    measured = (*before, float(np.mean(during)) if during else before[2])
    if degraded_before:
        return RunOutcome(seed, "unstable", math.nan, sim.minute, spent, *measured)
    if healthy_since is None or sim.minute - healthy_since < min(hold_min, end - after):
        return RunOutcome(seed, "metastable", math.nan, sim.minute, spent, *measured)
    return RunOutcome(seed, "stable", float(healthy_since - after + 1), sim.minute, spent, *measured)


def run_cliff_task(task: CliffTask) -> tuple[int, Columns]:
    """Runs on a worker: one row per seed (the point's values first), nothing else."""
    scenario = Scenario.model_validate(task.scenario)
    rows = [
        observe_run(
            scenario,
            task.overrides,
            seed,
            warmup_min=task.warmup_min,
            trigger_minutes=task.trigger_minutes,
            horizon_min=task.horizon_min,
            hold_min=task.hold_min,
            play_out=task.play_out,
        )
        for seed in task.seeds
    ]
    n = len(rows)
    columns: Columns = {"point": np.full(n, task.point_index, dtype=np.int64)}
    for name, value in task.point.items():
        columns[f"grid_{name}"] = np.full(n, value, dtype=object if isinstance(value, str) else type(value))
    columns["seed"] = np.array([r.seed for r in rows], dtype=np.int64)
    columns["outcome"] = np.array([r.outcome for r in rows], dtype=object)  # stable or slow: by --within, later
    columns["recovery_min"] = np.array([r.recovery_min for r in rows], dtype=np.float64)
    columns["minutes"] = np.array([r.minutes for r in rows], dtype=np.int64)
    columns["budget_spent"] = np.array([r.budget_spent for r in rows], dtype=np.float64)
    for name in ("arrivals_per_s", "capacity_per_s", "trigger_capacity_per_s"):
        columns[name] = np.array([getattr(r, name) for r in rows], dtype=np.float64)
    columns["workers"] = np.array([r.workers for r in rows], dtype=np.int64)
    return task.index, columns


def _tasks(plan: MapPlan, size: int) -> Iterator[CliffTask]:
    scenario = plan.scenario.model_dump(mode="json")
    index = 0
    seeds = range(plan.spec.seed_start, plan.spec.seed_start + plan.spec.seeds)
    for p, (point, overrides) in enumerate(zip(plan.points, plan.overrides, strict=True)):
        for k in range(0, len(seeds), size):
            yield CliffTask(
                index,
                p,
                point,
                scenario,
                overrides,
                seeds[k : k + size],
                plan.spec.warmup_min,
                plan.trigger.minutes,
                plan.spec.horizon_min,
                plan.spec.hold_min,
                plan.spec.play_out,
            )
            index += 1


class PointResult(NamedTuple):
    """A point's class, its runs' counts and recovery times, where it stands, and the chain's prediction."""

    number: int  # the point's place in the grid
    values: dict[str, Any]
    cls: str
    counts: dict[str, int]  # by outcome
    recovery_min: list[float]  # the recovered runs' k
    operating: OperatingPoint
    zone: str
    amplified: float
    chain: Prediction


def classify(outcomes: Sequence[str]) -> str:
    """stable, metastable or unstable when at least ``QUORUM`` of the runs are; mixed otherwise."""
    n = len(outcomes)
    for cls in ("unstable", "metastable", "stable"):
        if n and sum(o == cls for o in outcomes) >= QUORUM * n - 1e-9:
            return cls
    return "mixed"


def run_map(
    plan: MapPlan,
    executor: LocalExecutor | DaskExecutor,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[PointResult], dict[str, Any]]:
    """Every run of the map on ``executor``, and the chain's prediction of every point (in this process, as each
    point's runs are all back); returns the points and the runs' columns (one row per run)."""
    spec = plan.spec
    workers = max(1, getattr(executor, "workers", 1))
    total = len(plan.points) * spec.seeds
    size = spec.runs_per_task or max(1, min(spec.seeds, math.ceil(total / (workers * 8))))
    parts: dict[int, Columns] = {}
    done = 0
    waiting = dict.fromkeys(range(len(plan.points)), spec.seeds)
    predictions: dict[int, tuple[OperatingPoint, Prediction]] = {}
    pilots: dict[str, OperatingPoint] = {}

    def predict_point(p: int) -> None:
        """The chain's prediction of point ``p`` on the numbers of a pilot run (one per setting of the controls
        other than the retries'): the parent's work while the other points' runs go on."""
        overrides = plan.overrides[p]
        key = json.dumps({k: v for k, v in sorted(overrides.items()) if k not in RETRY_CONTROLS})
        if key not in pilots:
            pilots[key] = pilot_point(plan.scenario, overrides, plan.trigger, spec.warmup_min)
        operating = replace(pilots[key], **point_settings(plan.scenario, overrides))
        chain = predict(operating, within_min=spec.within_min, horizon_min=spec.horizon_min, run_min=plan.minutes)
        predictions[p] = (operating, chain)

    if progress is not None:
        progress(0, total)
    for index, columns in executor.map_unordered(_tasks(plan, size), run_cliff_task):
        parts[index] = columns
        done += len(columns["seed"])
        if progress is not None:
            progress(done, total)
        p = int(columns["point"][0])
        waiting[p] -= len(columns["seed"])
        if waiting[p] == 0:
            predict_point(p)
    runs = {name: np.concatenate([parts[i][name] for i in sorted(parts)]) for name in parts[min(parts)]}
    slow = (runs["outcome"] == "stable") & (runs["recovery_min"] > spec.within_min)
    runs["outcome"] = np.where(slow, "slow", runs["outcome"]).astype(object)
    results = []
    for p, values in enumerate(plan.points):
        mine = runs["point"] == p
        outcomes = [str(o) for o in runs["outcome"][mine]]
        operating, chain = predictions[p]
        where = position(operating)
        times = runs["recovery_min"][mine]
        results.append(
            PointResult(
                p,
                values,
                classify(outcomes),
                {o: outcomes.count(o) for o in OUTCOMES},
                [float(t) for t in times[np.isfinite(times)]],
                operating,
                where.zone,
                where.amplified,
                chain,
            )
        )
    return results, runs

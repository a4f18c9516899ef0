"""The arena's plan, its runs and its table: every contestant plays the same scenarios on the same held-out seeds.

A run is one contestant on one scenario and seed: its opening controls, its player deciding each minute before
the minute is computed (each decision timed on the wall clock), then the debrief's numbers and counterfactuals
(``make_report`` and ``policies.counterfactual``, reused as they are). Runs are deterministic for a deterministic
contestant (the scenario's draws and the noise come from the seed), so the table is the same every time; only
the decision times vary, and they stay out of the ranking table.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, cast

from oncallsim.arena.contestants import MAX_CONTESTANTS, Contestant, Settings
from oncallsim.batch.executors import DaskExecutor, LocalExecutor, Work
from oncallsim.debrief import make_report
from oncallsim.model import InvalidInput
from oncallsim.model.engine import ENGINES
from oncallsim.policies.counterfactual import counterfactuals
from oncallsim.scenarios import builtin_scenarios
from oncallsim.simulation import MAX_SEED, Action, Simulation

__all__ = [
    "DEFAULT_SCENARIOS",
    "DEFAULT_SEEDS",
    "DIFFICULTIES",
    "MAX_SEEDS",
    "TUNING_SEEDS",
    "ArenaPlan",
    "aggregate",
    "parse_seeds",
    "plan_arena",
    "play_run",
    "run_arena",
]

# The scenarios played when none is named, by engine: the minute engine's three incidents with objectives, and
# the request engine's two overloads, where a limiter or a controller has something to do.
DEFAULT_SCENARIOS = {
    "minute": ("bad-deploy", "surge", "cache-flush"),
    "request": ("flash-crowd", "retry-storm"),
}
# Held-out seeds: never those the scenarios' objectives and scores were measured on (docs/scenarios.md,
# "Balance": 0–199 and 1000–1099). The person's balance tests play 3000–3007; the arena starts there too.
TUNING_SEEDS = (range(0, 200), range(1000, 1100))
DEFAULT_SEEDS = "3000-3004"
MAX_SEEDS = 1000
DIFFICULTIES = ("guided", "normal", "hard")  # as the console's (web/pacing.py)
MAX_TIME_LIMIT_S = 3600.0


def parse_seeds(text: str) -> list[int]:
    """``3000-3004``, ``3000,3007`` or both (``3000-3002,3010``) → the seeds, in order, each held out."""
    seeds: list[int] = []
    for part in (p.strip() for p in str(text).split(",")):
        low, dash, high = part.partition("-")
        try:
            lo = int(low)
            hi = int(high) if dash else lo
        except ValueError:
            raise InvalidInput(
                "--seeds", f"expects LOW-HIGH or a list of seeds (e.g. {DEFAULT_SEEDS}), got {text[:80]!r}"
            ) from None
        if not 0 <= lo <= hi <= MAX_SEED:
            raise InvalidInput("--seeds", f"must be seeds from 0 to {MAX_SEED}, low to high, got {part[:80]!r}")
        if hi - lo + 1 + len(seeds) > MAX_SEEDS:
            raise InvalidInput("--seeds", f"at most {MAX_SEEDS} seeds, got {text[:80]!r}")
        seeds.extend(range(lo, hi + 1))
    for seed in seeds:
        tuned = next((r for r in TUNING_SEEDS if seed in r), None)
        if tuned is not None:
            raise InvalidInput(
                "--seeds",
                f"{seed} is among the seeds the scenarios were tuned on ({tuned.start}–{tuned.stop - 1}); "
                f"use held-out seeds, e.g. {DEFAULT_SEEDS}",
            )
    if len(set(seeds)) != len(seeds):
        raise InvalidInput("--seeds", f"names a seed twice: {text[:80]!r}")
    return seeds


@dataclass(frozen=True)
class ArenaPlan:
    """Who plays what: checked in full before the first run starts."""

    contestants: tuple[Contestant, ...]
    scenarios: tuple[str, ...]
    seeds: tuple[int, ...]
    engine: str | None
    settings: Settings
    counterfactuals: bool = True

    def tasks(self) -> Iterator[tuple[int, Contestant, str, int, str | None, Settings, bool]]:
        """One task a run, indexed in the table's order (contestant, scenario, seed)."""
        index = 0
        for contestant in self.contestants:
            for scenario in self.scenarios:
                for seed in self.seeds:
                    yield (index, contestant, scenario, seed, self.engine, self.settings, self.counterfactuals)
                    index += 1

    @property
    def runs(self) -> int:
        return len(self.contestants) * len(self.scenarios) * len(self.seeds)


def scenario_ref(text: str) -> str:
    """A built-in scenario's id or a scenario file's path (a .toml name or one with a slash)."""
    known = builtin_scenarios()
    if text in known or text.endswith(".toml") or "/" in text:
        return text
    raise InvalidInput("--scenario", f"unknown scenario {text[:80]!r}; known: {', '.join(known)}")


def plan_arena(
    contestants: Sequence[Contestant],
    scenarios: Sequence[str] | None = None,
    seeds: str | Sequence[int] = DEFAULT_SEEDS,
    engine: str | None = None,
    difficulty: str = "normal",
    time_limit_s: float = 30.0,
    with_counterfactuals: bool = True,
) -> ArenaPlan:
    """Check everything once: the contestants' names, the scenarios, the seeds, the engine, and that each
    contestant's opening controls are ones each scenario's engine has (a limiter is the request engine's)."""
    if not contestants:
        raise InvalidInput("--contestant", "at least one contestant")
    if len(contestants) > MAX_CONTESTANTS:
        raise InvalidInput("--contestant", f"at most {MAX_CONTESTANTS} contestants, got {len(contestants)}")
    names = [c.name for c in contestants]
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice is not None:
        raise InvalidInput("--contestant", f"the name {twice!r} is given twice")
    if engine is not None and engine not in ENGINES:
        raise InvalidInput("--engine", f"unknown engine {engine[:40]!r}; one of {', '.join(ENGINES)}")
    if difficulty not in DIFFICULTIES:
        raise InvalidInput("--difficulty", f"must be one of {', '.join(DIFFICULTIES)}, got {difficulty[:40]!r}")
    if not 0.0 < time_limit_s <= MAX_TIME_LIMIT_S:
        raise InvalidInput("--time-limit", f"must be above 0 and at most {MAX_TIME_LIMIT_S:g} s, got {time_limit_s:g}")
    chosen = tuple(scenario_ref(s) for s in scenarios) if scenarios else DEFAULT_SCENARIOS[engine or "minute"]
    if len(set(chosen)) != len(chosen):
        raise InvalidInput("--scenario", "names a scenario twice")
    seed_list = tuple(parse_seeds(seeds) if isinstance(seeds, str) else seeds)
    if not seed_list:
        raise InvalidInput("--seeds", "at least one seed")
    settings = Settings(difficulty, time_limit_s)
    for scenario in chosen:
        try:
            Simulation(scenario, seed=seed_list[0], engine=engine, minutes=1)
        except InvalidInput as exc:
            raise InvalidInput("--scenario", f"{scenario}: {exc.field}: {exc.reason}"[:400]) from None
        for contestant in contestants:
            if contestant.kind != "controls":
                continue
            overrides = contestant.entry(settings).overrides
            try:
                Simulation(scenario, seed=seed_list[0], engine=engine, minutes=1, overrides=overrides)
            except InvalidInput as exc:
                raise InvalidInput(
                    "--contestant", f"{contestant.name} on {scenario}: {exc.field}: {exc.reason}"[:400]
                ) from None
    return ArenaPlan(tuple(contestants), chosen, seed_list, engine, settings, with_counterfactuals)


def play_run(
    contestant: Contestant,
    scenario: str,
    seed: int,
    engine: str | None = None,
    settings: Settings | None = None,
    with_counterfactuals: bool = True,
) -> dict[str, Any]:
    """One contestant on one scenario and seed → its row (docs/arena.md, "Columns")."""
    settings = settings or Settings()
    entry = contestant.entry(settings)
    times: list[float] = []
    refused = 0
    try:
        sim = Simulation(scenario, seed=seed, overrides=entry.overrides, engine=engine)
        if entry.drive is not None:  # it plays the run itself (an MCP agent); the loop below finishes it hands off
            times, refused = entry.drive(sim)
        policy = entry.policy
        if policy is not None:
            policy.reset(seed)
            begin = getattr(policy, "begin", None)
            if begin is not None:
                begin(sim.engine.name, sim.length)
        while not sim.done:
            todo: list[Action] = []
            if policy is not None and entry.failure() is None:
                started = time.perf_counter()
                wanted = list(policy.decide(sim.observe()))
                times.append(time.perf_counter() - started)
                told: list[str] = []
                for control, value in wanted:
                    try:
                        todo.append(sim.check_action(control, value))
                    except InvalidInput as exc:
                        told.append(f"{str(control)[:40]}: {exc.field}: {exc.reason}"[:300])
                refused += len(told)
                tell = getattr(policy, "tell_refused", None)
                if told and tell is not None:
                    tell(told)
            sim.step(todo)
        failure = entry.failure()
    finally:
        entry.close()
    report = make_report(sim, counterfactuals(sim) if with_counterfactuals else None, effects=False)
    best_name, best = None, None
    for name in sorted(report.counterfactuals):
        other = report.counterfactuals[name]
        if best is None or other.score > best.score:
            best_name, best = name, other
    return {
        "contestant": contestant.name,
        "spec": contestant.spec,
        "scenario": report.scenario,
        "seed": seed,
        "engine": sim.engine.name,
        "score": report.score,
        "budget_spent": report.budget_spent,
        "cost": report.cost,
        "objectives_passed": sum(o.passed for o in report.objectives),
        "objectives_total": len(report.objectives),
        "passed": report.passed,
        "incident_minute": report.incident_minute,
        "time_to_mitigate_min": report.time_to_recovery_min,
        "best_counterfactual": best_name,
        "best_counterfactual_score": best.score if best is not None else None,
        "gap": (best.score - report.score) if best is not None else None,
        "actions": len(sim.actions),
        "refused": refused,
        "decisions": len(times),
        "decision_ms_mean": 1000.0 * statistics.fmean(times) if times else None,
        "decision_ms_max": 1000.0 * max(times) if times else None,
        "failure": failure,
    }


def play_task(task: tuple[int, Contestant, str, int, str | None, Settings, bool]) -> tuple[int, dict[str, Any]]:
    """A worker's run (a local process or a Dask worker): the task's index and its row."""
    index, contestant, scenario, seed, engine, settings, with_counterfactuals = task
    return index, play_run(contestant, scenario, seed, engine, settings, with_counterfactuals)


def run_arena(
    plan: ArenaPlan,
    executor: LocalExecutor | DaskExecutor | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[dict[str, Any]]:
    """Every run of ``plan`` on ``executor`` (None: here, one after another); the rows in the plan's order."""
    tasks = list(plan.tasks())
    work = cast(Work, play_task)
    done: Iterable[tuple[int, Any]] = (
        executor.map_unordered(tasks, work) if executor is not None else map(play_task, tasks)
    )
    rows: dict[int, dict[str, Any]] = {}
    for index, row in done:
        rows[index] = row
        if progress is not None:
            progress(len(rows), len(tasks))
    return [rows[i] for i in range(len(tasks))]


def _median(values: list[float]) -> float | None:
    return float(statistics.median(values)) if values else None


def aggregate(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per contestant over its scenarios and seeds, best mean score first (then the lower budget, then
    the name): means of the score, budget and cost; objectives met of all; the runs mitigated and their median
    time to mitigate; the mean gap to the best counterfactual; the decisions' wall-clock (mean and max)."""
    by: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by.setdefault(row["contestant"], []).append(row)
    out = []
    for name, mine in by.items():
        mitigated = [float(r["time_to_mitigate_min"]) for r in mine if r["time_to_mitigate_min"] is not None]
        gaps = [float(r["gap"]) for r in mine if r["gap"] is not None]
        decisions = sum(r["decisions"] for r in mine)
        timed = [r for r in mine if r["decisions"]]
        out.append(
            {
                "contestant": name,
                "spec": mine[0]["spec"],
                "runs": len(mine),
                "score_mean": statistics.fmean(r["score"] for r in mine),
                "score_min": min(r["score"] for r in mine),
                "budget_spent_mean": statistics.fmean(r["budget_spent"] for r in mine),
                "cost_mean": statistics.fmean(r["cost"] for r in mine),
                "objectives_passed": sum(r["objectives_passed"] for r in mine),
                "objectives_total": sum(r["objectives_total"] for r in mine),
                "runs_passed": sum(bool(r["passed"]) for r in mine),
                "mitigated": len(mitigated),
                "time_to_mitigate_median_min": _median(mitigated),
                "gap_mean": statistics.fmean(gaps) if gaps else None,
                "decisions": decisions,
                "decision_ms_mean": (
                    sum(r["decision_ms_mean"] * r["decisions"] for r in timed) / decisions if decisions else None
                ),
                "decision_ms_max": max((r["decision_ms_max"] for r in timed), default=None),
                "failures": sum(r["failure"] is not None for r in mine),
            }
        )
    out.sort(key=lambda a: (-a["score_mean"], a["budget_spent_mean"], a["contestant"]))
    return out


def scenario_detail(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same aggregate per contestant and scenario (the JSON's ``by_scenario``)."""
    scenarios = sorted({r["scenario"] for r in rows})
    out = []
    for scenario in scenarios:
        for line in aggregate([r for r in rows if r["scenario"] == scenario]):
            out.append({"scenario": scenario, **line})
    return out

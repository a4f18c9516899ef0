"""The batch engine: many runs of one scenario (one parameter set) advanced together.

Each run has its own seed and its own mulberry32, so run i of a batch gives the same minute records as
``Simulation(scenario, seed=seeds[i], …)`` with the same actions or policy, bit for bit (tests/test_batch.py
checks every field of every minute). There is no formula here: the minute is ``model.stages.minute_runs``,
the compiled loop over runs of the scalar engine's own compiled minute; operator actions go through the
control registry's compiled effects on each run's row (``model.effects.apply_runs``). This module only holds
the runs' state as arrays (row i = run i) and collects what the minutes report.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from oncallsim.batch.columns import Columns
from oncallsim.model import InvalidInput, MinuteRecord, Mulberry32, Params, RunPlan
from oncallsim.model.controls import CONTROL_SPECS, coerce_control_value, effect_events, stored_value
from oncallsim.model.effects import apply_runs
from oncallsim.model.events import KERNEL_EVENTS, Event
from oncallsim.model.fields import NUMERIC_FIELDS, REC, ST
from oncallsim.model.stages import minute_runs
from oncallsim.model.state import surge_of
from oncallsim.scenarios import Scenario, load_scenario
from oncallsim.simulation import MAX_SEED, Action, Simulation

__all__ = ["BatchRun"]

F = npt.NDArray[np.float64]
_DTYPES = {"int": np.int64, "bool": np.bool_, "float": np.float64}


class BatchRun:
    """Runs ``seeds`` of one scenario and parameter set, minute by minute, all at once."""

    def __init__(
        self,
        scenario: str | Scenario,
        seeds: Sequence[int],
        overrides: Mapping[str, Any] | None = None,
        noise: bool = True,
        minutes: int | None = None,
        clock: str | None = None,
        keep: Iterable[str] | None = None,
    ) -> None:
        self.scenario = load_scenario(scenario)
        self.seeds = list(seeds)
        self.overrides = dict(overrides or {})
        self.noise = noise
        for seed in self.seeds:
            if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
                raise InvalidInput("seed", f"must be a whole number from 0 to {MAX_SEED}, got {seed!r}")
        # One scalar Simulation validates everything and lays out the state; each run then makes its
        # scenario draws (the surge's shape) from its own generator, exactly as Simulation does.
        first = Simulation(
            self.scenario, seed=self.seeds[0], overrides=overrides, noise=noise, minutes=minutes, clock=clock
        )
        generators = [Mulberry32(seed) for seed in self.seeds]
        self.params: Params = first.params
        self.plans: list[RunPlan] = [self.scenario.build_plan(g, clock=clock, minutes=minutes) for g in generators]
        self.length = self.plans[0].minutes
        self.clock_start = self.plans[0].clock_start_min
        n = self.n = len(self.seeds)
        opening = first.state
        self.opening = opening.controls
        self.kernel = opening.kernel
        self.rng_states = np.array([g.get_state() for g in generators], dtype=np.int64)
        self.t = 0
        self.state: F = np.tile(opening.vec, (n, 1))
        self.state[:, ST.budget_left] = [plan.budget_start for plan in self.plans]
        self.budget: F = self.state[:, ST.budget_left].copy()  # each run's opening budget
        self.boot = np.tile(opening.boot, (n, 1))
        self.window: F = np.tile(opening.window, (n, 1))
        self.surges: F = np.array([surge_of(plan) for plan in self.plans])
        self.values: F = np.zeros((len(NUMERIC_FIELDS), n))  # field-major: one row per field
        self.slots = np.zeros((n, len(KERNEL_EVENTS)), dtype=np.int64)
        self.actions: list[list[Action]] = [[] for _ in range(n)]
        # what a vectorized policy reads: the last minute's values and the last four minutes' traffic
        self.last: dict[str, Any] | None = None
        self.request_history: list[F] = []
        self.columns = Columns(n, self.length, keep)

    @property
    def done(self) -> bool:
        return self.t >= self.length

    # --- the controls in force, per run ----------------------------------------------------------------

    def setting(self, name: str) -> npt.NDArray[Any]:
        """Every run's value of a setting, typed as the record types it."""
        dtype = _DTYPES[next(f.dtype for f in NUMERIC_FIELDS if f.name == name)]
        return self.state[:, getattr(ST, name)].astype(dtype)

    # --- the operator's inputs, run by run, through the control registry ---------------------------------

    def apply(self, actions: Mapping[int, Sequence[tuple[str, Any]]]) -> dict[int, list[Event]]:
        """Every run's inputs this minute, each run's in its order: validated here (once), logged, then applied
        to the runs' rows in one compiled call of the scalar engine's own effects."""
        runs, effects, indexes, stored, done = [], [], [], [], []
        for i, acts in actions.items():
            for name, raw in acts:
                value = coerce_control_value(name, raw)
                spec = CONTROL_SPECS[name]
                runs.append(i)
                effects.append(spec.effect)
                indexes.append(getattr(ST, name) if spec.is_setting else 0)
                stored.append(stored_value(spec, value))
                done.append((i, spec, value))
                self.actions[i].append(Action(self.t, name, value))
        if not runs:
            return {}
        codes = apply_runs(
            np.array(runs, dtype=np.int64), np.array(effects, dtype=np.int64), np.array(indexes, dtype=np.int64),
            np.array(stored), self.state, self.boot, self.kernel.params,
        ).tolist()  # fmt: skip
        events: dict[int, list[Event]] = {}
        for (i, spec, value), code in zip(done, codes, strict=True):
            events.setdefault(i, []).extend(effect_events(spec, value, code))
        return events

    def step(self, actions: Mapping[int, Sequence[tuple[str, Any]]] | None = None) -> None:
        """Compute minute ``t`` for every run; ``actions`` maps a run's index to its inputs this minute."""
        t = self.t
        events = self.apply(actions) if actions else {}
        k = self.kernel
        minute_runs(
            k.params, t, self.clock_start, int(k.flags[t]), self.surges, self.rng_states, self.noise,
            self.state, self.boot, self.window, self.values, self.slots, k.ln_factorial,
        )  # fmt: skip
        # float fields are views (the columns copy them; a policy reads them before the next minute)
        minute: dict[str, Any] = {
            f.name: self.values[j] if f.dtype == "float" else self.values[j].astype(_DTYPES[f.dtype])
            for j, f in enumerate(NUMERIC_FIELDS)
        }
        self.columns.write(t, (self.clock_start + t) % 1440, events, self.slots, **minute)
        self.last = minute
        self.request_history = [*self.request_history[-3:], self.values[REC.requests_per_s].copy()]
        self.t = t + 1

    def run(self, actions: Sequence[Sequence[Action]] | None = None, policy: Any = None) -> Columns:
        """Run to the end with per-run action logs and/or a vectorized policy (``oncallsim.batch.policies``)."""
        by_minute: dict[int, dict[int, list[tuple[str, Any]]]] = {}
        for i, log in enumerate(actions or []):
            for a in log:
                by_minute.setdefault(a.minute, {}).setdefault(i, []).append((a.control, a.value))
        if policy is not None:
            policy.reset(self)
        while not self.done:
            todo = by_minute.pop(self.t, {})
            if policy is not None:
                for i, acts in policy.decide(self).items():
                    todo.setdefault(i, []).extend(acts)
            self.step(todo)
        return self.columns

    def records(self, i: int) -> list[MinuteRecord]:
        return self.columns.records(i, self.t)

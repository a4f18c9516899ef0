"""The batch engine: many runs of one scenario (one parameter set) advanced together.

Each run has its own seed and its own mulberry32, so run i of a batch gives the same minute records as
``Simulation(scenario, seed=seeds[i], …)`` with the same actions or policy, bit for bit (tests/test_batch.py
checks every field of every minute). There is no formula here: the minute is ``model.stages.minute_runs``,
the compiled loop over runs of the scalar engine's own compiled minute; operator actions go through the
control registry's compiled effects on each run's row (``model.effects.apply_runs``). This module only holds
the runs' state as arrays (row i = run i) and collects what the minutes report.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from oncallsim.batch.columns import Columns
from oncallsim.model import InvalidInput, MinuteRecord, Mulberry32, Params, RunPlan
from oncallsim.model.controls import CONTROL_SPECS, coerce_control_value, effect_events, stored_value
from oncallsim.model.effects import PRESS_ROLLBACK, PRESS_WARMUP, apply_runs
from oncallsim.model.events import KERNEL_EVENTS, Event
from oncallsim.model.fields import NUMERIC_FIELDS, REC, ST
from oncallsim.model.stages import minute_runs
from oncallsim.model.state import surge_of
from oncallsim.policies.textbook import to_actions
from oncallsim.scenarios import Scenario, load_scenario
from oncallsim.simulation import MAX_SEED, Action, Simulation

__all__ = ["BatchRun", "Coded"]

F = npt.NDArray[np.float64]
_DTYPES = {"int": np.int64, "bool": np.bool_, "float": np.float64}
_CONTROL_NAMES = tuple(CONTROL_SPECS)  # a control's code is its place in the registry


class Coded(NamedTuple):
    """Decisions as arrays, one entry per action in order (runs ascending, each run's actions in its order):
    the run, the control's code (its place in ``CONTROL_SPECS``) and the value a compiled policy wrote (a
    float: whole numbers and switches as 0/1, buttons ignored). ``BatchRun.step`` takes it as it takes a
    mapping of (control, value) pairs, with the same result, without a Python object per action."""

    runs: npt.NDArray[np.int64]
    codes: npt.NDArray[np.int64]
    values: npt.NDArray[np.float64]

    def typed(self, k: int) -> tuple[str, Any]:
        """Entry k as the (control, value) pair the registry expects, as the compiled playbooks' ``to_actions``
        types it (a whole number as int, a switch as bool, a button without value)."""
        return to_actions(self.codes[k : k + 1], self.values[k : k + 1], 1)[0]

    def as_mapping(self) -> dict[int, list[tuple[str, Any]]]:
        out: dict[int, list[tuple[str, Any]]] = {}
        for k, i in enumerate(self.runs.tolist()):
            out.setdefault(i, []).append(self.typed(k))
        return out


def _fast_table() -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[Any]]:
    """Per control code: whether the array path takes it (the minute state's settings and its two buttons),
    its effect, its place in the state vector, and its kind's number (0 float, 1 int, 2 bool, 3 button) and
    range for the checks ``coerce_control_value`` makes."""
    fast = np.zeros(len(_CONTROL_NAMES), dtype=np.bool_)
    effects = np.zeros(len(_CONTROL_NAMES), dtype=np.int64)
    indexes = np.zeros(len(_CONTROL_NAMES), dtype=np.int64)
    kinds = np.zeros((len(_CONTROL_NAMES), 3))
    for code, name in enumerate(_CONTROL_NAMES):
        spec = CONTROL_SPECS[name]
        effects[code] = spec.effect
        if spec.kind == "button":
            fast[code] = spec.effect in (PRESS_WARMUP, PRESS_ROLLBACK)
            kinds[code] = (3, -math.inf, math.inf)
        elif spec.in_vector and spec.kind not in ("choice", "instance"):
            fast[code] = True
            indexes[code] = getattr(ST, name)
            number = {"int": 1, "bool": 2}.get(spec.kind, 0)
            low = -math.inf if spec.min is None else float(spec.min)
            high = math.inf if spec.max is None else float(spec.max)
            kinds[code] = (number, low, high)
    return fast, effects, indexes, kinds


_FAST, _EFFECTS, _INDEXES, _KINDS = _fast_table()


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
        self._actions: list[list[Action]] = [[] for _ in range(n)]
        self._coded: list[tuple[int, Coded]] = []  # actions applied as arrays, logged as Actions when asked for
        # what a vectorized policy reads: the last minute's values and the last four minutes' traffic
        self.last: dict[str, Any] | None = None
        self.request_history: list[F] = []
        self.columns = Columns(n, self.length, keep)
        # the operator's events are stored only where records can be read back (every field kept)
        self._events_wanted = len(self.columns.keep) == len(NUMERIC_FIELDS)

    @property
    def done(self) -> bool:
        return self.t >= self.length

    @property
    def actions(self) -> list[list[Action]]:
        """Each run's action log, in order (what ``Simulation.actions`` holds for the same run)."""
        for t, coded in self._coded:
            for k, i in enumerate(coded.runs.tolist()):
                name, raw = coded.typed(k)
                self._actions[i].append(Action(t, name, coerce_control_value(name, raw)))
        self._coded.clear()
        return self._actions

    def action_minutes(self) -> list[list[int]]:
        """Each run's action minutes, in order (``[a.minute for a in log]`` per log, without the Actions)."""
        out = [[a.minute for a in log] for log in self._actions]
        if self._coded:
            runs = np.concatenate([c.runs for _, c in self._coded])
            minutes = np.concatenate([np.full(len(c.runs), t, dtype=np.int64) for t, c in self._coded])
            order = np.argsort(runs, kind="stable")
            runs, minutes = runs[order], minutes[order]
            bounds = np.flatnonzero(np.diff(runs)) + 1
            for i, m in zip(runs[np.r_[0, bounds]].tolist(), np.split(minutes, bounds), strict=True):
                out[i].extend(m.tolist())
        return out

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
        logs = self.actions  # any actions applied as arrays are logged first, to keep the order
        for i, acts in actions.items():
            for name, raw in acts:
                value = coerce_control_value(name, raw)
                spec = CONTROL_SPECS[name]
                runs.append(i)
                effects.append(spec.effect)
                indexes.append(getattr(ST, name) if spec.is_setting else 0)
                stored.append(stored_value(spec, value))
                done.append((i, spec, value))
                logs[i].append(Action(self.t, name, value))
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

    def apply_coded(self, coded: Coded) -> dict[int, list[Event]]:
        """``apply`` for decisions as arrays: the same checks (``coerce_control_value``'s, done on the arrays),
        the same compiled effects, the same log. Anything the arrays cannot check goes through ``apply``."""
        if not len(coded.runs):
            return {}
        codes = coded.codes
        fast = _FAST[codes]
        kinds = _KINDS[codes]
        number, low, high = kinds[:, 0], kinds[:, 1], kinds[:, 2]
        values = coded.values
        finite = np.isfinite(values) | (number >= 2)  # a switch or a button takes any number
        if not (fast.all() and finite.all()):
            return self.apply(coded.as_mapping())
        stored = np.where(number == 1, np.trunc(values) + 0.0, values)  # float(int(value)): never -0.0
        stored = np.where(number == 2, (values != 0.0).astype(np.float64), stored)
        stored = np.where(number == 3, 0.0, stored)
        if not ((low <= stored) & (stored <= high)).all():
            return self.apply(coded.as_mapping())  # out of range: refused there, naming the control
        out = apply_runs(
            coded.runs, _EFFECTS[codes], _INDEXES[codes], stored, self.state, self.boot, self.kernel.params
        )
        self._coded.append((self.t, coded))
        if not self._events_wanted:
            return {}
        events: dict[int, list[Event]] = {}
        for k, (i, code) in enumerate(zip(coded.runs.tolist(), out.tolist(), strict=True)):
            name, raw = coded.typed(k)
            events.setdefault(i, []).extend(effect_events(CONTROL_SPECS[name], coerce_control_value(name, raw), code))
        return events

    def step(self, actions: Mapping[int, Sequence[tuple[str, Any]]] | Coded | None = None) -> None:
        """Compute minute ``t`` for every run; ``actions`` maps a run's index to its inputs this minute (or
        is a ``Coded`` set of decisions)."""
        t = self.t
        if isinstance(actions, Coded):
            events = self.apply_coded(actions)
        else:
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
        coded = getattr(policy, "decide_coded", None)
        while not self.done:
            todo = by_minute.pop(self.t, {})
            if coded is not None and not todo:
                self.step(coded(self))
                continue
            if policy is not None:
                decided = coded(self).as_mapping() if coded is not None else policy.decide(self)
                for i, acts in decided.items():
                    todo.setdefault(i, []).extend(acts)
            self.step(todo)
        return self.columns

    def records(self, i: int) -> list[MinuteRecord]:
        return self.columns.records(i, self.t)

"""The batch engine: many runs of one scenario (one parameter set) advanced together with numpy.

Each run has its own seed and its own mulberry32, so run i of a batch gives the same minute records as
``Simulation(scenario, seed=seeds[i], …)`` with the same actions or policy (tests/test_batch.py checks every
field of every minute). The minute's arithmetic mirrors ``oncallsim.model.step`` line by line, vectorized over
runs; operator actions are rare, so they are applied run by run with the scalar model's own ``apply_actions``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from oncallsim.batch.columns import Columns
from oncallsim.batch.queueing import queue
from oncallsim.batch.rng import Mulberry32Array
from oncallsim.model import (
    CONTROL_SPECS,
    Controls,
    InvalidInput,
    MinuteRecord,
    Mulberry32,
    Params,
    RunPlan,
    State,
    apply_actions,
)
from oncallsim.model import events as ev
from oncallsim.model.controls import coerce_control_value
from oncallsim.model.fleet import Fleet
from oncallsim.model.traffic import expected_rate
from oncallsim.scenarios import Scenario, load_scenario
from oncallsim.simulation import MAX_SEED, Action, Simulation

__all__ = ["BatchRun"]

F = npt.NDArray[np.float64]
I = npt.NDArray[np.int64]  # noqa: E741
B = npt.NDArray[np.bool_]
_CEIL_SLACK = 1e-9


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
        self.minutes_override = minutes
        self.clock_override = clock
        # One scalar Simulation validates everything; each run then makes its scenario draws (the surge's
        # shape) from its own generator, exactly as Simulation does.
        for seed in self.seeds:
            if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
                raise InvalidInput("seed", f"must be a whole number from 0 to {MAX_SEED}, got {seed!r}")
        first = Simulation(
            self.scenario, seed=self.seeds[0], overrides=overrides, noise=noise, minutes=minutes, clock=clock
        )
        generators = [Mulberry32(seed) for seed in self.seeds]
        self.params: Params = first.params
        self.plans: list[RunPlan] = [self.scenario.build_plan(g, clock=clock, minutes=minutes) for g in generators]
        self.length = self.plans[0].minutes
        self.clock_start = self.plans[0].clock_start_min
        n = self.n = len(self.seeds)
        p = self.params
        opening = self.opening = first.state.controls
        self.rng = Mulberry32Array([g.get_state() for g in generators])
        self.t = 0
        # controls
        self.floor: I = np.full(n, opening.floor, dtype=np.int64)
        self.autoscaler: B = np.full(n, opening.autoscaler)
        self.target: F = np.full(n, opening.target_utilization)
        self.ttl: F = np.full(n, opening.ttl_s)
        self.shed: F = np.full(n, opening.shed_share)
        self.rec: B = np.full(n, opening.recommendations)
        # fleet: serving, and booting instances counted by minutes left (column k = k minutes left)
        self.serving: I = np.full(n, opening.floor, dtype=np.int64)
        self.booting: I = np.zeros((n, max(p.boot_delay_min, 0) + 1), dtype=np.int64)
        self.quiet: I = np.zeros(n, dtype=np.int64)
        # cache, deploy, rollback, SLO, money
        self.warm: F = np.ones(n)
        self.warmup_left: I = np.zeros(n, dtype=np.int64)
        self.bad: F = np.zeros(n)
        self.deploying: B = np.zeros(n, dtype=bool)
        self.rollback_left: I = np.zeros(n, dtype=np.int64)
        self.window_len = max(p.burn_long_window_min, p.burn_short_window_min)
        self.window: F = np.zeros((n, self.window_len))  # chronological: oldest first
        self.firing: B = np.zeros(n, dtype=bool)
        self.budget: F = np.array([plan.budget_start for plan in self.plans])
        self.cost: F = np.zeros(n)
        surges = [plan.surge for plan in self.plans]
        self.has_surge = any(s is not None for s in surges)
        if self.has_surge:
            self.onset = np.array([s.onset_min if s else np.inf for s in surges])
            self.peak = np.array([s.peak if s else 1.0 for s in surges])
            self.rise = np.array([s.rise_min if s else 1.0 for s in surges])
            self.decay = np.array([s.decay_min if s else 1.0 for s in surges])
        self.deploy_minutes = self.plans[0].deploy_minutes
        self.flush_minutes = self.plans[0].flush_minutes
        self.actions: list[list[Action]] = [[] for _ in range(n)]
        # what a vectorized policy reads: the last minute's values and the last four minutes' traffic
        self.last: dict[str, Any] | None = None
        self.request_history: list[F] = []
        self.columns = Columns(n, self.length, keep)

    @property
    def done(self) -> bool:
        return self.t >= self.length

    # --- the operator's inputs, run by run, through the scalar model's own code ------------------------

    def controls_of(self, i: int) -> Controls:
        """Run i's controls (values that came from validated actions: no second validation)."""
        c = self.opening
        for name, value in (
            ("floor", int(self.floor[i])),
            ("autoscaler", bool(self.autoscaler[i])),
            ("target_utilization", float(self.target[i])),
            ("ttl_s", float(self.ttl[i])),
            ("shed_share", float(self.shed[i])),
            ("recommendations", bool(self.rec[i])),
        ):
            if getattr(c, name) != value:
                c = c.with_value(name, value)
        return c

    def _fleet_of(self, i: int) -> Fleet:
        booting: tuple[int, ...] = ()
        for k in range(1, self.booting.shape[1]):
            booting += (k,) * int(self.booting[i, k])
        return Fleet(int(self.serving[i]), booting, int(self.quiet[i]))

    def apply(self, i: int, actions: Sequence[tuple[str, Any]]) -> list[str]:
        state = State(
            minute=self.t,
            plan=self.plans[i],
            controls=self.controls_of(i),
            fleet=self._fleet_of(i),
            warmup_left=int(self.warmup_left[i]),
            rollback_left=int(self.rollback_left[i]),
        )
        state, events = apply_actions(state, actions, self.params)
        c = state.controls
        self.floor[i], self.autoscaler[i], self.target[i] = c.floor, c.autoscaler, c.target_utilization
        self.ttl[i], self.shed[i], self.rec[i] = c.ttl_s, c.shed_share, c.recommendations
        self.serving[i] = state.fleet.serving
        self.booting[i, :] = 0
        for k in state.fleet.booting:
            self.booting[i, k] += 1
        self.quiet[i] = state.fleet.quiet_minutes
        self.warmup_left[i], self.rollback_left[i] = state.warmup_left, state.rollback_left
        self.actions[i].extend(Action(self.t, name, value) for name, value in actions)
        return events

    def apply_all(self, actions: Mapping[int, Sequence[tuple[str, Any]]]) -> dict[int, list[str]]:
        """Every run's inputs, in each run's order: the k-th inputs of all runs together, grouped by control.

        Common settings and buttons are applied as arrays (the same arithmetic and events as ``apply_actions``);
        the autoscaler switch, and anything on a run whose autoscaler is off, go through the scalar model.
        """
        events: dict[int, list[str]] = {}
        slow = {i: list(acts) for i, acts in actions.items() if acts and not self.autoscaler[i]}
        for i, todo in slow.items():
            events[i] = self.apply(i, todo)
        fast = {i: list(acts) for i, acts in actions.items() if acts and i not in slow}
        depth = max((len(todo) for todo in fast.values()), default=0)
        for k in range(depth):
            groups: dict[str, list[tuple[int, Any]]] = {}
            for i, todo in fast.items():
                if k < len(todo):
                    groups.setdefault(todo[k][0], []).append((i, todo[k][1]))
            for control, group in groups.items():
                # the autoscaler switch, or a run whose autoscaler is now off: the scalar model's own rules
                scalar = control == "autoscaler" or control not in CONTROL_SPECS
                items = [(i, v) for i, v in group if not scalar and self.autoscaler[i]]
                for i, value in group:
                    if scalar or not self.autoscaler[i]:
                        events.setdefault(i, []).extend(self.apply(i, [(control, value)]))
                if not items:
                    continue
                idx = np.array([i for i, _ in items], dtype=np.int64)
                values = [coerce_control_value(control, v) for _, v in items]
                for i, v in zip(idx, values, strict=True):
                    self.actions[int(i)].append(Action(self.t, control, v))
                for i, text in zip(idx, self._apply_vector(control, idx, values), strict=True):
                    events.setdefault(int(i), []).extend(text)
        return events

    def _apply_vector(self, control: str, idx: I, values: list[Any]) -> list[list[str]]:
        p = self.params
        if control == "warmup":
            running = self.warmup_left[idx] > 0
            self.warmup_left[idx] = np.where(running, self.warmup_left[idx], p.warmup_minutes)
            return [[ev.WARMUP_RUNNING if r else ev.WARMUP_STARTED] for r in running]
        if control == "rollback":
            again = self.rollback_left[idx] > 0
            self.rollback_left[idx] = p.rollback_minutes
            return [[ev.ROLLBACK_RESTARTED if r else ev.ROLLBACK_STARTED] for r in again]
        texts = [[ev.setting(control, v)] for v in values]
        array = np.array(values)
        if control == "floor":
            self.floor[idx] = array
            size = self.serving[idx] + self.booting[idx].sum(axis=1)
            started = np.maximum(0, array - size)
            if p.boot_delay_min <= 0:
                self.serving[idx] += started
            else:
                self.booting[idx, p.boot_delay_min] += started
            for text, n in zip(texts, started, strict=True):
                if n > 0:
                    text.append(ev.floor_raised(int(n)))
        elif control == "target_utilization":
            self.target[idx] = array
        elif control == "ttl_s":
            self.ttl[idx] = array
        elif control == "shed_share":
            self.shed[idx] = array
        elif control == "recommendations":
            self.rec[idx] = array
        return texts

    # --- one minute for every run ----------------------------------------------------------------------

    def step(self, actions: Mapping[int, Sequence[tuple[str, Any]]] | None = None) -> None:
        """Compute minute ``t`` for every run; ``actions`` maps a run's index to its inputs this minute."""
        p = self.params
        n = self.n
        t = self.t
        events = self.apply_all(actions or {})

        def note(mask: B, text: str | Any, counts: I | None = None) -> None:
            """Add an event to the runs in ``mask``; ``text`` may be a function of that run's count."""
            for i in np.flatnonzero(mask):
                if isinstance(text, str):
                    events.setdefault(int(i), []).append(text)
                else:
                    assert counts is not None
                    events.setdefault(int(i), []).append(text(int(counts[i])))

        # 2. the scenario's own events
        warm = self.warm.copy()
        bad = self.bad.copy()
        deploying = self.deploying.copy()
        if t in self.deploy_minutes:
            deploying[:] = True
            bad = np.minimum(1.0, bad + p.rollout_step)
            note(np.ones(n, dtype=bool), ev.DEPLOY_STARTED)
        if t in self.flush_minutes:
            warm[:] = 0.0
            note(np.ones(n, dtype=bool), ev.FLUSHED)

        # 3. the minute
        expected: F = expected_rate(t, self.clock_start, p, None) * np.ones(n) * self.surge_factor(t)
        if self.noise:
            per_minute = 60.0 * expected
            z_count, z_scale = self.rng.normal_pair()
            count = (per_minute + np.sqrt(per_minute) * z_count) * (1.0 + p.traffic_noise_cv * z_scale)
            requests = np.maximum(0.0, count) / 60.0
        else:
            requests = expected
        shed = self.shed.copy()
        admitted = requests * (1.0 - p.low_priority_share * shed)
        ttl = self.ttl.copy()
        rt = admitted / p.hot_objects * ttl
        hit = warm * rt / (1.0 + rt)
        warmup_active = self.warmup_left > 0
        rec = self.rec.copy()
        q = p.queries_per_request + np.where(rec, p.feature_queries_per_request, 0.0)
        demand = admitted * q * (1.0 - hit)
        demand = np.where(warmup_active, demand + p.warmup_db_qps, demand)
        rho = demand / p.db_capacity_qps
        with np.errstate(divide="ignore"):
            query_ms = np.where(
                rho >= 1.0, p.db_max_query_ms, np.minimum(p.db_max_query_ms, p.db_base_query_ms / (1.0 - rho))
            )
        app_ms = p.app_time_ms + np.where(rec, p.feature_app_time_ms, 0.0)
        service_ms = app_ms * (1.0 + (p.bad_build_cpu_factor - 1.0) * bad) + (1.0 - hit) * q * query_ms
        service_s = service_ms / 1000.0
        serving = self.serving.copy()
        booting_now = self.booting.sum(axis=1)
        servers = serving * p.workers_per_instance
        wait, timeout, overload, p99_s, util = queue(admitted, service_s, servers, p.timeout_s)
        survived = 1.0 - overload
        e_timeout = survived * timeout
        e_bad = survived * (1.0 - timeout) * p.bad_build_error_rate * bad
        error_rate = overload + e_timeout + e_bad

        if t == 0:
            self.window[:] = error_rate[:, None]
        else:
            self.window[:, :-1] = self.window[:, 1:]
            self.window[:, -1] = error_rate
        burn = error_rate / p.error_budget
        burn_1h = window_burn(self.window, p.burn_long_window_min, p.error_budget)
        burn_5m = window_burn(self.window, p.burn_short_window_min, p.error_budget)
        budget = self.budget - burn / p.budget_period_min
        threshold = p.page_burn_threshold
        firing = np.where(self.firing, burn_5m >= threshold, (burn_1h >= threshold) & (burn_5m >= threshold))
        note(firing & ~self.firing, ev.PAGE_FIRED)
        note(self.firing & ~firing, ev.PAGE_CLEARED)
        rolling_back = self.rollback_left > 0
        size = serving + booting_now
        cost_per_hour = p.instance_price_per_hour * size * np.where(rolling_back, p.rollback_cost_factor, 1.0)
        cost = self.cost + cost_per_hour / 60.0

        # 4. advance
        f_db = np.where(demand <= p.db_capacity_qps, 1.0, p.db_capacity_qps / np.maximum(demand, 1e-300))
        next_warm = warm + (1.0 - warm) * (1.0 - math.exp(-1.0 / p.cache_refill_tau_min)) * f_db
        next_warm = np.where(warmup_active, next_warm + p.warmup_step * f_db, next_warm)
        next_warm = np.minimum(1.0, next_warm)
        warmup_left = np.where(warmup_active, self.warmup_left - 1, self.warmup_left)
        note(warmup_active & (warmup_left == 0), ev.WARMUP_FINISHED)
        next_bad = np.where(deploying, np.minimum(1.0, bad + p.rollout_step), bad)
        finished_deploy = deploying & (next_bad >= 1.0)
        note(finished_deploy, ev.DEPLOY_FINISHED)
        deploying = deploying & ~finished_deploy
        rollback_left = np.where(rolling_back, self.rollback_left - 1, self.rollback_left)
        ready_rollback = rolling_back & (rollback_left == 0)
        next_bad = np.where(ready_rollback, 0.0, next_bad)
        deploying = deploying & ~ready_rollback
        note(ready_rollback, ev.ROLLBACK_READY)
        # boot countdown
        ready = self.booting[:, 1] if self.booting.shape[1] > 1 else np.zeros(n, dtype=np.int64)
        next_serving = serving + ready
        next_booting = np.zeros_like(self.booting)
        next_booting[:, 1:-1] = self.booting[:, 2:]  # column 0 stays empty: those serve from the next minute
        note(ready > 0, ev.instances_ready, ready)
        # autoscaler
        want = np.ceil(serving * util / self.target - _CEIL_SLACK).astype(np.int64)
        desired = np.minimum(p.max_fleet, np.maximum(self.floor, want))
        desired = np.where(self.autoscaler, desired, self.floor)
        next_size = next_serving + next_booting.sum(axis=1)
        any_booting = next_booting.sum(axis=1) > 0
        grow = self.autoscaler & (desired > next_size)
        shrink = self.autoscaler & (desired < next_size)
        quiet = np.where(shrink, self.quiet + 1, 0)
        start = grow & ~any_booting
        started = np.where(start, desired - next_size, 0)
        if p.boot_delay_min <= 0:
            next_serving = next_serving + started
        else:
            next_booting[:, p.boot_delay_min] += started
        note(start, ev.scaled_out, started)
        scale_in = shrink & (quiet >= p.scale_in_quiet_minutes)
        step_in = np.maximum(1, np.floor(p.scale_in_max_share * next_size).astype(np.int64))
        remove = np.where(scale_in, np.minimum(np.minimum(next_size - desired, step_in), next_serving), 0)
        next_serving = next_serving - remove
        quiet = np.where(scale_in, 0, quiet)
        note(scale_in, ev.scaled_in, remove)
        # the autoscaler off keeps quiet as it was (the scalar model leaves the fleet untouched)
        quiet = np.where(self.autoscaler, quiet, self.quiet)

        # Every value of the minute, once: the columns store them, a policy reads the last minute from them,
        # and the outcome accumulator is fed from them.
        minute = {
            "expected_requests_per_s": expected,
            "requests_per_s": requests,
            "admitted_per_s": admitted,
            "shed_share": shed,
            "shed_per_s": requests - admitted,
            "ttl_s": ttl,
            "recommendations": rec,
            "cache_warm": warm,
            "cache_hit": hit,
            "mean_age_s": ttl / 2.0,
            "warmup_active": warmup_active,
            "db_demand_qps": demand,
            "db_utilization": rho,
            "query_time_ms": query_ms,
            "service_time_ms": service_ms,
            "servers": servers,
            "capacity_per_s": np.where(service_s > 0, servers / np.where(service_s > 0, service_s, 1.0), 0.0),
            "erlangs": admitted * service_s,
            "utilization": util,
            "wait_probability": wait,
            "timeout_share": timeout,
            "overload_share": overload,
            "bad_build_share": bad,
            "error_rate": error_rate,
            "error_overload": overload,
            "error_timeout": e_timeout,
            "error_bad_build": e_bad,
            "p99_ms": p99_s * 1000.0,
            "burn": burn,
            "burn_1h": burn_1h,
            "burn_5m": burn_5m,
            "budget_left": budget,
            "page_firing": firing,
            "serving": serving,
            "booting": booting_now,
            "desired": desired,
            "floor": self.floor.copy(),
            "autoscaler": self.autoscaler.copy(),
            "target_utilization": self.target.copy(),
            "rollback_active": rolling_back,
            "cost_per_hour": cost_per_hour,
            "cost_so_far": cost,
            "recommendations_available": np.where(rec, 1.0, 0.0),
        }
        self.columns.write(t, clock=(self.clock_start + t) % 1440, events=events, **minute)
        self.last = self.feed = minute
        self.request_history = [*self.request_history[-3:], requests]
        self.warm, self.warmup_left, self.bad, self.deploying = next_warm, warmup_left, next_bad, deploying
        self.rollback_left, self.firing, self.budget, self.cost = rollback_left, firing, budget, cost
        self.serving, self.booting, self.quiet = next_serving, next_booting, quiet
        self.t = t + 1

    def surge_factor(self, t: int) -> F | float:
        """``Surge.factor`` for every run (1 where a run has no surge or it has not begun)."""
        if not self.has_surge:
            return 1.0
        since = t - self.onset
        rising = 1.0 + (self.peak - 1.0) * since / self.rise
        decaying = 1.0 + (self.peak - 1.0) * np.exp(-(since - self.rise) / self.decay)
        return np.where(t < self.onset, 1.0, np.where(since < self.rise, rising, decaying))

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


def window_burn(window: F, minutes: int, budget: float) -> F:
    """Mean error rate over the last ``minutes`` columns, as a multiple of the budget (summed oldest first)."""
    total = np.zeros(window.shape[0])
    for k in range(window.shape[1] - minutes, window.shape[1]):
        total += window[:, k]
    return total / minutes / budget

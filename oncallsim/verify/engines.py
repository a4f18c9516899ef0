"""Full pipeline: every built-in scenario on both engines, same seed, same traffic, same policy.

Both engines draw the minute's traffic from the run's generator in the same way, so a pair of runs differs
only in the physics. What is compared per (scenario, policy), over seeds: the error rate (mean over the run
and the mean per-minute |difference|), the median p99, the budget spent, and — on the request engine's own
measured minutes — the wait probability against Erlang C of its measured load a and servers N (the M/G/N
check: service there is CPU plus a random number of reads, not exponential).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from oncallsim.model.queueing import erlang_c
from oncallsim.policies import load_policy
from oncallsim.scenarios import builtin_scenarios
from oncallsim.simulation import Simulation

__all__ = ["POLICIES", "EngineRow", "Timeline", "compare_scenarios", "timeline"]

POLICIES = ("hands-off", "textbook")
FIELDS = (
    "error_rate",
    "p99_ms",
    "cache_hit",
    "wait_probability",
    "erlangs",
    "servers",
    "budget_left",
    "admitted_per_s",
    "db_utilization",
)
EXTRAS = ("queue_at_end",)  # the request engine's own measures (0 on the minute model, which has no queue)


class Timeline(NamedTuple):
    """Per-minute fields of one run on each engine: {field: (minute values, request values)}."""

    scenario: str
    policy: str
    seed: int
    fields: dict[str, tuple[np.ndarray, np.ndarray]]
    budget_start: float


class EngineRow(NamedTuple):
    scenario: str
    policy: str
    seeds: int
    minutes: int
    error_minute: float  # mean error rate over the run
    error_request: float
    error_abs_diff: float  # mean over minutes of |request − minute|
    p99_minute_ms: float  # median over minutes
    p99_request_ms: float
    budget_minute: float  # budget spent (share of the 30-day budget), mean over seeds
    budget_request: float
    wait_ratio: float  # request engine: Σ measured wait probability / Σ Erlang C(measured a, N), queueing minutes
    queueing_minutes: int  # minutes with Erlang C ≥ 1 % and a < 0.95 N (elsewhere both are ≈ 0 or saturated)


def timeline(scenario: str, policy: str, seed: int, minutes: int | None = None) -> Timeline:
    """One scenario, one policy, one seed, on both engines."""
    out: dict[str, list[np.ndarray]] = {f: [] for f in FIELDS}
    budget = 1.0
    for engine in ("minute", "request"):
        sim = Simulation(scenario, seed=seed, engine=engine, minutes=minutes)
        budget = sim.scenario.budget_start
        recs = sim.run(policy=None if policy == "hands-off" else load_policy(policy))
        for f in FIELDS:
            out[f].append(np.array([float(getattr(r, f)) for r in recs]))
        for f in EXTRAS:
            out.setdefault(f, []).append(np.array([float((r.extras or {}).get(f, 0.0)) for r in recs]))
    return Timeline(scenario, policy, seed, {f: (v[0], v[1]) for f, v in out.items()}, budget)


def _row(runs: list[Timeline]) -> EngineRow:
    def both(field: str) -> tuple[np.ndarray, np.ndarray]:
        return (np.concatenate([r.fields[field][0] for r in runs]), np.concatenate([r.fields[field][1] for r in runs]))

    err_m, err_r = both("error_rate")
    p99_m, p99_r = both("p99_ms")
    spent = [[r.budget_start - r.fields["budget_left"][k][-1] for r in runs] for k in (0, 1)]
    wait_r = both("wait_probability")[1]
    a, n = both("erlangs")[1], both("servers")[1]
    stable = (n > 0) & (a < 0.95 * n)
    c = np.array([erlang_c(x, int(k)) if ok else 0.0 for x, k, ok in zip(a, n, stable, strict=True)])
    queueing = stable & (c >= 0.01)
    ratio = float(wait_r[queueing].sum() / c[queueing].sum()) if queueing.any() else float("nan")
    return EngineRow(
        runs[0].scenario,
        runs[0].policy,
        len(runs),
        len(err_m) // len(runs),
        float(err_m.mean()),
        float(err_r.mean()),
        float(np.abs(err_r - err_m).mean()),
        float(np.median(p99_m)),
        float(np.median(p99_r)),
        float(np.mean(spent[0])),
        float(np.mean(spent[1])),
        ratio,
        int(queueing.sum()),
    )


def compare_scenarios(quick: bool) -> tuple[list[EngineRow], dict[tuple[str, str, int], Timeline]]:
    """Every built-in scenario × policy: seeds 1–3 over the whole run (seed 1, the first half hour when quick)."""
    seeds = (1,) if quick else (1, 2, 3)
    minutes = 30 if quick else None
    rows, runs = [], {}
    for scenario, spec in builtin_scenarios().items():
        if spec.engine == "request":  # a fleet scenario: the minute model has no instances to compare
            continue
        for policy in POLICIES:
            group = [timeline(scenario, policy, s, minutes) for s in seeds]
            runs.update({(scenario, policy, t.seed): t for t in group})
            rows.append(_row(group))
    return rows, runs

"""Many seeds of one scenario and parameter set → one row per run: the seed, the outcome and the score card.

Built-in policies take the vectorized engine; any other policy takes the scalar ``Simulation``, run by run,
with the same rows as the result (the path is chosen transparently).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from oncallsim.batch.engine import BatchRun
from oncallsim.batch.policies import vectorized
from oncallsim.debrief import run_outcome
from oncallsim.debrief.accumulate import OutcomeAccumulator, scenario_incident_start
from oncallsim.debrief.scorecard import p99_targets, verdict
from oncallsim.debrief.summary import Outcome
from oncallsim.model.engine import DEFAULT_ENGINE, get_engine
from oncallsim.policies import load_policy
from oncallsim.scenarios import Scenario, load_scenario
from oncallsim.simulation import Simulation

__all__ = ["OUTCOME_COLUMNS", "run_seeds"]

OUTCOME_COLUMNS = (
    "budget_spent",
    "budget_left",
    "cost",
    "worst_p99_ms",
    "minutes_over_latency_target",
    "shed_requests",
    "mean_staleness_s",
    "max_db_utilization",
    "minutes_db_over_capacity",
    "page_minute",
    "time_to_first_mitigation_min",
    "time_to_recovery_min",
)


def run_seeds(
    scenario: str | Scenario,
    seeds: Sequence[int],
    policy: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    noise: bool = True,
    minutes: int | None = None,
    clock: str | None = None,
    engine: str | None = None,
) -> list[dict[str, Any]]:
    """One row per seed (in the order given): outcome, budget by cause, objectives passed and their values.

    The vectorized path needs a vectorized engine and a vectorized policy; otherwise runs go one by one.
    ``engine`` None: the scenario's, else the minute model.
    """
    spec = load_scenario(scenario)
    engine = engine or spec.engine or DEFAULT_ENGINE
    vector = vectorized(policy) if get_engine(engine).vectorized else None
    if vector is not None:
        batch = BatchRun(spec, seeds, overrides, noise, minutes, clock, keep=())
        acc = OutcomeAccumulator(batch.n, batch.params, batch.budget.copy(), spec.latency_target_ms, p99_targets(spec))
        vector.reset(batch)
        decide = getattr(vector, "decide_coded", vector.decide)  # decisions as arrays where the policy has them
        while not batch.done:
            t = batch.t
            batch.step(decide(batch))
            assert batch.last is not None  # a minute was just computed
            acc.add(t, batch.last)
        starts = [scenario_incident_start(plan, batch.length) for plan in batch.plans]
        outcomes = acc.finish(starts, batch.action_minutes())
    else:
        outcomes = []
        for seed in seeds:
            sim = Simulation(
                spec, seed=seed, overrides=overrides, noise=noise, minutes=minutes, clock=clock, engine=engine
            )
            sim.run(policy=load_policy(policy) if policy is not None else None)
            outcomes.append(run_outcome(sim).model_dump())
    return [row(spec, seed, o) for seed, o in zip(seeds, outcomes, strict=True)]


def row(spec: Scenario, seed: int, values: dict[str, Any]) -> dict[str, Any]:
    result = Outcome(**values)
    out: dict[str, Any] = {"seed": seed}
    for name in OUTCOME_COLUMNS:
        value = getattr(result, name)
        out[name] = float("nan") if value is None else value
    for cause, value in result.budget_spent_by_cause.items():
        out[f"budget_spent_{cause}"] = value
    judged = [verdict(o, result) for o in spec.objectives]  # passed and value (no label needed)
    out["objectives_passed"] = sum(passed for passed, _, _ in judged)
    out["objectives_total"] = len(judged)
    out["passed"] = all(passed for passed, _, _ in judged)
    for k, (passed, value, _target) in enumerate(judged):
        out[f"objective_{k + 1}_passed"] = passed
        out[f"objective_{k + 1}_value"] = float("nan") if value is None else float(value)
    return out

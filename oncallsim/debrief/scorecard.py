"""The score card: each of the scenario's objectives, passed or failed, with the measured value."""

from __future__ import annotations

from pydantic import BaseModel

from oncallsim.debrief.summary import Outcome
from oncallsim.scenarios import Scenario
from oncallsim.scenarios.spec import (
    BudgetLeftObjective,
    BudgetSpentObjective,
    CostObjective,
    DatabaseObjective,
    LatencyObjective,
    Objective,
    RecoveryObjective,
    TurnedAwayObjective,
)

__all__ = ["ObjectiveResult", "judge", "p99_targets", "score"]


class ObjectiveResult(BaseModel):
    name: str
    passed: bool
    value: float | None
    target: float
    kind: str = ""  # the objective's kind, as in the scenario file
    template: str = ""  # the label as a translatable template, filled with ``args``
    args: dict[str, str] = {}


def score(scenario: Scenario, result: Outcome) -> list[ObjectiveResult]:
    return [judge(o, result) for o in scenario.objectives]


def p99_targets(scenario: Scenario) -> list[float]:
    """The latency targets the scenario's objectives judge (the outcome counts minutes under each)."""
    return [o.target_ms for o in scenario.objectives if isinstance(o, LatencyObjective)]


def judge(objective: Objective, result: Outcome) -> ObjectiveResult:
    template, args = objective.label_parts()
    return _judge(objective, result).model_copy(update={"kind": objective.kind, "template": template, "args": args})


def _judge(objective: Objective, result: Outcome) -> ObjectiveResult:
    name = objective.label()
    if isinstance(objective, BudgetLeftObjective):
        return ObjectiveResult(
            name=name, passed=result.budget_left >= objective.value, value=result.budget_left, target=objective.value
        )
    if isinstance(objective, BudgetSpentObjective):
        return ObjectiveResult(
            name=name, passed=result.budget_spent <= objective.value, value=result.budget_spent, target=objective.value
        )
    if isinstance(objective, LatencyObjective):
        within = result.p99_within_share[f"{objective.target_ms:g}"]
        return ObjectiveResult(name=name, passed=within >= objective.share, value=within, target=objective.share)
    if isinstance(objective, CostObjective):
        return ObjectiveResult(
            name=name, passed=result.cost <= objective.value, value=result.cost, target=objective.value
        )
    if isinstance(objective, DatabaseObjective):
        return ObjectiveResult(
            name=name,
            passed=result.minutes_db_over_capacity <= objective.max_minutes,
            value=result.minutes_db_over_capacity,
            target=objective.max_minutes,
        )
    if isinstance(objective, RecoveryObjective):
        took = result.time_to_recovery_min
        return ObjectiveResult(
            name=name, passed=took is not None and took <= objective.minutes, value=took, target=objective.minutes
        )
    if isinstance(objective, TurnedAwayObjective):
        share = result.turned_away_share
        return ObjectiveResult(name=name, passed=share <= objective.value, value=share, target=objective.value)
    raise TypeError(f"unknown objective {objective!r}")

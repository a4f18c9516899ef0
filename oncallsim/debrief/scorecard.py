"""The score card: each of the scenario's objectives, passed or failed, with the measured value."""

from __future__ import annotations

from pydantic import BaseModel, Field

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
    args: dict[str, str] = Field(default_factory=dict)  # a factory: a literal default is deep-copied each time


def score(scenario: Scenario, result: Outcome) -> list[ObjectiveResult]:
    return [judge(o, result) for o in scenario.objectives]


def p99_targets(scenario: Scenario) -> list[float]:
    """The latency targets the scenario's objectives judge (the outcome counts minutes under each)."""
    return [o.target_ms for o in scenario.objectives if isinstance(o, LatencyObjective)]


def judge(objective: Objective, result: Outcome) -> ObjectiveResult:
    template, args = objective.label_parts()
    return _judge(objective, result).model_copy(update={"kind": objective.kind, "template": template, "args": args})


def _judge(objective: Objective, result: Outcome) -> ObjectiveResult:
    passed, value, target = verdict(objective, result)
    return ObjectiveResult(name=objective.label(), passed=passed, value=value, target=target)


def verdict(objective: Objective, result: Outcome) -> tuple[bool, float | None, float]:
    """(passed, measured value, target): the judgment alone, without the label (a sweep judges thousands)."""
    if isinstance(objective, BudgetLeftObjective):
        return result.budget_left >= objective.value, result.budget_left, objective.value
    if isinstance(objective, BudgetSpentObjective):
        return result.budget_spent <= objective.value, result.budget_spent, objective.value
    if isinstance(objective, LatencyObjective):
        within = result.p99_within_share[f"{objective.target_ms:g}"]
        return within >= objective.share, within, objective.share
    if isinstance(objective, CostObjective):
        return result.cost <= objective.value, result.cost, objective.value
    if isinstance(objective, DatabaseObjective):
        over = result.minutes_db_over_capacity
        return over <= objective.max_minutes, over, objective.max_minutes
    if isinstance(objective, RecoveryObjective):
        took = result.time_to_recovery_min
        return took is not None and took <= objective.minutes, took, objective.minutes
    if isinstance(objective, TurnedAwayObjective):
        share = result.turned_away_share
        return share <= objective.value, share, objective.value
    raise TypeError(f"unknown objective {objective!r}")

"""The debrief of one run, with its counterfactuals beside it: a documented JSON contract (docs/debrief.md)."""

from __future__ import annotations

from collections.abc import Mapping

from oncallsim.debrief.scorecard import ObjectiveResult, p99_targets, score
from oncallsim.debrief.summary import CostSplit, Decision, Outcome, Phase, cost_split, decisions, outcome, phases
from oncallsim.simulation import Simulation

__all__ = ["Counterfactual", "Report", "make_report", "run_outcome"]


class Counterfactual(Outcome):
    objectives_passed: int
    objectives_total: int


class Report(Outcome):
    scenario: str
    scenario_title: str
    seed: int
    minutes: int
    budget_start: float
    latency_target_ms: float
    passed: bool
    objectives: list[ObjectiveResult]
    budget_by_phase: list[Phase]
    cost_split: CostSplit
    decisions: list[Decision]
    counterfactuals: dict[str, Counterfactual]
    headline: list[str]


def run_outcome(sim: Simulation) -> Outcome:
    return outcome(
        sim.timeline, sim.plan, sim.params, sim.actions, sim.scenario.latency_target_ms, p99_targets(sim.scenario)
    )


def make_report(sim: Simulation, counterfactuals: Mapping[str, Simulation] | None = None) -> Report:
    """Everything the debrief says about ``sim``; ``counterfactuals`` are other runs of the same scenario and seed."""
    mine = run_outcome(sim)
    results = score(sim.scenario, mine)
    others: dict[str, Counterfactual] = {}
    for name, other in (counterfactuals or {}).items():
        theirs = run_outcome(other)
        their_scores = score(other.scenario, theirs)
        others[name] = Counterfactual(
            **theirs.model_dump(),
            objectives_passed=sum(o.passed for o in their_scores),
            objectives_total=len(their_scores),
        )
    return Report(
        **mine.model_dump(),
        scenario=sim.scenario.id,
        scenario_title=sim.scenario.title,
        seed=sim.seed,
        minutes=len(sim.timeline),
        budget_start=sim.plan.budget_start,
        latency_target_ms=sim.scenario.latency_target_ms,
        passed=all(o.passed for o in results),
        objectives=results,
        budget_by_phase=phases(sim.timeline, sim.plan, sim.params, sim.actions),
        cost_split=cost_split(sim.timeline, sim.params),
        decisions=decisions(sim.timeline, sim.actions),
        counterfactuals=others,
        headline=headline(mine, others),
    )


def headline(mine: Outcome, others: Mapping[str, Outcome]) -> list[str]:
    """The sentences that say what the decisions bought, in budget and money."""
    lines: list[str] = []
    hands_off = others.get("hands-off")
    textbook = others.get("textbook")
    parts = []
    if hands_off is not None:
        parts.append(f"Had you done nothing, {hands_off.budget_spent:.1%} of the error budget would have burned")
    parts.append(f"you spent {mine.budget_spent:.1%}")
    if textbook is not None:
        parts.append(f"the playbook spends {textbook.budget_spent:.1%}")
    lines.append("; ".join(parts) + ".")
    money = [f"The fleet cost ${mine.cost:.2f}"]
    if hands_off is not None:
        money.append(f"${hands_off.cost:.2f} hands-off")
    if textbook is not None:
        money.append(f"${textbook.cost:.2f} by the playbook")
    lines.append(money[0] + (f" ({', '.join(money[1:])})" if len(money) > 1 else "") + ".")
    if mine.time_to_recovery_min is not None and mine.incident_minute is not None:
        lines.append(f"Service recovered {mine.time_to_recovery_min} min after the incident began.")
    elif mine.incident_minute is not None:
        lines.append("Service had not recovered by the end of the run.")
    return lines

"""The debrief of one run, with its counterfactuals beside it: a documented JSON contract (docs/debrief.md)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from pydantic import Field

from oncallsim.debrief.cliff import CLIFF_TEXTS, CliffReport, cliff_parts, cliff_report
from oncallsim.debrief.effects import decision_windows
from oncallsim.debrief.origins import ORIGIN_TEXTS, FailureOrigins, failure_origins, origin_parts
from oncallsim.debrief.postmortem import (
    NARRATIVES,
    TIMELINE_TEXTS,
    TimelineEntry,
    incident_timeline,
    move,
    narrative_parts,
)
from oncallsim.debrief.score import ScorePart, run_score
from oncallsim.debrief.scorecard import ObjectiveResult, p99_targets, score
from oncallsim.debrief.summary import CostSplit, Decision, Outcome, Phase, cost_split, decisions, outcome, phases
from oncallsim.model import Controls
from oncallsim.scenarios.graph import CONTRADICTION_TEXTS
from oncallsim.scenarios.spec import BudgetLeftObjective, BudgetSpentObjective, LatencyObjective
from oncallsim.simulation import Simulation

__all__ = [
    "COUNTERFACTUAL_LABELS",
    "HEADLINES",
    "MECHANISM_PHRASES",
    "REQUEST_COMPARISONS",
    "Counterfactual",
    "Report",
    "headline_parts",
    "make_report",
    "mechanism_parts",
    "run_outcome",
]


class Counterfactual(Outcome):
    objectives_passed: int
    objectives_total: int
    score: int = 0


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
    headline_parts: list[tuple[str, dict[str, str]]]
    score: int = 0  # out of 100 (debrief/score.py); a summary stored before scores existed: 0
    score_parts: list[ScorePart] = Field(default_factory=list)
    incident_timeline: list[TimelineEntry] = Field(default_factory=list)  # debrief/postmortem.py
    cliff: CliffReport | None = None  # request engine: the span past the cliff, the map's change (debrief/cliff.py)
    failure_origins: FailureOrigins | None = None  # a chain: where the failures began (debrief/origins.py)


def opening_fleet_cost(sim: Simulation) -> float:
    """What the scenario's opening fleet alone costs over the run: the money part's yardstick (a chain: the
    entry's floor and every other service's declared instances, as the chain's minutes bill them)."""
    instances = int(Controls.from_mapping(sim.scenario.controls).floor)
    graph = sim.plan.graph
    if graph is not None:
        instances += sum(service.instances for s, service in enumerate(graph.services) if s != graph.entry)
    return instances * sim.params.instance_price_per_hour * len(sim.timeline) / 60.0


def run_outcome(sim: Simulation) -> Outcome:
    return outcome(
        sim.timeline, sim.plan, sim.params, sim.actions, sim.scenario.latency_target_ms, p99_targets(sim.scenario)
    )


def make_report(
    sim: Simulation, counterfactuals: Mapping[str, Simulation] | None = None, effects: bool = True
) -> Report:
    """Everything the debrief says about ``sim``; ``counterfactuals`` are other runs of the same scenario and seed.
    ``effects``: measure each decision against the run without it (``debrief/effects.py``: a replay of the run and
    ten minutes per decision); a one-line summary does without."""
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
            score=run_score(theirs, opening_fleet_cost(other), other.scenario.score).score,
        )
    playbook = (counterfactuals or {}).get("textbook")
    latency = [(o.target_ms, o.share) for o in sim.scenario.objectives if isinstance(o, LatencyObjective)]
    judged_on_budget = any(isinstance(o, BudgetSpentObjective | BudgetLeftObjective) for o in sim.scenario.objectives)
    parts = headline_parts(mine, others, latency, latency_first=bool(latency) and not judged_on_budget)
    # what a mechanism would have bought goes with the other what-ifs, before the recovery's sentence
    recovery = next(
        (i for i, (t, _a) in enumerate(parts) if t in (HEADLINES["recovered"], HEADLINES["not_recovered"])), len(parts)
    )
    cliff = _cliff(sim, counterfactuals or {})
    parts[recovery:recovery] = mechanism_parts(mine, others, sim.plan.clock) + cliff_parts(
        cliff, mine.budget_spent, sim.plan.clock, move
    )
    parts += narrative_parts(
        mine, others.get("textbook"), sim.plan.clock, sim.actions, playbook.actions if playbook else None
    )
    by_cause = mine.budget_spent_by_cause
    origins = failure_origins(
        sim.timeline, sim.scenario.graph, by_cause.get("timeout", 0.0) + by_cause.get("overload", 0.0)
    )
    parts += origin_parts(origins)
    mine_score = run_score(mine, opening_fleet_cost(sim), sim.scenario.score)
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
        cost_split=cost_split(sim.timeline, sim.params, chain=sim.plan.graph is not None),
        decisions=decisions(sim.timeline, sim.actions, decision_windows(sim) if effects else None),
        counterfactuals=others,
        headline=[template % args if args else template for template, args in parts],
        headline_parts=parts,
        score=mine_score.score,
        score_parts=mine_score.parts,
        incident_timeline=incident_timeline(sim.timeline, sim.plan, sim.actions, mine),
        cliff=cliff,
        failure_origins=origins,
    )


def _cliff(sim: Simulation, counterfactuals: Mapping[str, Simulation]) -> CliffReport | None:
    """The run against the cliff (request engine), with the map's change replayed when there is one."""
    if sim.engine.name != "request":
        return None
    other = counterfactuals.get("cliff")
    replay = None
    if other is not None:
        added = [a for a in other.actions if a not in sim.actions]
        if added:
            replay = (other.timeline, added[0], run_outcome(other).budget_spent)
    return cliff_report(sim.timeline, sim.params, replay)


# The request engine's overload mechanisms a run can be replayed with (policies/counterfactual.py's MECHANISMS):
# how a sentence names each, and the debrief's column for it.
MECHANISM_PHRASES = {
    "retry_budget": "a retry budget of 10 %",
    "limiter": "the concurrency limiter",
    "codel": "CoDel queues",
    "deadlines": "deadline propagation",
    "sre": "adaptive throttling at the clients",
}
COUNTERFACTUAL_LABELS = {
    "cliff": "with the map's change",
    "retry_budget": "with a 10 % retry budget",
    "limiter": "with the limiter",
    "codel": "with CoDel",
    "deadlines": "with deadlines",
    "sre": "with adaptive throttling",
}

# Rows only a request-engine run has (None elsewhere): its retries' amplification and its wasted work.
REQUEST_COMPARISONS = (
    ("attempts per request", "attempts_per_request", "times"),
    ("work wasted on abandoned requests", "wasted_work_share", "pct"),
)

HEADLINES = {
    "mechanism": "With %(mechanism)s from the start and the same decisions, %(other)s of the error budget would "
    "have burned instead of %(mine)s.",
    "mechanism_recovered": "With %(mechanism)s from the start and the same decisions, %(other)s of the error budget "
    "would have burned instead of %(mine)s, and the service would have recovered at %(clock)s.",
    **{f"mechanism_{k}": v for k, v in MECHANISM_PHRASES.items()},  # listed so the catalogs extract them
    **{f"column_{k}": v for k, v in COUNTERFACTUAL_LABELS.items()},
    **{f"row_{key}": label for label, key, _kind in REQUEST_COMPARISONS},
    "balancer": "With %(balancer)s balancing from the start and the same decisions, %(other)s of the error budget "
    "would have burned instead of %(mine)s.",
    "all": "Had you done nothing, %(hands_off)s of the error budget would have burned; you spent %(mine)s; "
    "the playbook spends %(textbook)s.",
    "mine": "You spent %(mine)s of the error budget.",
    # a scenario judged on its p99 (the fan-out): said first, since the error budget may never move there
    "latency_all": "Your p99 was within %(target)s in %(mine)s of the minutes (the objective: at least %(share)s); "
    "hands-off %(hands_off)s, the playbook %(textbook)s.",
    "latency": "Your p99 was within %(target)s in %(mine)s of the minutes (the objective: at least %(share)s).",
    "cost_all": "The fleet cost %(mine)s (%(hands_off)s hands-off, %(textbook)s by the playbook).",
    "cost": "The fleet cost %(mine)s.",
    "shed": "The playbook turned away %(textbook)s of the requests (shed) to spare the rest; you turned away %(mine)s.",
    "recovered": "Service recovered %(minutes)s min after the incident began.",
    "not_recovered": "Service had not recovered by the end of the run.",
    # the postmortem's sentences and timeline rows: listed here so the catalogs extract them with the rest
    **{f"narrative_{k}": v for k, v in NARRATIVES.items()},
    **{f"timeline_{k}": v for k, v in TIMELINE_TEXTS.items()},
    **{f"cliff_{k}": v for k, v in CLIFF_TEXTS.items()},
    **{f"origin_{k}": v for k, v in ORIGIN_TEXTS.items()},
    **{f"contradiction_{k}": v for k, v in CONTRADICTION_TEXTS.items()},
}


def headline_parts(
    mine: Outcome,
    others: Mapping[str, Outcome],
    latency_objectives: Sequence[tuple[float, float]] = (),
    latency_first: bool = False,
) -> list[tuple[str, dict[str, str]]]:
    """The sentences that say what the decisions bought, as translatable templates and their arguments; for each
    objective on the p99 (``latency_objectives``: its target in ms and the share of minutes), how it went — first
    when the run is judged on its latency alone (``latency_first``: the fan-out, whose budget never moves), else
    after the budget and the cost."""
    hands_off, textbook = others.get("hands-off"), others.get("textbook")
    latency: list[tuple[str, dict[str, str]]] = []
    for target_ms, share in latency_objectives:
        key = f"{target_ms:g}"
        said = {
            "target": f"{target_ms:g} ms",
            "mine": f"{mine.p99_within_share.get(key, 0.0):.1%}",
            "share": f"{share * 100:g}%",  # as the objective says it: 90%
        }
        if hands_off is not None and textbook is not None:
            said["hands_off"] = f"{hands_off.p99_within_share.get(key, 0.0):.1%}"
            said["textbook"] = f"{textbook.p99_within_share.get(key, 0.0):.1%}"
            latency.append((HEADLINES["latency_all"], said))
        else:
            latency.append((HEADLINES["latency"], said))
    parts: list[tuple[str, dict[str, str]]] = list(latency) if latency_first else []
    if hands_off is not None and textbook is not None:
        parts.append(
            (
                HEADLINES["all"],
                {
                    "hands_off": f"{hands_off.budget_spent:.1%}",
                    "mine": f"{mine.budget_spent:.1%}",
                    "textbook": f"{textbook.budget_spent:.1%}",
                },
            )
        )
        parts.append(
            (
                HEADLINES["cost_all"],
                {
                    "mine": f"${mine.cost:.2f}",
                    "hands_off": f"${hands_off.cost:.2f}",
                    "textbook": f"${textbook.cost:.2f}",
                },
            )
        )
        if textbook.turned_away_share > 0 or mine.turned_away_share > 0:  # what the budgets above cost in users
            shed = {"textbook": f"{textbook.turned_away_share:.1%}", "mine": f"{mine.turned_away_share:.1%}"}
            parts.append((HEADLINES["shed"], shed))
    else:
        parts.append((HEADLINES["mine"], {"mine": f"{mine.budget_spent:.1%}"}))
        parts.append((HEADLINES["cost"], {"mine": f"${mine.cost:.2f}"}))
    if not latency_first:
        parts.extend(latency)
    p2c = others.get("p2c")
    if p2c is not None:
        parts.append(
            (
                HEADLINES["balancer"],
                {"balancer": "p2c", "other": f"{p2c.budget_spent:.1%}", "mine": f"{mine.budget_spent:.1%}"},
            )
        )
    if mine.time_to_recovery_min is not None and mine.incident_minute is not None:
        parts.append((HEADLINES["recovered"], {"minutes": str(mine.time_to_recovery_min)}))
    elif mine.incident_minute is not None:
        parts.append((HEADLINES["not_recovered"], {}))
    return parts


def mechanism_parts(
    mine: Outcome, others: Mapping[str, Outcome], clock: Callable[[int], str]
) -> list[tuple[str, dict[str, str]]]:
    """A sentence per mechanism counterfactual: the budget it would have spent, and when the service would have
    recovered where that is sooner than the player's recovery (or the player never recovered)."""
    parts: list[tuple[str, dict[str, str]]] = []
    for name, phrase in MECHANISM_PHRASES.items():
        other = others.get(name)
        if other is None:
            continue
        args = {"mechanism": phrase, "other": f"{other.budget_spent:.1%}", "mine": f"{mine.budget_spent:.1%}"}
        theirs = other.time_to_recovery_min
        sooner = theirs is not None and (mine.time_to_recovery_min is None or theirs < mine.time_to_recovery_min)
        if sooner and other.incident_minute is not None and theirs is not None:
            parts.append((HEADLINES["mechanism_recovered"], {**args, "clock": clock(other.incident_minute + theirs)}))
        else:
            parts.append((HEADLINES["mechanism"], args))
    return parts

"""One-click what-ifs on a run's own draws: "roll back at the page", "without this action", "this action N
minutes earlier". The run is replayed (deterministic: same scenario, seed, noise) with its action log changed,
to the minute the player reached, and judged like the run itself."""

from __future__ import annotations

from pydantic import BaseModel

from oncallsim.debrief.report import opening_fleet_cost, run_outcome
from oncallsim.debrief.score import run_score
from oncallsim.debrief.scorecard import score
from oncallsim.debrief.summary import describe
from oncallsim.model import InvalidInput
from oncallsim.simulation import Action, Simulation

__all__ = ["WHAT_IFS", "WhatIf", "rollback_matters", "what_if"]

WHAT_IFS = ("rollback_at_page", "without", "earlier")
MAX_EARLIER_MIN = 60


class WhatIf(BaseModel):
    kind: str
    action: str  # the action concerned, as people read it ("" for the rollback at the page)
    minutes: int
    budget_spent: float
    cost: float
    score: int
    objectives_passed: int
    objectives_total: int
    time_to_recovery_min: int | None


def changed_actions(sim: Simulation, kind: str, index: int, minutes: int) -> tuple[list[Action], str]:
    actions = list(sim.actions)
    if kind == "rollback_at_page":
        page = next(
            (r.minute for r in sim.timeline if any(getattr(e, "code", "") == "page_fired" for e in r.events)), None
        )
        if page is None or page + 1 >= len(sim.timeline):
            raise InvalidInput("kind", "the page never fired in this run (or fired in its last minute)")
        if not rollback_matters(sim):
            raise InvalidInput("kind", "a rollback changes nothing in this run: no bad build was live at the page")
        kept = [a for a in actions if a.control != "rollback"]
        return sorted([*kept, Action(page + 1, "rollback")], key=lambda a: a.minute), ""
    if not 0 <= index < len(actions):
        raise InvalidInput("index", f"must be an action of this run, 0 to {len(actions) - 1}, got {index}")
    chosen = actions[index]
    if kind == "without":
        return actions[:index] + actions[index + 1 :], describe(chosen)
    if not 1 <= minutes <= MAX_EARLIER_MIN:
        raise InvalidInput("minutes", f"must be from 1 to {MAX_EARLIER_MIN}, got {minutes}")
    moved = Action(max(0, chosen.minute - minutes), chosen.control, chosen.value)
    rest = actions[:index] + actions[index + 1 :]
    return sorted([*rest, moved], key=lambda a: a.minute), describe(chosen)


def rollback_matters(sim: Simulation) -> bool:
    """Whether "roll back at the page" is a what-if worth offering: the page fired while a bad build served traffic
    (the only thing a rollback changes)."""
    fired = next((r for r in sim.timeline if any(getattr(e, "code", "") == "page_fired" for e in r.events)), None)
    return fired is not None and any(r.bad_build_share > 0 for r in sim.timeline[fired.minute :])


def what_if(sim: Simulation, kind: str, index: int = 0, minutes: int = 5) -> WhatIf:
    """The run replayed with its actions changed (CPU work: call it off the event loop)."""
    if kind not in WHAT_IFS:
        raise InvalidInput("kind", f"must be one of {', '.join(WHAT_IFS)}, got {kind[:40]!r}")
    actions, label = changed_actions(sim, kind, index, minutes)
    other = Simulation.from_run_file(sim.run_file().model_copy(update={"actions": [], "played": None}))
    other.run(actions, until=len(sim.timeline))
    outcome = run_outcome(other)
    judged = score(other.scenario, outcome)
    return WhatIf(
        kind=kind,
        action=label,
        minutes=minutes,
        budget_spent=outcome.budget_spent,
        cost=outcome.cost,
        score=run_score(outcome, opening_fleet_cost(other), other.scenario.score).score,
        objectives_passed=sum(o.passed for o in judged),
        objectives_total=len(judged),
        time_to_recovery_min=outcome.time_to_recovery_min,
    )

"""The debrief as a postmortem reads: one incident timeline (each action on its own row, even within a minute)
and a narrative comparison with the playbook ("the playbook acted at 09:29, you at 09:56; each minute of delay
cost about 0.1 % of the budget"). Texts are translatable templates with their arguments."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pydantic import BaseModel

from oncallsim.debrief.summary import Outcome, describe
from oncallsim.model import MinuteRecord, RunPlan
from oncallsim.simulation import Action

__all__ = ["NARRATIVES", "TIMELINE_TEXTS", "TimelineEntry", "incident_timeline", "narrative_parts"]

# The rows' texts (gettext msgids); an action's row is its description (labels and units, see summary.describe).
TIMELINE_TEXTS = {
    "scenario": "%(event)s",
    "detection": "detected: the page fired",
    "mitigation": "first action after the incident began",
    "recovery": "recovered: errors back under the SLO for good",
    "action": "you: %(action)s",
}
SCENARIO_EVENTS = ("deploy_started", "deploy_finished", "cache_flushed", "rollback_ready", "page_cleared")

NARRATIVES = {
    "delay": "The playbook first acted at %(theirs)s, you at %(mine)s; each minute of delay cost about %(per_minute)s "
    "of the error budget.",
    "earlier": "You first acted at %(mine)s, %(minutes)s min before the playbook (%(theirs)s).",
    "same": "You and the playbook first acted at the same minute, %(mine)s.",
    "never": "The playbook first acted at %(theirs)s; you never acted after the incident began.",
}


class TimelineEntry(BaseModel):
    minute: int
    clock: str
    kind: str  # scenario, detection, mitigation, recovery, action
    template: str
    args: dict[str, str] = {}


def incident_timeline(
    timeline: Sequence[MinuteRecord], plan: RunPlan, actions: Sequence[Action], outcome: Outcome
) -> list[TimelineEntry]:
    """The run's story in order: the scenario's events, detection (the page), each action, the first mitigation
    and the recovery."""
    clock = plan.clock
    rows: list[TimelineEntry] = []
    for r in timeline:
        for e in r.events:
            code = getattr(e, "code", "")
            if code in SCENARIO_EVENTS:
                rows.append(
                    TimelineEntry(
                        minute=r.minute, clock=r.clock, kind="scenario", template="%(event)s", args={"event": str(e)}
                    )
                )
    if outcome.page_minute is not None:
        rows.append(_row(outcome.page_minute, clock, "detection"))
    for a in actions:
        rows.append(
            TimelineEntry(
                minute=a.minute,
                clock=clock(a.minute),
                kind="action",
                template=TIMELINE_TEXTS["action"],
                args={"action": describe(a)},
            )
        )
    start = outcome.incident_minute
    if start is not None and outcome.time_to_first_mitigation_min is not None:
        rows.append(_row(start + outcome.time_to_first_mitigation_min, clock, "mitigation"))
    if start is not None and outcome.time_to_recovery_min is not None:
        rows.append(_row(start + outcome.time_to_recovery_min, clock, "recovery"))
    order = {"scenario": 0, "detection": 1, "action": 2, "mitigation": 3, "recovery": 4}
    return sorted(rows, key=lambda row: (row.minute, order[row.kind]))


def _row(minute: int, clock: Callable[[int], str], kind: str) -> TimelineEntry:
    return TimelineEntry(minute=minute, clock=clock(minute), kind=kind, template=TIMELINE_TEXTS[kind])


def narrative_parts(
    mine: Outcome, playbook: Outcome | None, clock: Callable[[int], str]
) -> list[tuple[str, dict[str, str]]]:
    """When the player acted against when the playbook did, and what the delay cost per minute."""
    if playbook is None or mine.incident_minute is None or playbook.time_to_first_mitigation_min is None:
        return []
    start = mine.incident_minute
    theirs = start + playbook.time_to_first_mitigation_min
    show = clock  # RunPlan.clock: minute → "HH:MM"
    if mine.time_to_first_mitigation_min is None:
        return [(NARRATIVES["never"], {"theirs": show(theirs)})]
    ours = start + mine.time_to_first_mitigation_min
    args = {"mine": show(ours), "theirs": show(theirs)}
    if ours == theirs:
        return [(NARRATIVES["same"], {"mine": args["mine"]})]
    if ours < theirs:
        return [(NARRATIVES["earlier"], {**args, "minutes": str(theirs - ours)})]
    per_minute = max(0.0, mine.budget_spent - playbook.budget_spent) / (ours - theirs)
    return [(NARRATIVES["delay"], {**args, "per_minute": f"{per_minute:.2%}"})]

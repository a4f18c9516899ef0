"""The debrief as a postmortem reads: one incident timeline (each action on its own row, even within a minute)
and a narrative comparison with the playbook that names what each side did ("the playbook rolled back at 09:29,
you at 09:56; each minute of delay cost about 0.1 % of the budget", "the playbook switched the recommendations
feature off and shed all the low-priority traffic at 12:01, you at 12:04"). Texts are translatable templates with
their arguments."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pydantic import BaseModel

from oncallsim.debrief.summary import Outcome, describe
from oncallsim.model import CONTROL_SPECS, MinuteRecord, RunPlan
from oncallsim.simulation import Action

__all__ = [
    "MOVES",
    "NARRATIVES",
    "TIMELINE_TEXTS",
    "TimelineEntry",
    "incident_timeline",
    "move",
    "moves",
    "narrative_parts",
]

# The rows' texts (gettext msgids); an action's row is its description (labels and units, see summary.describe).
TIMELINE_TEXTS = {
    "scenario": "%(event)s",
    "detection": "detected: the page fired",
    "mitigation": "first action after the incident began",
    "recovery": "recovered: errors back under the SLO for good",
    "action": "you: %(action)s",
}
# The scenario's own events the timeline shows (its trigger first: a deploy, a flush, an instance or a zone failing,
# a brownout), and what they led to.
SCENARIO_EVENTS = (
    "deploy_started",
    "deploy_finished",
    "cache_flushed",
    "rollback_ready",
    "page_cleared",
    "brownout_started",
    "brownout_ended",
    "instance_slow",
    "instance_crashed",
    "instance_hung",
    "instance_revived",
    "zone_down",
    "zone_back",
)

NARRATIVES = {
    # without the action logs: when each side first acted
    "delay": "The playbook first acted at %(theirs)s, you at %(mine)s; each minute of delay cost about %(per_minute)s "
    "of the error budget.",
    "earlier": "You first acted at %(mine)s, %(minutes)s min before the playbook (%(theirs)s).",
    "same": "You and the playbook first acted at the same minute, %(mine)s.",
    "never": "The playbook first acted at %(theirs)s; you never acted after the incident began.",
    # you made the playbook's first move(s): one verb for both ("rolled back")
    "delay_alike": "The playbook %(moves)s at %(theirs)s, you at %(mine)s; each minute of delay cost about "
    "%(per_minute)s of the error budget.",
    "earlier_alike": "You %(moves)s at %(mine)s, %(minutes)s min before the playbook (%(theirs)s).",
    "same_alike": "You and the playbook both %(moves)s at %(mine)s.",
    # your first move was another one: each side's, named
    "delay_moves": "The playbook first acted at %(theirs)s, you at %(mine)s; each minute of delay cost about "
    "%(per_minute)s of the error budget. The playbook %(their_moves)s; you %(my_moves)s.",
    "earlier_moves": "You first acted at %(mine)s, %(minutes)s min before the playbook (%(theirs)s): you %(my_moves)s; "
    "the playbook %(their_moves)s.",
    "same_moves": "You and the playbook first acted at the same minute, %(mine)s: you %(my_moves)s; the playbook "
    "%(their_moves)s.",
    "never_moves": "The playbook %(their_moves)s at %(theirs)s; you never acted after the incident began.",
    # … and made the playbook's move later on
    "later": "You %(moves)s at %(later)s, %(minutes)s min after the playbook.",
}

# What an action did, in the past tense, per control (``%(value)s`` with its unit): each control's ``moves``,
# declared with it (model/control_spec.py), keyed "<control>" or "<control>.<value>" ("autoscaler.on"); an
# unlisted control reads "set <label> to <value>" (a setting) or "used <label>" (a button).
MOVES = {
    f"{spec.name}.{key}" if key else spec.name: text
    for spec in CONTROL_SPECS.values()
    for key, text in spec.moves.items()
}


# A chain's service setting as the narrative says it ("set the retries of api to 0"): the setting in the Services
# panel's words (the page catalog's ``service.<setting>``), the service by its name.
SERVICE_MOVES = {
    "set": "set the %(setting)s of %(service)s to %(value)s",
    "on": "switched on the %(setting)s of %(service)s",  # a switch (the limiter, LIFO)
    "off": "switched off the %(setting)s of %(service)s",
}


def service_move(control: str, value: object) -> str:
    """``<service>.<setting>`` = ``value`` in the narrative's words (English; debrief/html.py translates it)."""
    from oncallsim.i18n import page_catalog

    service, _, setting = control.partition(".")
    label = str(page_catalog().get(f"service.{setting}", setting))
    args = {"setting": label[:1].lower() + label[1:], "service": service}
    if setting in ("limiter", "lifo"):  # the switches
        return SERVICE_MOVES["on" if value else "off"] % args
    return SERVICE_MOVES["set"] % {**args, "value": f"{value:g}" if isinstance(value, float) else str(value)}


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


def move(action: Action) -> str:
    """One action as the narrative says it, in the past tense: "rolled back", "shed 30 % of the low-priority
    traffic", "set the fleet floor to 12 instances"."""
    spec = CONTROL_SPECS.get(action.control)
    if spec is None and "." in action.control:  # a chain's service's setting
        return service_move(action.control, action.value)
    said = spec.sentence(spec.moves, action.value) if spec is not None else None
    if said is not None:
        return said
    label = spec.label if spec is not None else action.control
    if action.value is None:
        return f"used {label[:1].lower()}{label[1:]}"
    value = spec.value_text(action.value) if spec is not None else str(action.value)
    return f"set {label[:1].lower()}{label[1:]} to {value}"


def moves(actions: Sequence[Action]) -> str:
    """Several actions of one minute as one phrase: "a, b and c"."""
    said = list(dict.fromkeys(move(a) for a in actions))
    return said[0] if len(said) == 1 else ", ".join(said[:-1]) + " and " + said[-1]


def narrative_parts(
    mine: Outcome,
    playbook: Outcome | None,
    clock: Callable[[int], str],
    my_actions: Sequence[Action] | None = None,
    playbook_actions: Sequence[Action] | None = None,
) -> list[tuple[str, dict[str, str]]]:
    """When the player acted against when the playbook did, what each did, and what the delay cost per minute.

    With both action logs the sentence names the moves: one verb for both when the player's first minute did
    what the playbook's did ("the playbook rolled back at 09:29, you at 09:56"), each side's moves otherwise."""
    if playbook is None or mine.incident_minute is None or playbook.time_to_first_mitigation_min is None:
        return []
    start = mine.incident_minute
    theirs = start + playbook.time_to_first_mitigation_min
    show = clock  # RunPlan.clock: minute → "HH:MM"
    named = my_actions is not None and playbook_actions is not None
    their_moves = moves([a for a in playbook_actions or () if a.minute == theirs]) if named else ""
    if mine.time_to_first_mitigation_min is None:
        if named and their_moves:
            return [(NARRATIVES["never_moves"], {"theirs": show(theirs), "their_moves": their_moves})]
        return [(NARRATIVES["never"], {"theirs": show(theirs)})]
    ours = start + mine.time_to_first_mitigation_min
    args = {"mine": show(ours), "theirs": show(theirs)}
    my_moves = moves([a for a in my_actions or () if a.minute == ours]) if named else ""
    if ours == theirs:
        kind, extra = "same", {"mine": args["mine"]}
    elif ours < theirs:
        kind, extra = "earlier", {**args, "minutes": str(theirs - ours)}
    else:
        per_minute = max(0.0, mine.budget_spent - playbook.budget_spent) / (ours - theirs)
        kind, extra = "delay", {**args, "per_minute": f"{per_minute:.2%}"}
    if not (named and my_moves and their_moves):
        return [(NARRATIVES[kind], extra)]
    if my_moves == their_moves:
        return [(NARRATIVES[f"{kind}_alike"], {**extra, "moves": my_moves})]
    parts = [(NARRATIVES[f"{kind}_moves"], {**extra, "my_moves": my_moves, "their_moves": their_moves})]
    later = _made_later(my_actions or (), [a for a in playbook_actions or () if a.minute == theirs], ours)
    if later is not None:
        args = {"moves": their_moves, "later": show(later), "minutes": str(later - theirs)}
        parts.append((NARRATIVES["later"], args))
    return parts


def _made_later(mine: Sequence[Action], theirs: Sequence[Action], first: int) -> int | None:
    """The minute by which the player, after a first move of another kind, had made each of the playbook's first
    moves too (None: not all of them)."""
    minutes = []
    for wanted in dict.fromkeys(move(a) for a in theirs):
        found = next((a.minute for a in mine if a.minute > first and move(a) == wanted), None)
        if found is None:
            return None
        minutes.append(found)
    return max(minutes) if minutes else None

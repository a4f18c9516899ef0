"""The debrief's sentence on the cliff (issue 26; docs/cliff.md): when a request-engine run entered the zone
where a trigger does not heal by itself and when it left it, and the single change that would have taken it out
soonest, as the map's closed form picks it (``cliff.change``) and a counterfactual replay checks it (the replay
itself is ``policies.counterfactual.cliff_replay``'s)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel

from oncallsim.cliff.point import record_point
from oncallsim.cliff.zone import position
from oncallsim.model import MinuteRecord, Params
from oncallsim.simulation import Action

__all__ = ["AT_RISK", "CLIFF_TEXTS", "CliffReport", "at_risk_span", "cliff_parts", "zones"]

# past the cliff: healthy, but a trigger would not heal by itself (an overloaded minute, as while a brownout lasts,
# neither starts nor ends a span: its capacity is the trigger's)
AT_RISK = ("vulnerable",)

CLIFF_TEXTS = {
    "span": "The service stood past the cliff, where a trigger does not heal by itself (the requests × their "
    "attempts above what the fleet serves), from %(start)s to %(end)s.",
    "span_open": "The service stood past the cliff, where a trigger does not heal by itself (the requests × "
    "their attempts above what the fleet serves), from %(start)s to the end of the run.",
    "change": "The single change that would have taken it out soonest: had you %(move)s at %(clock)s, the replay "
    "would have been back from the cliff from %(left)s and spent %(other)s of the error budget instead of %(mine)s.",
    "change_stayed": "The map's single change that takes it out soonest, to have %(move)s at %(clock)s, did not "
    "in the replay: it stayed past the cliff and spent %(other)s of the error budget instead of %(mine)s.",
}


class CliffReport(BaseModel):
    """Where the run stood against the cliff, and the map's change replayed (minutes from the run's start)."""

    entered: int
    left: int | None  # out for good from this minute (None: still past the cliff at the end)
    control: str | None = None  # the change: this control set to ``value`` at minute ``at``
    value: Any = None
    at: int | None = None
    replay_left: int | None = None  # the replay out for good from this minute (None: it never was)
    replay_budget_spent: float | None = None


def zones(timeline: Sequence[MinuteRecord], params: Params) -> list[str | None]:
    """Each minute's zone (None: the gauge cannot read it, as on the minute model)."""
    out: list[str | None] = []
    for record in timeline:
        point = record_point(record, params)
        out.append(position(point).zone if point is not None else None)
    return out


def at_risk_span(minutes: Sequence[str | None], start: int = 0) -> tuple[int, int | None] | None:
    """(the first minute from ``start`` past the cliff, the first minute after the last one) — None for the
    second when the run ends past it (or only overloaded since); None altogether when it never was."""
    risky = [m for m in range(start, len(minutes)) if minutes[m] in AT_RISK]
    if not risky:
        return None
    after = next((m for m in range(risky[-1] + 1, len(minutes)) if minutes[m] != "overloaded"), None)
    return risky[0], after


def cliff_report(
    timeline: Sequence[MinuteRecord],
    params: Params,
    replay: tuple[Sequence[MinuteRecord], Action, float] | None,
) -> CliffReport | None:
    """The run's span past the cliff, and the replay's (its records, the change as an ``Action``, the budget it
    spent); None when the run never stood past the cliff (or is not the request engine's)."""
    found = at_risk_span(zones(timeline, params))
    if found is None:
        return None
    report = CliffReport(entered=found[0], left=found[1])
    if replay is not None:
        records, change, spent = replay
        after = at_risk_span(zones(records, params), change.minute)
        left = change.minute if after is None else after[1]
        report = report.model_copy(
            update={
                "control": change.control,
                "value": change.value,
                "at": change.minute,
                "replay_left": left,
                "replay_budget_spent": spent,
            }
        )
    return report


def cliff_parts(
    report: CliffReport | None, mine: float, clock: Callable[[int], str], move: Callable[[Any], str]
) -> list[tuple[str, dict[str, str]]]:
    """The sentences: the span, then the change and what its replay did (``move``: an action in words)."""
    if report is None:
        return []
    start = clock(report.entered)
    if report.left is None:
        parts = [(CLIFF_TEXTS["span_open"], {"start": start})]
    else:
        parts = [(CLIFF_TEXTS["span"], {"start": start, "end": clock(report.left)})]
    if report.control is None or report.at is None or report.replay_budget_spent is None:
        return parts
    args = {
        "move": move(Action(report.at, report.control, report.value)),
        "clock": clock(report.at),
        "other": f"{report.replay_budget_spent:.1%}",
        "mine": f"{mine:.1%}",
    }
    if report.replay_left is None:
        parts.append((CLIFF_TEXTS["change_stayed"], args))
    else:
        parts.append((CLIFF_TEXTS["change"], {**args, "left": clock(report.replay_left)}))
    return parts

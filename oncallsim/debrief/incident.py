"""When the incident started, when the page fired, when the operator first acted and when service recovered."""

from __future__ import annotations

from collections.abc import Sequence

from oncallsim.model import MinuteRecord, Params, RunPlan

__all__ = ["RECOVERY_HOLD_MIN", "first_page", "incident_start", "recovery_minute"]

# Recovered = errors under the SLO's allowance (burn ≤ 1) for this many minutes in a row (or to the run's end).
RECOVERY_HOLD_MIN = 10


def incident_start(plan: RunPlan, timeline: Sequence[MinuteRecord]) -> int | None:
    """The first scenario event: a deploy, a flush, a surge's onset; else the first page (free play)."""
    start = plan.first_event(len(timeline))
    return start if start is not None else first_page(timeline)


def first_page(timeline: Sequence[MinuteRecord]) -> int | None:
    """The first minute the page fired (firing, and not firing the minute before)."""
    was_firing = False
    for r in timeline:
        if r.page_firing and not was_firing:
            return r.minute
        was_firing = r.page_firing
    return None


def recovery_minute(timeline: Sequence[MinuteRecord], start: int | None, params: Params) -> int | None:
    """The first minute from ``start`` after which errors stay within the SLO for ``RECOVERY_HOLD_MIN`` minutes.

    Errors must have exceeded the SLO at some point after the start, else the service never degraded and
    recovery is the start itself.
    """
    if start is None:
        return None
    allowance = params.error_budget
    bad = [r.error_rate > allowance for r in timeline[start:]]
    if not any(bad):
        return start
    last_bad = start + max(i for i, b in enumerate(bad) if b)
    candidate = last_bad + 1
    if candidate >= len(timeline):
        return None
    # the last bad minute is followed only by good ones; require a hold of RECOVERY_HOLD_MIN (or the run's end)
    return candidate if len(timeline) - candidate >= min(RECOVERY_HOLD_MIN, len(timeline) - start) else None

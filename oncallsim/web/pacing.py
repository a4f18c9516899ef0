"""How the console paces a person (issues 12 and 25): the difficulty of a run. The numbers of a run never depend
on it; it decides only when the clock waits for the human and how fast it may go.

- guided: the clock stops when the incident starts and when the page fires, with the scenario's hint naming the
  symptom and where to look (its ``incident_hint`` and ``page_hint``), and runs at 1× or 2×;
- normal: the clock stops when the page fires, without a hint, and runs on at 1× once resumed; a lesson whose
  trouble is there from its first minute and never pages (the fan-out's slow tail: latency, not errors) stops
  after that minute instead, as guided does, without the hint — else nothing would ever stop it and a person
  would meet its objective's minutes running out before they had read the page;
- hard: nothing waits, up to 16×.

Why normal stops rather than slows: at 1× a simulated minute passes every real second, so a person who needs
30 s to read the page, find the control and act comes 30 simulated minutes late — later than any built-in
scenario can be saved, and as late as doing nothing in some (docs/scenarios.md, "Balance", measured). Stopped,
the reading is free; the scenarios' objectives are balanced so that acting at once then passes.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Literal

from oncallsim.model import InvalidInput, MinuteRecord, RunPlan

__all__ = [
    "DEFAULT_DIFFICULTY",
    "DIFFICULTIES",
    "MAX_SPEED",
    "REALTIME",
    "check_difficulty",
    "check_speed_for",
    "incident_kind",
    "minute_seconds",
    "pause_reason",
    "stop_for",
]

Difficulty = Literal["guided", "normal", "hard"]
DIFFICULTIES: tuple[Difficulty, ...] = ("guided", "normal", "hard")
DEFAULT_DIFFICULTY: Difficulty = "normal"
MAX_SPEED = {"guided": 2, "normal": 16, "hard": 16}
# The real-time speed: one simulated minute a wall-clock minute, so a team's own Prometheus rules and dashboards
# scraping /runs/{id}/metrics behave as in production (docs/metrics.md). Every other speed is minutes a second.
REALTIME = 0


def minute_seconds(speed: int) -> float:
    """Wall-clock seconds one simulated minute takes at ``speed``."""
    return 60.0 if speed == REALTIME else 1.0 / speed


def check_difficulty(value: Any) -> Difficulty:
    if value not in DIFFICULTIES:
        raise InvalidInput(
            "difficulty",
            f"must be one of {', '.join(DIFFICULTIES)}, got {str(value)[:40]!r}",
            "choice",
            allowed=DIFFICULTIES,
            got=str(value)[:40],
        )
    return value  # type: ignore[no-any-return]


def check_speed_for(difficulty: str, speed: int) -> None:
    if speed > MAX_SPEED[difficulty]:
        raise InvalidInput(
            "speed",
            f"the {difficulty} difficulty plays at most {MAX_SPEED[difficulty]}× (choose normal or hard)",
            "speed_cap",
            difficulty=difficulty,
            max=MAX_SPEED[difficulty],
        )


def incident_kind(plan: RunPlan) -> str:
    """What goes wrong first in this run: "deploy", "flush", "surge", "instance" (one instance fails), "zone",
    "brownout", or "" (free play). The hint the guided stop shows is the scenario's own (its ``incident_hint``)."""
    start = plan.first_event(plan.minutes)
    if start is None:
        return ""
    if start in plan.deploy_minutes:
        return "deploy"
    if start in plan.flush_minutes:
        return "flush"
    fault = next((f for f in plan.faults if f.minute == start and f.what != "revive"), None)
    if fault is not None:
        return "zone" if fault.what == "zone" else "instance"
    if any(b[0] == start for b in plan.brownouts):
        return "brownout"
    return "surge"


def pause_reason(plan: RunPlan, record: MinuteRecord, hint_at_start: bool = False) -> str | None:
    """On guided difficulty, why the clock stops after this minute: the page, the incident's start (the
    scenario's first event, whatever its kind: ``RunPlan.first_event``), or not.

    ``hint_at_start``: the scenario has a hint and no event, its trouble there from the first minute (the fan-out
    lesson's slow tail): the clock stops after the first minute, so the hint comes while acting can still meet the
    objective (else a guided run of such a lesson never stops and a person reads its hint nowhere)."""
    if any(getattr(e, "code", None) == "page_fired" for e in record.events):
        return "page"
    incident = _incident_minute(plan)
    if record.minute == incident or (incident is None and hint_at_start and record.minute == 0):
        return "incident"
    return None


def stop_for(difficulty: str, plan: RunPlan, record: MinuteRecord, hint_at_start: bool) -> str | None:
    """Why the clock stops after this minute on ``difficulty`` (the console's runs and the agents' alike): guided
    at the page and the incident's start; normal at the page, and at the first minute of a lesson whose trouble
    is there from the start (``hint_at_start`` and no event: it never pages); hard never."""
    if difficulty == "hard":
        return None
    reason = pause_reason(plan, record, hint_at_start)
    if difficulty == "guided" or reason == "page":
        return reason
    if reason == "incident" and _incident_minute(plan) is None:
        return reason
    return None


@lru_cache(maxsize=1024)
def _incident_minute(plan: RunPlan) -> int | None:
    """``plan.first_event`` over the whole run, once a plan: asked after every live minute (8 µs a time, a plan's
    hash 1–1.5 µs)."""
    return plan.first_event(plan.minutes)

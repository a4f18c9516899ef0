"""How the console paces a person (issue 12): the difficulty of a run. The numbers of a run never depend on it;
it decides only when the clock waits for the human and how fast it may go.

- guided: the clock stops when the incident starts and when the page fires (with a hint naming the symptom and
  where to look), and runs at 1× or 2×;
- normal: the clock slows to 1× when the page fires;
- hard: nothing waits, up to 16×.
"""

from __future__ import annotations

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
        raise InvalidInput("difficulty", f"must be one of {', '.join(DIFFICULTIES)}, got {str(value)[:40]!r}")
    return value  # type: ignore[no-any-return]


def check_speed_for(difficulty: str, speed: int) -> None:
    if speed > MAX_SPEED[difficulty]:
        raise InvalidInput(
            "speed", f"the {difficulty} difficulty plays at most {MAX_SPEED[difficulty]}× (choose normal or hard)"
        )


def incident_kind(plan: RunPlan) -> str:
    """What goes wrong in this run: "deploy", "flush", "surge", or "" (free play) — the hint it gets."""
    if plan.deploy_minutes:
        return "deploy"
    if plan.flush_minutes:
        return "flush"
    return "surge" if plan.surge is not None else ""


def pause_reason(plan: RunPlan, record: MinuteRecord) -> str | None:
    """On guided difficulty, why the clock stops after this minute: the page, the incident's start, or not."""
    if any(getattr(e, "code", None) == "page_fired" for e in record.events):
        return "page"
    m = record.minute
    if m in plan.deploy_minutes or m in plan.flush_minutes:
        return "incident"
    if plan.surge is not None and m == max(0, int(-(-plan.surge.onset_min // 1))):
        return "incident"
    return None

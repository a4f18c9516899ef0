"""A scripted person: the playbook's moves, made only once the console has told the player — the page, or on
guided difficulty the clock's stop at the incident's start — and a reaction time later.

The console paces a person by difficulty (web/pacing.py): guided stops the clock at the incident and at the page
(a hint names the symptom and where to look), normal stops it at the page and runs on at 1×, hard lets it
run. A person reads, decides and reaches the control in some real seconds, which pass at the clock's speed in
simulated minutes (1× is one simulated minute per second). ``Person`` plays that: it watches what the console shows,
waits ``delay_min`` minutes from the moment it was told, then follows the playbook (``Textbook``) from there.
The scenarios' objectives are balanced so that such a person passes on guided and normal (docs/scenarios.md,
"Balance"; tests/test_balance.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, Literal

from oncallsim.model import Mulberry32
from oncallsim.policies.textbook import Textbook
from oncallsim.simulation import Observation

__all__ = ["Person", "reaction_minutes"]

Told = Literal["page", "stop"]


def reaction_minutes(seconds: float, speed: float) -> int:
    """Simulated minutes that pass while a person takes ``seconds`` at ``speed`` (simulated minutes per second)."""
    return math.ceil(seconds * speed - 1e-9)


class Person:
    """Acts ``delay_min`` minutes after it is told: at the page (``told="page"``), or at the first of the guided
    difficulty's stops, the incident's start or the page (``told="stop"``). A delay of 0 acts at the minute after
    the one that told it (the console queues an action for the next minute), as a player does while the clock is
    stopped."""

    name = "person"

    def __init__(self, delay_min: int = 0, told: Told = "page") -> None:
        if delay_min < 0:
            raise ValueError(f"delay_min must be 0 or more, got {delay_min}")
        self.delay_min = delay_min
        self.told = told
        self.reset(0)

    def reset(self, seed: int) -> None:
        self.seed = seed
        self.playbook = Textbook()
        self.incident: int | None = None  # the minute the guided clock stops at (the incident's start)
        self.planned = False
        self.acts_from: int | None = None  # the first minute it acts

    def decide(self, observation: Observation) -> Iterable[tuple[str, Any]]:
        if not self.planned:
            self.planned = True
            if self.told == "stop":  # the stop the console makes: the scenario's first event, from the same draws
                plan = observation.scenario.build_plan(Mulberry32(self.seed))
                self.incident = plan.first_event(plan.minutes)
                if self.incident is None and observation.scenario.incident_hint.strip():
                    self.incident = 0  # no event, a hint: the console stops after the first minute (pause_reason)
        if self.acts_from is None:
            told_at = self._told(observation)
            if told_at is None:
                return []
            self.acts_from = told_at + 1 + self.delay_min
        if observation.minute < self.acts_from:
            return []
        return self.playbook.decide(observation)

    def _told(self, observation: Observation) -> int | None:
        """The minute whose record told the person (the clock stops after it), once it is on the console."""
        last = observation.last
        if last is None:
            return None
        if any(getattr(e, "code", "") == "page_fired" for e in last.events):
            return last.minute
        if self.incident is not None and last.minute >= self.incident:
            return self.incident
        return None

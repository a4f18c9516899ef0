"""What a scenario does on its own during a run, in model terms: minutes since the start, drawn values.

Built once per run by the scenario layer (which owns the files and the random draws); the model only
reads it, so both engines and every surface see the same incident.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from oncallsim.model import MODEL_VERSION
from oncallsim.model.chain.layout import ChainLayout
from oncallsim.model.traffic import Surge

__all__ = ["CLOCK_LABELS", "MAX_RUN_MINUTES", "REVISION", "InstanceFault", "RunPlan", "ServiceFault", "time_label"]

MAX_RUN_MINUTES = 7 * 1440  # the longest run: a week
REVISION = int(MODEL_VERSION)  # the model version this code computes by default

CLOCK_LABELS = tuple(f"{m // 60:02d}:{m % 60:02d}" for m in range(1440))  # minute of the day → "HH:MM"


def time_label(clock_start_min: int, minute: int, days: bool) -> str:
    """A minute on a time axis: "HH:MM", or "d2 09:00" on runs longer than a day (else the clocks repeat)."""
    at = clock_start_min + minute
    return f"d{at // 1440 + 1} {CLOCK_LABELS[at % 1440]}" if days else CLOCK_LABELS[at % 1440]


@dataclass(frozen=True, slots=True)
class InstanceFault:
    """Something that happens to instances at a minute's start (the request engine's; instances.py).

    ``what``: slow, crash, hang, revive (one instance) or zone (a share of the slots off the network for
    ``minutes``). ``pick`` chooses the instance: in [0, 1) a share of the serving fleet (drawn), −1 − id a
    named one."""

    minute: int
    what: str
    pick: float
    speed: float = 1.0
    share: float = 0.0
    minutes: int = 0


@dataclass(frozen=True, slots=True)
class ServiceFault:
    """One service of a chain degraded from ``minute`` for ``minutes``: its work ``slowdown`` times longer, a
    share ``errors`` of its attempts failing (the chain engine applies it at each minute's start)."""

    minute: int
    service: int
    minutes: int
    slowdown: float = 1.0
    errors: float = 0.0

    def active(self, minute: int) -> bool:
        return self.minute <= minute < self.minute + self.minutes


@dataclass(frozen=True, slots=True)
class RunPlan:
    clock_start_min: int = 8 * 60
    minutes: int = 1440
    surge: Surge | None = None
    deploy_minutes: frozenset[int] = frozenset()
    flush_minutes: frozenset[int] = frozenset()
    budget_start: float = 1.0
    faults: tuple[InstanceFault, ...] = ()  # the request engine's instance events, in minute order
    brownouts: tuple[tuple[int, int, float], ...] = ()  # (start minute, minutes, slowdown ×): the database slowed
    # the model version whose rules the run follows (1: replaying a version-1 run file)
    revision: int = REVISION
    # the request engine's fleet, by instance slot (a list repeats over the slots; empty: all alike): each slot's
    # speed (its machine: 2 = twice the CPU of the model's instance) and the weight it registers with (default 10)
    speeds: tuple[float, ...] = ()
    weights: tuple[float, ...] = ()
    # a chain of services (a scenario's [graph], docs/graphs.md): the request engine plays it instead of the one
    # service; None: the one service
    graph: ChainLayout | None = None
    service_faults: tuple[ServiceFault, ...] = ()  # a chain's services degraded, in minute order

    def first_event(self, minutes: int) -> int | None:
        """The scenario's first event within ``minutes``: a deploy, a flush, a surge's onset (the incident's start)."""
        starts = [
            *self.deploy_minutes,
            *self.flush_minutes,
            *(f.minute for f in self.faults if f.what != "revive"),
            *(b[0] for b in self.brownouts),
            *(f.minute for f in self.service_faults),
        ]
        if self.surge is not None:
            starts.append(math.ceil(self.surge.onset_min))
        starts = [m for m in starts if m < minutes]
        return min(starts) if starts else None

    def time_label(self, minute: int) -> str:
        """The minute's label on the run's time axes (the day shown when the run is longer than one)."""
        return time_label(self.clock_start_min, minute, self.minutes > 1440)

    def clock(self, minute: int) -> str:
        """The time of day of a minute, "HH:MM" (wrapping past midnight)."""
        return CLOCK_LABELS[(self.clock_start_min + minute) % 1440]

"""The textbook operator's fleet playbook (request engine): read the fleet view, take bad instances out.

- An instance in rotation that fails most of what it is sent (refused, never answered, timing out) or whose
  p99 is several times the fleet's median is **ejected** — at most half the rotation, worst first.
- One or two bad instances are **replaced** (a slow disk or a crash does not heal); more at once look like a
  zone or network problem: eject them, raise the floor by as many so capacity holds, and wait.
- When the zone is back online, readmit what was ejected and restore the opening floor.

Only what the console shows is read: the per-instance lines of the last record and its events.
"""

from __future__ import annotations

import statistics
from typing import Any

from oncallsim.model.events import Event
from oncallsim.simulation import Observation

__all__ = ["FleetPlaybook"]

FAILING_SHARE = 0.5  # an instance failing this share of what it was sent is bad
MIN_FAILURES = 3  # … with at least this many failures in the minute (a trickle proves little)
SLOW_RATIO = 3.0  # an instance whose p99 is this many times the fleet's median is bad
SLOW_FLOOR_MS = 500.0  # … and above this
REPLACE_AT_MOST = 2  # more bad instances at once: a zone, not a machine


class FleetPlaybook:
    """Per-run memory: the instances it ejected, the floor it raised from."""

    def __init__(self) -> None:
        self.ejected: set[int] = set()
        self.replacing: set[int] = set()
        self.opening_floor: int | None = None

    def decide(self, observation: Observation) -> list[tuple[str, Any]]:
        last = observation.last
        if last is None or not last.extras or "instances" not in last.extras:
            return []
        if self.opening_floor is None:
            self.opening_floor = observation.controls.floor
        lines = last.extras["instances"]
        serving = len(lines["served"])
        events = [e for e in last.events if isinstance(e, Event)]
        codes = {e.code for e in events}
        for e in events:
            if e.code == "instance_replaced":
                self.replacing.discard(int(e.args["instance"]))
        self.ejected = {i for i in self.ejected if i < serving and lines["ejected"][i]}
        actions: list[tuple[str, Any]] = []
        if "zone_back" in codes and self.ejected:
            actions.extend(("readmit", i) for i in sorted(self.ejected))
            self.ejected.clear()
            if observation.controls.floor != self.opening_floor:
                actions.append(("floor", self.opening_floor))
            return actions
        rotation = [
            i
            for i in range(serving)
            if lines["registered"][i] and not lines["ejected"][i] and not lines.get("replacing", [0] * serving)[i]
        ]
        bad = self._bad(lines, rotation)[: len(rotation) // 2]
        if not bad:
            return []
        actions.extend(("eject", i) for i in bad)
        self.ejected.update(bad)
        if len(bad) + len(self.replacing) <= REPLACE_AT_MOST:
            actions.extend(("replace", i) for i in bad)
            self.replacing.update(bad)
        else:
            floor = min(observation.controls.floor + len(bad), observation.params.max_fleet)
            actions.append(("floor", floor))
        return actions

    @staticmethod
    def _bad(lines: dict[str, list[Any]], rotation: list[int]) -> list[int]:
        """The instances in rotation that fail or lag, worst first."""
        p99s = [lines["p99_ms"][i] for i in rotation if lines["p99_ms"][i] is not None]
        median = statistics.median(p99s) if p99s else None
        scored: list[tuple[float, int]] = []
        for i in rotation:
            served, errors, p99 = lines["served"][i], lines["errors"][i], lines["p99_ms"][i]
            sent = max(served, errors)
            if errors >= MIN_FAILURES and errors >= FAILING_SHARE * sent:
                scored.append((2.0 + errors / max(sent, 1), i))
            elif median is not None and p99 is not None and p99 > SLOW_FLOOR_MS and p99 > SLOW_RATIO * median:
                scored.append((p99 / median, i))
        return [i for _, i in sorted(scored, reverse=True)]

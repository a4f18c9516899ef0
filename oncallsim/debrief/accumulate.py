"""The outcome of many runs at once, accumulated minute by minute (O(runs) memory, whatever the length).

One piece of code for both engines: the scalar debrief feeds one run's records, the batch engine feeds its
arrays. ``incident.py`` keeps the per-minute definitions (phases need them); a test checks they agree.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from oncallsim.debrief.incident import RECOVERY_HOLD_MIN
from oncallsim.model import MinuteRecord, Params, RunPlan

__all__ = ["FEEDS", "OutcomeAccumulator", "scenario_incident_start"]

F = npt.NDArray[np.float64]
NO_MINUTE = -1

# The record fields the accumulator reads.
FEEDS = (
    "error_rate",
    "error_overload",
    "error_timeout",
    "error_bad_build",
    "error_dead_instance",
    "budget_left",
    "cost_per_hour",
    "p99_ms",
    "shed_per_s",
    "cache_hit",
    "admitted_per_s",
    "mean_age_s",
    "db_utilization",
    "page_firing",
    "requests_per_s",
)


def scenario_incident_start(plan: RunPlan, minutes: int) -> int:
    """The first scenario event within ``minutes`` (deploy, flush, surge onset), or -1 for none."""
    start = plan.first_event(minutes)
    return NO_MINUTE if start is None else start


SUMMED = (
    "error_rate",
    "error_overload",
    "error_timeout",
    "error_bad_build",
    "error_dead_instance",
    "cost_per_hour",
    "shed_per_s",
    "requests_per_s",
)


class OutcomeAccumulator:
    def __init__(
        self, runs: int, params: Params, budget_start: F, latency_target_ms: float, p99_targets: Iterable[float] = ()
    ) -> None:
        self.params = params
        self.latency_target_ms = latency_target_ms
        self.minutes = 0
        self.budget_start = np.asarray(budget_start, dtype=np.float64)
        z = np.zeros(runs)
        self.sums = {
            name: z.copy()
            for name in (
                "error_rate",
                "error_overload",
                "error_timeout",
                "error_bad_build",
                "error_dead_instance",
                "cost_per_hour",
                "shed_per_s",
                "requests_per_s",
                "hits",
                "aged_hits",
            )
        }
        self.budget_left = self.budget_start.copy()
        self.worst_p99 = z.copy()
        self.over_latency = np.zeros(runs, dtype=np.int64)
        self.max_db = z.copy()
        self.db_over = np.zeros(runs, dtype=np.int64)
        self.first_page = np.full(runs, NO_MINUTE, dtype=np.int64)
        self.last_bad = np.full(runs, NO_MINUTE, dtype=np.int64)
        self.was_firing = np.zeros(runs, dtype=bool)
        self.targets = sorted({float(x) for x in p99_targets} | {float(latency_target_ms)})
        self.within = {x: np.zeros(runs, dtype=np.int64) for x in self.targets}

    def add(self, t: int, f: dict[str, Any]) -> None:
        """Minute ``t`` of every run; ``f`` maps each name in FEEDS to a value per run."""
        for name in SUMMED:
            self.sums[name] += f[name]
        hits = f["cache_hit"] * f["admitted_per_s"]
        self.sums["hits"] += hits
        self.sums["aged_hits"] += hits * f["mean_age_s"]
        self.budget_left = np.asarray(f["budget_left"], dtype=np.float64)
        p99 = f["p99_ms"]
        self.worst_p99 = np.maximum(self.worst_p99, p99)
        self.over_latency += p99 > self.latency_target_ms
        for target, count in self.within.items():
            count += p99 <= target
        self.max_db = np.maximum(self.max_db, f["db_utilization"])
        self.db_over += f["db_utilization"] >= 1.0
        firing = np.asarray(f["page_firing"], dtype=bool)
        self.first_page = np.where((self.first_page == NO_MINUTE) & firing & ~self.was_firing, t, self.first_page)
        self.was_firing = firing
        self.last_bad = np.where(f["error_rate"] > self.params.error_budget, t, self.last_bad)
        self.minutes = t + 1

    def add_records(self, timeline: Sequence[MinuteRecord]) -> None:
        for r in timeline:
            self.add(r.minute, {name: np.array([getattr(r, name)]) for name in FEEDS})

    def finish(self, scenario_starts: Sequence[int], first_actions: Sequence[Sequence[int]]) -> list[dict[str, Any]]:
        """One outcome per run: ``scenario_starts`` from the plans, ``first_actions`` the runs' action minutes."""
        p = self.params
        scale = 1.0 / p.error_budget / p.budget_period_min
        T = self.minutes
        out = []
        for i in range(len(self.budget_left)):
            page = int(self.first_page[i])
            start: int | None = (
                scenario_starts[i] if scenario_starts[i] != NO_MINUTE else (page if page != NO_MINUTE else None)
            )
            recovered: int | None = None
            if start is not None:
                last_bad = int(self.last_bad[i])
                if last_bad < start:
                    recovered = start
                elif last_bad + 1 < T and T - (last_bad + 1) >= min(RECOVERY_HOLD_MIN, T - start):
                    recovered = last_bad + 1
            mitigation = next((m for m in sorted(first_actions[i]) if start is not None and m >= start), None)
            hits = float(self.sums["hits"][i])
            requests = float(self.sums["requests_per_s"][i]) * 60.0
            shed = float(self.sums["shed_per_s"][i]) * 60.0
            out.append(
                {
                    "budget_spent": float(self.sums["error_rate"][i]) * scale,
                    "budget_spent_by_cause": {
                        "overload": float(self.sums["error_overload"][i]) * scale,
                        "timeout": float(self.sums["error_timeout"][i]) * scale,
                        "bad_build": float(self.sums["error_bad_build"][i]) * scale,
                        "dead_instance": float(self.sums["error_dead_instance"][i]) * scale,
                    },
                    "budget_left": float(self.budget_left[i]) if T else float(self.budget_start[i]),
                    "cost": float(self.sums["cost_per_hour"][i]) / 60.0,
                    "worst_p99_ms": float(self.worst_p99[i]),
                    "minutes_over_latency_target": int(self.over_latency[i]),
                    "shed_requests": shed,
                    "requests": requests,
                    "turned_away_share": shed / requests if requests > 0 else 0.0,
                    "mean_staleness_s": float(self.sums["aged_hits"][i]) / hits if hits > 0 else 0.0,
                    "max_db_utilization": float(self.max_db[i]),
                    "minutes_db_over_capacity": int(self.db_over[i]),
                    "page_minute": None if page == NO_MINUTE else page,
                    "incident_minute": start,
                    "time_to_first_mitigation_min": None if mitigation is None or start is None else mitigation - start,
                    "time_to_recovery_min": None if recovered is None or start is None else recovered - start,
                    "p99_within_share": {f"{x:g}": (float(self.within[x][i]) / T if T else 1.0) for x in self.targets},
                }
            )
        return out

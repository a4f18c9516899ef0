"""The textbook operator: the playbook a careful SRE follows, reading only the console.

- A page during a deploy: roll back (once; the preparation takes its five minutes).
- The cache emptied and the database straining: switch the heavy feature off and shed the low-priority
  traffic at once; start the warm-up when the database has room for its extra load; once the cache is warm
  again, restore in order — first the shed traffic, then the feature — each only when the database can take it.
- Traffic well above the usual for the time of day: raise the floor early, to what the traffic will need
  when new instances finish booting, at a lower target utilization; shed the low-priority traffic while the
  fleet is saturated and take it back once there is room; follow the wave down at the normal target, and
  restore the opening floor once traffic is back to normal.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from oncallsim.model import Controls, MinuteRecord, Params
from oncallsim.model.kernel import kernel_params
from oncallsim.model.traffic import diurnal_rate
from oncallsim.policies.base import register
from oncallsim.simulation import Observation

__all__ = ["Textbook"]

# Thresholds of the playbook (documented in docs/policies.md).
FLUSH_WARMTH = 0.5  # below this the cache counts as flushed
DB_STRAIN = 0.75  # database utilization that calls for relief
DB_COMFORT = 0.7  # predicted utilization under which a restore step is safe
WARMUP_CEILING = 0.85  # start the warm-up when utilization plus its load stays under this
WARM_AGAIN = 0.9  # the cache counts as recovered from here
SURGE_RATIO = 1.15  # traffic over the usual for the time of day that counts as a surge, when growing
SURGE_CLEAR = 1.3  # … and that counts as one whether growing or not
CALM_RATIO = 1.1  # back to normal under this
SURGE_TARGET = 0.5  # target utilization while a surge rises
RISING_SLOPE = 0.02  # traffic growing faster than 2 % a minute counts as rising (noise alone rarely does)


def instances_for(rate: float, service_ms: float, target: float, params: Params) -> int:
    """Instances that carry ``rate`` req/s at ``target`` utilization (Little's law: busy workers = λ·S)."""
    return math.ceil(rate * service_ms / 1000.0 / (params.workers_per_instance * target))


def usual_rate(record: MinuteRecord, params: Params) -> float:
    """The diurnal traffic an operator expects at this time of day, without any surge."""
    hours, minutes = record.clock.split(":")
    return usual_rate_at(int(hours) * 60 + int(minutes), params)


def usual_rate_at(minute_of_day: int, params: Params) -> float:
    return diurnal_rate(0.0, float(minute_of_day), kernel_params(params))  # type: ignore[no-any-return]


@register("textbook")
class Textbook:
    name = "textbook"

    def __init__(self) -> None:
        self.reset(0)

    def reset(self, seed: int) -> None:
        self.opening: Controls | None = None
        self.cache_recovery = False
        self.warmup_started = False
        self.surge = False

    def decide(self, observation: Observation) -> Iterable[tuple[str, Any]]:
        if self.opening is None:
            self.opening = observation.controls
        last = observation.last
        if last is None:
            return []
        actions: list[tuple[str, Any]] = []
        actions += self._deploy(last)
        actions += self._cache(last, observation)
        actions += self._capacity(last, observation)
        return actions

    def _deploy(self, last: MinuteRecord) -> list[tuple[str, Any]]:
        if last.page_firing and last.bad_build_share > 0 and not last.rollback_active:
            return [("rollback", None)]
        return []

    def _cache(self, last: MinuteRecord, obs: Observation) -> list[tuple[str, Any]]:
        controls, params = obs.controls, obs.params
        actions: list[tuple[str, Any]] = []
        if not self.cache_recovery:
            if last.cache_warm < FLUSH_WARMTH and (last.db_utilization > DB_STRAIN or last.error_rate > 0.01):
                self.cache_recovery = True
                self.warmup_started = False
                if controls.recommendations:
                    actions.append(("recommendations", False))
                if controls.shed_share < 1.0:
                    actions.append(("shed_share", 1.0))
            return actions
        warmup_load = params.warmup_db_qps / params.db_capacity_qps
        if not self.warmup_started and not last.warmup_active and last.db_utilization + warmup_load <= WARMUP_CEILING:
            self.warmup_started = True
            return [("warmup", None)]
        if last.warmup_active or last.cache_warm < WARM_AGAIN:
            return []
        opening = self.opening or Controls()
        if controls.shed_share > opening.shed_share:
            unshed = last.db_utilization * last.requests_per_s / max(last.admitted_per_s, 1e-9)
            if unshed <= DB_COMFORT:
                actions.append(("shed_share", opening.shed_share))
            return actions
        if controls.recommendations != opening.recommendations:
            q = params.queries_per_request
            with_feature = last.db_utilization * (q + params.feature_queries_per_request) / q
            if with_feature <= DB_COMFORT:
                actions.append(("recommendations", opening.recommendations))
                self.cache_recovery = False
            return actions
        self.cache_recovery = False
        return actions

    def _capacity(self, last: MinuteRecord, obs: Observation) -> list[tuple[str, Any]]:
        controls, params = obs.controls, obs.params
        opening = self.opening or Controls()
        ratio = last.requests_per_s / max(usual_rate(last, params), 1e-9)
        recent = [r.requests_per_s for r in obs.timeline[-4:]]
        slope = max(0.0, (recent[-1] - recent[0]) / max(len(recent) - 1, 1))
        rising = slope > RISING_SLOPE * last.requests_per_s
        if not self.surge:
            # a surge is traffic well over the usual that is growing (or far over it): the noisy tail of a
            # wave hovering near the threshold does not count again
            if ratio < SURGE_RATIO or not (rising or ratio >= SURGE_CLEAR):
                return []
            self.surge = True
        if ratio < CALM_RATIO:
            self.surge = False
            back: list[tuple[str, Any]] = []
            if controls.shed_share != opening.shed_share and not self.cache_recovery:
                back.append(("shed_share", opening.shed_share))
            if controls.target_utilization != opening.target_utilization:
                back.append(("target_utilization", opening.target_utilization))
            if controls.floor != opening.floor:
                back.append(("floor", opening.floor))
            return back
        actions: list[tuple[str, Any]] = []
        target = SURGE_TARGET if rising else opening.target_utilization
        if controls.target_utilization != target:
            actions.append(("target_utilization", target))
        projected = last.requests_per_s + slope * (params.boot_delay_min + 2)
        need = instances_for(projected, last.service_time_ms, target, params)
        floor = max(opening.floor, min(params.max_fleet, need))
        # raise with the wave (or on a clear deficit), lower only as it ebbs: no flapping on noise
        if (floor > controls.floor and (rising or floor >= controls.floor + 3)) or (
            not rising and floor <= controls.floor - 2
        ):
            actions.append(("floor", floor))
        # Shedding buys time while capacity boots; full traffic returns once the fleet has room for it.
        saturated = last.utilization >= 0.95 or last.error_rate > params.error_budget
        if saturated and controls.shed_share < 1.0:
            actions.append(("shed_share", 1.0))
        elif controls.shed_share > opening.shed_share and not self.cache_recovery:
            full_load = last.utilization * last.requests_per_s / max(last.admitted_per_s, 1e-9)
            if last.booting == 0 and full_load <= 0.8:
                actions.append(("shed_share", opening.shed_share))
        return actions

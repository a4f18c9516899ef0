"""The textbook operator: the playbook a careful SRE follows, reading only the console.

- A page during a deploy: roll back (once; the preparation takes its five minutes).
- The cache emptied and the database straining: switch the heavy feature off and shed the low-priority
  traffic at once; start the warm-up when the database has room for its extra load; once the cache is warm
  again, restore in order — first the shed traffic, then the feature — each only when the database can take it.
- Traffic well above the usual for the time of day: raise the floor early, to what the traffic will need
  when new instances finish booting, at a lower target utilization; shed the low-priority traffic while the
  fleet is saturated and take it back once there is room; follow the wave down at the normal target, and
  restore the opening floor once traffic is back to normal.
- On the request engine, the fleet view: eject (and replace) instances that fail or lag (policies/fleet.py).
- On a chain of services, instead of all the above (its cache and database are services of the graph, its fleet
  the entry's): each lesson's fix when its failure shows (policies/chains.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
import numpy.typing as npt

from oncallsim.model import CONTROL_SPECS, MinuteRecord, Params
from oncallsim.model.fields import REC, ST
from oncallsim.model.kernel import P, compiled, kernel_params, step
from oncallsim.model.traffic import diurnal_rate
from oncallsim.policies.base import register
from oncallsim.policies.chains import ChainPlaybook
from oncallsim.policies.fleet import FleetPlaybook
from oncallsim.simulation import Observation

__all__ = ["MAX_ACTIONS", "Textbook", "decide_k", "to_actions"]

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
CACHE_ERRORS = 0.01  # an error rate that, with a cold cache, calls for relief
SATURATED = 0.95  # utilization at which the fleet counts as saturated
ROOM_TO_UNSHED = 0.8  # utilization with the shed traffic back that leaves room for it
BOOT_MARGIN_MIN = 2  # minutes past the boot delay the floor is sized for

# The compiled playbook writes its decisions as (control index, value) pairs; the index is the control's
# position in the registry.
MAX_ACTIONS = 8
_CONTROL_NAMES = tuple(CONTROL_SPECS)
_FLOOR, _AUTOSCALER, _TARGET, _TTL, _SHED, _REC, _WARMUP, _ROLLBACK = (
    _CONTROL_NAMES.index(name)
    for name in (
        "floor",
        "autoscaler",
        "target_utilization",
        "ttl_s",
        "shed_share",
        "recommendations",
        "warmup",
        "rollback",
    )
)
# the policy's own memory, per run
_CACHE_RECOVERY, _WARMUP_STARTED, _SURGE = 0, 1, 2


@step
def _push(codes: Any, values: Any, k: int, code: int, value: float) -> int:
    codes[k] = code
    values[k] = value
    return k + 1


@compiled
def decide_k(
    last: Any, ctl: Any, opening: Any, memory: Any, recent: Any, usual: float, p: Any, codes: Any, values: Any
) -> int:
    """The playbook for one run, compiled: the scalar policy and the batch's vectorized one both call it.

    ``last`` is the last minute's record vector, ``ctl`` and ``opening`` the controls in force and at the
    start (state-vector layout), ``memory`` the policy's flags, ``recent`` the last (up to four) minutes'
    traffic, ``usual`` the diurnal rate for the time of day. Writes the decisions; returns how many.
    """
    k = 0
    # A page during a deploy: roll back (once).
    if last[REC.page_firing] != 0.0 and last[REC.bad_build_share] > 0 and last[REC.rollback_active] == 0.0:
        k = _push(codes, values, k, _ROLLBACK, 0.0)
    # The cache playbook.
    k = _cache_k(last, ctl, opening, memory, p, codes, values, k)
    # The capacity playbook.
    return _capacity_k(last, ctl, opening, memory, recent, usual, p, codes, values, k)


@step
def _cache_k(last: Any, ctl: Any, opening: Any, memory: Any, p: Any, codes: Any, values: Any, k: int) -> int:
    if memory[_CACHE_RECOVERY] == 0:
        if last[REC.cache_warm] < FLUSH_WARMTH and (
            last[REC.db_utilization] > DB_STRAIN or last[REC.error_rate] > CACHE_ERRORS
        ):
            memory[_CACHE_RECOVERY] = 1
            memory[_WARMUP_STARTED] = 0
            if ctl[ST.recommendations] != 0.0:
                k = _push(codes, values, k, _REC, 0.0)
            if ctl[ST.shed_share] < 1.0:
                k = _push(codes, values, k, _SHED, 1.0)
        return k
    warmup_load = p[P.warmup_db_qps] / p[P.db_capacity_qps]
    warmup_active = last[REC.warmup_active] != 0.0
    if memory[_WARMUP_STARTED] == 0 and not warmup_active and last[REC.db_utilization] + warmup_load <= WARMUP_CEILING:
        memory[_WARMUP_STARTED] = 1
        return _push(codes, values, k, _WARMUP, 0.0)
    if warmup_active or last[REC.cache_warm] < WARM_AGAIN:
        return k
    if ctl[ST.shed_share] > opening[ST.shed_share]:
        unshed = last[REC.db_utilization] * last[REC.requests_per_s] / max(last[REC.admitted_per_s], 1e-9)
        if unshed <= DB_COMFORT:
            k = _push(codes, values, k, _SHED, opening[ST.shed_share])
        return k
    if ctl[ST.recommendations] != opening[ST.recommendations]:
        q = p[P.queries_per_request]
        with_feature = last[REC.db_utilization] * (q + p[P.feature_queries_per_request]) / q
        if with_feature <= DB_COMFORT:
            k = _push(codes, values, k, _REC, opening[ST.recommendations])
            memory[_CACHE_RECOVERY] = 0
        return k
    memory[_CACHE_RECOVERY] = 0
    return k


@step
def _capacity_k(
    last: Any, ctl: Any, opening: Any, memory: Any, recent: Any, usual: float, p: Any, codes: Any, values: Any, k: int
) -> int:
    requests = last[REC.requests_per_s]
    ratio = requests / max(usual, 1e-9)
    n = len(recent)
    slope = max(0.0, (recent[n - 1] - recent[0]) / max(n - 1, 1))
    rising = slope > RISING_SLOPE * requests
    if memory[_SURGE] == 0:
        # a surge is traffic well over the usual that is growing (or far over it): the noisy tail of a
        # wave hovering near the threshold does not count again
        if ratio < SURGE_RATIO or not (rising or ratio >= SURGE_CLEAR):
            return k
        memory[_SURGE] = 1
    if ratio < CALM_RATIO:
        memory[_SURGE] = 0
        if ctl[ST.shed_share] != opening[ST.shed_share] and memory[_CACHE_RECOVERY] == 0:
            k = _push(codes, values, k, _SHED, opening[ST.shed_share])
        if ctl[ST.target_utilization] != opening[ST.target_utilization]:
            k = _push(codes, values, k, _TARGET, opening[ST.target_utilization])
        if ctl[ST.floor] != opening[ST.floor]:
            k = _push(codes, values, k, _FLOOR, opening[ST.floor])
        return k
    target = SURGE_TARGET if rising else opening[ST.target_utilization]
    if ctl[ST.target_utilization] != target:
        k = _push(codes, values, k, _TARGET, target)
    projected = requests + slope * (int(p[P.boot_delay_min]) + BOOT_MARGIN_MIN)
    need = instances_for(projected, last[REC.service_time_ms], target, int(p[P.workers_per_instance]))
    floor = max(int(opening[ST.floor]), min(int(p[P.max_fleet]), need))
    current = int(ctl[ST.floor])
    # raise with the wave (or on a clear deficit), lower only as it ebbs: no flapping on noise
    if (floor > current and (rising or floor >= current + 3)) or (not rising and floor <= current - 2):
        k = _push(codes, values, k, _FLOOR, float(floor))
    # Shedding buys time while capacity boots; full traffic returns once the fleet has room for it.
    saturated = last[REC.utilization] >= SATURATED or last[REC.error_rate] > p[P.error_budget]
    if saturated and ctl[ST.shed_share] < 1.0:
        k = _push(codes, values, k, _SHED, 1.0)
    elif ctl[ST.shed_share] > opening[ST.shed_share] and memory[_CACHE_RECOVERY] == 0:
        full_load = last[REC.utilization] * requests / max(last[REC.admitted_per_s], 1e-9)
        if last[REC.booting] == 0 and full_load <= ROOM_TO_UNSHED:
            k = _push(codes, values, k, _SHED, opening[ST.shed_share])
    return k


@step
def instances_for(rate: float, service_ms: float, target: float, workers_per_instance: int) -> int:
    """Instances that carry ``rate`` req/s at ``target`` utilization (Little's law: busy workers = λ·S)."""
    return math.ceil(rate * service_ms / 1000.0 / (workers_per_instance * target))


def usual_rate(record: MinuteRecord, params: Params) -> float:
    """The diurnal traffic an operator expects at this time of day, without any surge."""
    hours, minutes = record.clock.split(":")
    return usual_rate_at(int(hours) * 60 + int(minutes), params)


def usual_rate_at(minute_of_day: int, params: Params) -> float:
    return diurnal_rate(0.0, float(minute_of_day), kernel_params(params))


def to_actions(codes: npt.NDArray[np.int64], values: npt.NDArray[np.float64], count: int) -> list[tuple[str, Any]]:
    """The compiled playbook's decisions as (control, value) pairs, each value typed as its control wants."""
    out: list[tuple[str, Any]] = []
    for code, value in zip(codes[:count].tolist(), values[:count].tolist(), strict=True):
        name = _CONTROL_NAMES[code]
        kind = CONTROL_SPECS[name].kind
        out.append(
            (
                name,
                None if kind == "button" else int(value) if kind == "int" else bool(value) if kind == "bool" else value,
            )
        )
    return out


@register("textbook")
class Textbook:
    name = "textbook"

    def __init__(self) -> None:
        self.reset(0)

    def reset(self, seed: int) -> None:
        self.opening: npt.NDArray[np.float64] | None = None
        self.memory = np.zeros(3, dtype=np.int64)
        self.codes = np.zeros(MAX_ACTIONS, dtype=np.int64)
        self.values = np.zeros(MAX_ACTIONS)
        self.fleet = FleetPlaybook()
        self.chains = ChainPlaybook()

    def decide(self, observation: Observation) -> Iterable[tuple[str, Any]]:
        if self.opening is None:
            self.opening = observation.controls.to_vector()
        last = observation.last
        if last is None:
            return []
        if observation.scenario.graph is not None:  # a chain: no cache nor database of the minute model to tend
            return self.chains.decide(observation)
        record = np.array(last[2:-2], dtype=np.float64)  # the record's numbers (NUMERIC_FIELDS)
        recent = np.array([r.requests_per_s for r in observation.timeline[-4:]])
        usual = usual_rate(last, observation.params)
        count = decide_k(
            record,
            observation.controls.to_vector(),
            self.opening,
            self.memory,
            recent,
            usual,
            kernel_params(observation.params),
            self.codes,
            self.values,
        )
        return to_actions(self.codes, self.values, count) + self.fleet.decide(observation)

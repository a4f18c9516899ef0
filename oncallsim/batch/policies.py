"""Vectorized forms of the built-in policies: the same decisions as ``oncallsim.policies``, for all runs at once.

``VectorTextbook`` mirrors ``Textbook`` branch by branch (thresholds are imported from it, not copied), reading
the batch's last-minute arrays and its controls as they stood before the minute. tests/test_batch.py checks
that a batch with it gives the same records as scalar runs with ``Textbook``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from oncallsim.model import Params
from oncallsim.policies import textbook as tb
from oncallsim.simulation import Policy

__all__ = ["VECTOR_POLICIES", "VectorHandsOff", "VectorPolicy", "VectorTextbook", "vectorized"]

Decisions = dict[int, list[tuple[str, Any]]]


class VectorPolicy(Protocol):
    name: str

    def reset(self, batch: Any) -> None: ...

    def decide(self, batch: Any) -> Decisions: ...


class VectorHandsOff:
    name = "hands-off"

    def reset(self, batch: Any) -> None:
        pass

    def decide(self, batch: Any) -> Decisions:
        return {}


def _instances_for(rate: Any, service_ms: Any, target: Any, params: Params) -> Any:
    return np.ceil(rate * service_ms / 1000.0 / (params.workers_per_instance * target)).astype(np.int64)


class VectorTextbook:
    name = "textbook"

    def reset(self, batch: Any) -> None:
        n = batch.n
        self.open_floor = batch.floor.copy()
        self.open_target = batch.target.copy()
        self.open_shed = batch.shed.copy()
        self.open_rec = batch.rec.copy()
        self.cache_recovery = np.zeros(n, dtype=bool)
        self.warmup_started = np.zeros(n, dtype=bool)
        self.surge = np.zeros(n, dtype=bool)

    def decide(self, batch: Any) -> Decisions:
        last = batch.last
        if last is None:
            return {}
        p: Params = batch.params
        acts: Decisions = {}

        def add(mask: Any, control: str, value: Callable[[int], Any] | Any) -> None:
            for i in np.flatnonzero(mask):
                acts.setdefault(int(i), []).append((control, value(int(i)) if callable(value) else value))

        floor, target, shed, rec = batch.floor.copy(), batch.target.copy(), batch.shed.copy(), batch.rec.copy()

        # a page during a deploy: roll back
        add(last["page_firing"] & (last["bad_build_share"] > 0) & ~last["rollback_active"], "rollback", None)

        # the cache playbook
        entering = (
            ~self.cache_recovery
            & (last["cache_warm"] < tb.FLUSH_WARMTH)
            & ((last["db_utilization"] > tb.DB_STRAIN) | (last["error_rate"] > 0.01))
        )
        add(entering & rec, "recommendations", False)
        add(entering & (shed < 1.0), "shed_share", 1.0)
        recovering = self.cache_recovery.copy()
        warmup_load = p.warmup_db_qps / p.db_capacity_qps
        warm_up = (
            recovering
            & ~self.warmup_started
            & ~last["warmup_active"]
            & (last["db_utilization"] + warmup_load <= tb.WARMUP_CEILING)
        )
        add(warm_up, "warmup", None)
        restoring = recovering & ~warm_up & ~(last["warmup_active"] | (last["cache_warm"] < tb.WARM_AGAIN))
        shedding = restoring & (shed > self.open_shed)
        unshed = last["db_utilization"] * last["requests_per_s"] / np.maximum(last["admitted_per_s"], 1e-9)
        add(shedding & (unshed <= tb.DB_COMFORT), "shed_share", lambda i: float(self.open_shed[i]))
        feature = restoring & ~shedding & (rec != self.open_rec)
        q = p.queries_per_request
        with_feature = last["db_utilization"] * (q + p.feature_queries_per_request) / q
        feature_back = feature & (with_feature <= tb.DB_COMFORT)
        add(feature_back, "recommendations", lambda i: bool(self.open_rec[i]))
        done = restoring & ~shedding & ~feature
        self.cache_recovery = (self.cache_recovery | entering) & ~feature_back & ~done
        self.warmup_started = np.where(entering, False, self.warmup_started | warm_up)

        # the capacity playbook
        minute_of_day = (batch.clock_start + batch.t - 1) % 1440
        ratio = last["requests_per_s"] / max(tb.usual_rate_at(minute_of_day, p), 1e-9)
        history = batch.request_history
        slope = np.maximum(0.0, (history[-1] - history[0]) / max(len(history) - 1, 1))
        rising = slope > tb.RISING_SLOPE * last["requests_per_s"]
        active = self.surge | ((ratio >= tb.SURGE_RATIO) & (rising | (ratio >= tb.SURGE_CLEAR)))
        calm = active & (ratio < tb.CALM_RATIO)
        add(calm & (shed != self.open_shed) & ~self.cache_recovery, "shed_share", lambda i: float(self.open_shed[i]))
        add(calm & (target != self.open_target), "target_utilization", lambda i: float(self.open_target[i]))
        add(calm & (floor != self.open_floor), "floor", lambda i: int(self.open_floor[i]))
        self.surge = active & ~calm
        surging = self.surge
        want_target = np.where(rising, tb.SURGE_TARGET, self.open_target)
        add(surging & (target != want_target), "target_utilization", lambda i: float(want_target[i]))
        projected = last["requests_per_s"] + slope * (p.boot_delay_min + 2)
        need = _instances_for(projected, last["service_time_ms"], want_target, p)
        new_floor = np.maximum(self.open_floor, np.minimum(p.max_fleet, need))
        raise_floor = (new_floor > floor) & (rising | (new_floor >= floor + 3))
        add(surging & (raise_floor | (~rising & (new_floor <= floor - 2))), "floor", lambda i: int(new_floor[i]))
        saturated = (last["utilization"] >= 0.95) | (last["error_rate"] > p.error_budget)
        shed_on = surging & saturated & (shed < 1.0)
        add(shed_on, "shed_share", 1.0)
        full_load = last["utilization"] * last["requests_per_s"] / np.maximum(last["admitted_per_s"], 1e-9)
        shed_off = (
            surging
            & ~(saturated & (shed < 1.0))
            & (shed > self.open_shed)
            & ~self.cache_recovery
            & (last["booting"] == 0)
            & (full_load <= 0.8)
        )
        add(shed_off, "shed_share", lambda i: float(self.open_shed[i]))
        return acts


VECTOR_POLICIES: dict[str, Callable[[], VectorPolicy]] = {"hands-off": VectorHandsOff, "textbook": VectorTextbook}


def vectorized(policy: str | Policy | None) -> VectorPolicy | None:
    """The vectorized form of a built-in policy (by name or instance), or None: the scalar path then."""
    if policy is None:
        return VectorHandsOff()
    name = policy if isinstance(policy, str) else getattr(policy, "name", None)
    builtin = isinstance(policy, str) or type(policy).__module__.startswith("oncallsim.policies")
    if builtin and name in VECTOR_POLICIES:
        return VECTOR_POLICIES[name]()
    return None

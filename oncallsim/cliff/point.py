"""Where a service stands for the chain: its operating point (arrivals, workers, service time, timeout and the
clients' retry settings).

The numbers are what the request engine measures: the admitted rate λ and the capacity cμ = N/S of a minute (S
measured over the requests it completed), and cμ under the trigger. The map takes them from a pilot run of each
point without retries (``pilot_point``), a live run from its last minute and, for the trigger, from a pilot run of
its scenario. The engine's brownout is harsher than the minute model's formula says (its cache refills late while
the database crawls; docs/cliff.md measures by how much), so the chain takes the engine's.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from oncallsim.cliff.trigger import Trigger, with_trigger
from oncallsim.model import Controls, MinuteRecord, Params
from oncallsim.model.retry_chain import RetryServer
from oncallsim.scenarios import Scenario
from oncallsim.simulation import Simulation, split_overrides

__all__ = [
    "LOOP_BREAKERS",
    "RETRY_CONTROLS",
    "OperatingPoint",
    "backoff_mean_s",
    "pilot_point",
    "point_settings",
    "record_point",
    "trigger_ratio",
]

# Settings that keep a retried attempt from waiting out a queue past its timeout, each in its own way: the chain
# models FIFO queues (and deadline propagation), not these.
LOOP_BREAKERS = {
    "queue_discipline": ("codel", "adaptive-lifo"),
    "limiter": ("bbr", "token-bucket"),
    "breaker": ("sre", "classic"),
}


@dataclass(frozen=True)
class OperatingPoint:
    """The numbers the chain and the gauge need, and the settings they come from."""

    arrivals_per_s: float  # λ: calls admitted per second
    workers: int  # c
    service_s: float  # S
    timeout_s: float  # T
    retries: int
    backoff_s: float  # the mean backoff before a retry
    retry_budget: float
    queue_limit: int
    deadlines: bool
    breakers: tuple[str, ...]  # the settings of ``LOOP_BREAKERS`` in force (the chain does not model them)
    trigger_service_s: float  # S under the trigger (S: none)
    trigger_minutes: int

    @property
    def capacity_per_s(self) -> float:
        return self.workers / self.service_s

    @property
    def load(self) -> float:
        """λ/cμ: the first attempts against what the workers complete."""
        return self.arrivals_per_s / self.capacity_per_s

    @property
    def trigger_capacity_per_s(self) -> float:
        return self.workers / self.trigger_service_s

    def server(self, shape: str = "fixed") -> RetryServer:
        """The chain's server and clients at this point (out of the trigger)."""
        return RetryServer(
            self.arrivals_per_s,
            self.workers,
            self.service_s,
            self.timeout_s,
            retries=self.retries,
            backoff_s=self.backoff_s,
            retry_budget=self.retry_budget,
            queue_limit=self.queue_limit,
            deadlines=self.deadlines,
            timeout_shape=shape,  # type: ignore[arg-type]
        )

    def with_arrivals(self, arrivals_per_s: float) -> OperatingPoint:
        return replace(self, arrivals_per_s=arrivals_per_s)


def backoff_mean_s(kind: str, base_s: float, cap_s: float, retries: int) -> float:
    """The mean wait before a retry, over a call's retries n = 1…N (every one of them sent, as in the bad mode):
    exponential min(cap, base·2ⁿ); full jitter half of it; equal jitter three quarters; decorrelated jitter
    min(cap, U(base, 3·previous)), its mean followed from one retry to the next (the first previous: base)."""
    if retries <= 0 or kind == "none":
        return 0.0
    waits = [min(cap_s, base_s * 2.0**n) for n in range(1, retries + 1)]
    if kind == "exponential":
        return sum(waits) / retries
    if kind == "full-jitter":
        return sum(waits) / retries / 2.0
    if kind == "equal-jitter":
        return sum(waits) / retries * 0.75
    if kind == "decorrelated-jitter":
        previous, total = base_s, 0.0
        for _ in range(retries):
            previous = min(cap_s, (base_s + 3.0 * previous) / 2.0)
            total += previous
        return total / retries
    raise ValueError(f"unknown backoff {kind!r}")


def _settings_point(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The retry settings of the point, from the settings in force (by control name)."""
    retries = int(settings["retries"])
    return {
        "retries": retries,
        "backoff_s": backoff_mean_s(
            str(settings["retry_backoff"]),
            float(settings["retry_base_ms"]) / 1000.0,
            float(settings["retry_cap_ms"]) / 1000.0,
            retries,
        ),
        "retry_budget": float(settings["retry_budget"]),
        "queue_limit": int(settings["queue_limit"]),
        "deadlines": bool(settings["deadline_propagation"]),
        "breakers": tuple(name for name, on in LOOP_BREAKERS.items() if settings.get(name) in on),
    }


def point_settings(scenario: Scenario, overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    """The retry settings and the timeout of ``scenario`` with ``overrides`` (its opening controls)."""
    params, controls = split_overrides(overrides)
    settings = Controls.from_mapping({**scenario.controls, **controls})
    return {
        "timeout_s": Params().with_overrides({**scenario.params, **params}).timeout_s,
        **_settings_point({name: getattr(settings, name) for name in Controls.__dataclass_fields__}),
    }


RETRY_CONTROLS = ("retries", "retry_backoff", "retry_base_ms", "retry_cap_ms", "retry_budget")


def trigger_ratio(scenario: Scenario, overrides: Mapping[str, Any] | None, trigger: Trigger) -> float:
    """cμ under ``trigger`` over cμ before it, as a pilot run measures them (``pilot_point``, two minutes before
    it): the live gauge's trigger. Kept per scenario, overrides and trigger (every run of a scenario shares it)."""
    return _ratio(
        json.dumps(scenario.model_dump(mode="json"), sort_keys=True),
        json.dumps(dict(overrides or {}), sort_keys=True),
        trigger,
    )


@lru_cache(maxsize=32)
def _ratio(scenario: str, overrides: str, trigger: Trigger) -> float:
    point = pilot_point(Scenario.model_validate(json.loads(scenario)), json.loads(overrides), trigger, 2)
    return point.service_s / point.trigger_service_s


def pilot_point(
    scenario: Scenario, overrides: Mapping[str, Any] | None, trigger: Trigger, warmup: int
) -> OperatingPoint:
    """The point of ``scenario`` with ``overrides`` as the request engine measures it in a pilot run without
    retries and without noise (seed 0): λ and cμ in the minute before ``trigger`` (at minute ``warmup``), cμ
    over the trigger's minutes. Without retries the engine's capacity under the trigger is the trigger's own:
    with them, a storm's extra lookups also warm the cache and the capacity it measures is partly the storm's."""
    quiet = {**(overrides or {}), "retries": 0}
    sim = Simulation(
        with_trigger(scenario, trigger, warmup),
        seed=0,
        overrides=quiet,
        noise=False,
        minutes=warmup + trigger.minutes,
        engine="request",
    )
    records = sim.run()
    before = records[warmup - 1]
    during = [r.capacity_per_s for r in records[warmup:]]
    return OperatingPoint(
        arrivals_per_s=before.admitted_per_s,
        workers=int(before.servers),
        service_s=before.servers / before.capacity_per_s,
        trigger_service_s=before.servers / (sum(during) / len(during)),
        trigger_minutes=trigger.minutes,
        **point_settings(scenario, overrides),
    )


def record_point(
    record: MinuteRecord, params: Params, trigger_ratio: float = 1.0, trigger_minutes: int = 0
) -> OperatingPoint | None:
    """A request-engine minute's point: its admitted rate, its measured capacity N/S, the settings it carries;
    S under a trigger ``trigger_ratio`` times S. None for a minute with no worker serving or no settings."""
    settings = (record.extras or {}).get("settings")
    if not settings or record.servers <= 0 or record.capacity_per_s <= 0 or not math.isfinite(record.capacity_per_s):
        return None
    service_s = record.servers / record.capacity_per_s
    return OperatingPoint(
        arrivals_per_s=record.admitted_per_s,
        workers=int(record.servers),
        service_s=service_s,
        timeout_s=params.timeout_s,
        trigger_service_s=service_s * trigger_ratio,
        trigger_minutes=trigger_minutes,
        **_settings_point(settings),
    )

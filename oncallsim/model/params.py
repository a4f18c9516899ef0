"""Every constant of the minute model in one frozen object.

Each field carries its unit, its source and its allowed range as metadata, so that the CLI's ``--set``,
the scenario validator and the model reference page are all fed by this one table and cannot drift.
Sources: ``ref`` (stated by the reference), ``assumption`` (the reference's illustrative calibration),
``decision`` (ours, argued in docs/model.md).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from oncallsim.model.errors import InvalidInput, number_text, quote

__all__ = ["DEFAULT_PARAMS", "ParamInfo", "Params", "param_info"]


def _p(default: float, unit: str, source: str, doc: str, lo: float, hi: float, integer: bool = False) -> Any:
    return field(
        default=default,
        metadata={"unit": unit, "source": source, "doc": doc, "min": lo, "max": hi, "integer": integer},
    )


@dataclass(frozen=True, slots=True)
class Params:
    """The model's constants. Scenarios and ``--set NAME=VALUE`` override fields by name."""

    workers_per_instance: int = _p(
        16, "workers", "assumption", "Concurrent requests one instance serves.", 1, 1024, True
    )
    app_time_ms: float = _p(50.0, "ms", "assumption", "App CPU time per request.", 0.1, 10_000.0)
    feature_app_time_ms: float = _p(
        20.0, "ms", "assumption", "Extra CPU time per request with recommendations on.", 0.0, 10_000.0
    )
    queries_per_request: float = _p(2.0, "queries", "assumption", "Database queries per request.", 0.0, 100.0)
    feature_queries_per_request: float = _p(
        1.0, "queries", "assumption", "Extra DB queries per request with recommendations on.", 0.0, 100.0
    )
    db_capacity_qps: float = _p(4000.0, "queries/s", "assumption", "Database capacity.", 1.0, 1e7)
    db_base_query_ms: float = _p(
        5.0, "ms", "assumption", "Query time of an idle database (5 ms/(1 − ρ)).", 0.01, 1000.0
    )
    db_max_query_ms: float = _p(
        250.0, "ms", "assumption", "Query time cap, and the query time when ρ ≥ 1.", 0.01, 100_000.0
    )
    hot_objects: float = _p(
        20_000.0, "objects", "assumption", "Hot objects sharing the traffic (r = λ / hot objects).", 1.0, 1e9
    )
    cache_refill_tau_min: float = _p(30.0, "min", "assumption", "Cache refill time constant τ.", 0.1, 10_000.0)
    warmup_step: float = _p(
        0.12, "fraction/min", "assumption", "Cache warmth added per minute by the warm-up job.", 0.0, 1.0
    )
    warmup_minutes: int = _p(6, "min", "assumption", "How long the warm-up job runs.", 1, 600, True)
    warmup_db_qps: float = _p(
        600.0, "queries/s", "assumption", "Extra database load while the warm-up job runs.", 0.0, 1e7
    )
    timeout_s: float = _p(2.0, "s", "assumption", "Request timeout; also the p99 cap.", 0.01, 600.0)
    low_priority_share: float = _p(
        0.30, "fraction", "assumption", "Share of traffic that is low priority (prefetch, batch, crawlers).", 0.0, 1.0
    )
    bad_build_error_rate: float = _p(
        0.05, "fraction", "assumption", "Extra error rate of requests served by the bad build.", 0.0, 1.0
    )
    bad_build_cpu_factor: float = _p(1.25, "×", "assumption", "CPU time multiplier of the bad build.", 0.1, 100.0)
    rollout_step: float = _p(
        0.25,
        "fraction/min",
        "decision",
        "Share of traffic the rolling deploy moves to the new build each minute.",
        0.01,
        1.0,
    )
    rollback_minutes: int = _p(5, "min", "ref", "Time to prepare the last good build on a new fleet.", 1, 600, True)
    rollback_cost_factor: float = _p(
        2.0, "×", "ref", "Fleet billing multiplier while a rollback is prepared.", 1.0, 100.0
    )
    instance_price_per_hour: float = _p(
        0.40, "$/instance-hour", "assumption", "Price of one instance, serving or booting.", 0.0, 1000.0
    )
    scale_in_max_share: float = _p(
        0.20, "fraction", "ref", "Largest share of the fleet one scale-in removes.", 0.0, 1.0
    )
    scale_in_quiet_minutes: int = _p(10, "min", "ref", "Quiet minutes before a scale-in.", 1, 1440, True)
    max_fleet: int = _p(40, "instances", "ref", "Largest fleet the autoscaler or the floor may reach.", 1, 1000, True)
    base_requests_per_s: float = _p(
        1000.0, "req/s", "decision", "Diurnal base traffic (reproduces the reference's opening table).", 0.0, 1e7
    )
    diurnal_amplitude: float = _p(0.25, "fraction", "ref", "Amplitude of the daily sine around the base.", 0.0, 1.0)
    diurnal_peak_hour: float = _p(12.0, "h", "ref", "Time of day of the traffic peak.", 0.0, 24.0)
    traffic_noise_cv: float = _p(
        0.02, "fraction", "ref", "Standard deviation of the multiplicative traffic noise.", 0.0, 1.0
    )
    boot_delay_min: int = _p(3, "min", "decision", "Minutes a new instance boots before it serves.", 0, 120, True)
    slo: float = _p(0.999, "fraction", "ref", "Availability objective; the error budget is 1 − SLO.", 0.5, 0.999999)
    budget_period_min: int = _p(43_200, "min", "ref", "Error-budget period (30 days).", 60, 10_000_000, True)
    page_burn_threshold: float = _p(14.4, "×", "ref", "Burn rate that pages (1 h and 5 min windows).", 0.1, 10_000.0)
    burn_long_window_min: int = _p(60, "min", "ref", "Long burn-rate window.", 1, 10_000, True)
    burn_short_window_min: int = _p(5, "min", "decision", "Short burn-rate window.", 1, 10_000, True)
    # the request engine's fleet (reference §1, §7): client-side balancers and service discovery
    clients: int = _p(
        1, "clients", "decision",
        "Client-side balancers, each with its own view (1 = one proxy). Request engine.",
        1, 64, True,
    )  # fmt: skip
    renew_interval_s: float = _p(
        30.0, "s", "ref", "An instance renews its registration this often (Eureka). Request engine.", 1.0, 600.0
    )
    evict_after_s: float = _p(
        90.0, "s", "ref", "The registry evicts an instance not renewed for this long. Request engine.", 1.0, 3600.0
    )
    evict_check_s: float = _p(
        60.0, "s", "ref", "The registry looks for instances to evict this often. Request engine.", 1.0, 3600.0
    )
    registry_poll_s: float = _p(
        30.0, "s", "ref",
        "Model version 1 only: balancers learn of a registry change within this long (long-poll). Since version 2 "
        "a long poll hears of it at once. Request engine.",
        0.0, 600.0,
    )  # fmt: skip
    throttle_k: float = _p(
        2.0, "×", "ref", "Adaptive client throttling's K: clients send up to K times what the backend accepts. "
        "Request engine.", 1.0, 10.0,
    )  # fmt: skip
    self_protection_threshold: float = _p(
        0.85, "fraction", "ref",
        "Self-protection: below this share of the expected renewals in the last minute, nobody is evicted. "
        "Request engine.",
        0.0, 1.0,
    )  # fmt: skip
    retry_budget_burst: float = _p(
        10.0, "tokens", "ref",
        "Retry budget: the tokens a client holds at most (Brooker's token bucket); each call adds retry_budget, "
        "each retry takes one. Request engine.",
        1.0, 1000.0,
    )  # fmt: skip
    retry_bad_build: int = _p(
        0, "switch", "decision",
        "1: clients also retry a bad build's application errors (0: only timeouts, overload, drops, refused "
        "connections and 429s). Request engine.",
        0, 1, True,
    )  # fmt: skip
    # the classic circuit breaker (breaker = classic): Netflix Hystrix's defaults (reference §2; breaker.py)
    breaker_volume: int = _p(
        20, "requests", "ref",
        "Classic breaker: the requests of the last 10 s a client needs before it may trip (Hystrix's "
        "requestVolumeThreshold). Request engine.",
        1, 100_000, True,
    )  # fmt: skip
    breaker_error_share: float = _p(
        0.5, "fraction", "ref",
        "Classic breaker: it trips open once this share of those requests failed (Hystrix's "
        "errorThresholdPercentage). Request engine.",
        0.01, 1.0,
    )  # fmt: skip
    breaker_sleep_s: float = _p(
        5.0, "s", "ref",
        "Classic breaker: it stays open this long before one probe may go (Hystrix's sleepWindowInMilliseconds). "
        "Request engine.",
        0.1, 600.0,
    )  # fmt: skip

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            check_param_value(f.name, value)

    def with_overrides(self, overrides: dict[str, Any] | None) -> Params:
        """A copy with the named fields replaced; unknown names and bad values raise ``InvalidInput``."""
        if not overrides:
            return self
        coerced: dict[str, Any] = {name: coerce_param(name, value) for name, value in overrides.items()}
        return dataclasses.replace(self, **coerced)

    @property
    def error_budget(self) -> float:
        return 1.0 - self.slo


@dataclass(frozen=True)
class ParamInfo:
    name: str
    default: float
    unit: str
    source: str
    doc: str
    min: float
    max: float
    integer: bool


def param_info() -> list[ParamInfo]:
    """The documented table of parameters, in declaration order."""
    return [
        ParamInfo(f.name, f.default, **f.metadata)  # type: ignore[arg-type]
        for f in dataclasses.fields(Params)
    ]


_FIELDS = {f.name: f for f in dataclasses.fields(Params)}


def check_param_value(name: str, value: Any) -> None:
    meta = _FIELDS[name].metadata
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _refused(name, f"must be a number, got {quote(value)}", value)
    if meta["integer"] and not isinstance(value, int):
        raise _refused(name, f"must be a whole number in {_range(meta)}, got {quote(value)}", value)
    # an integer is compared as it is: 10**400 is out of range, never an OverflowError on the way to a float
    if not (meta["min"] <= value <= meta["max"]) or value != value:
        raise _refused(name, f"{quote(value)} is out of range; allowed {_range(meta)} {meta['unit']}", value)


def coerce_param(name: str, value: Any) -> float | int:
    """Turn a value (possibly a string from the command line) into the field's type, or raise."""
    if name not in _FIELDS:
        raise InvalidInput(name, "unknown parameter; known: " + ", ".join(_FIELDS))
    meta = _FIELDS[name].metadata
    if isinstance(value, str):
        try:
            value = number_text(value)
        except ValueError:
            raise _refused(name, f"must be a number in {_range(meta)}, got {quote(value)}", value) from None
    if meta["integer"] and isinstance(value, float) and value.is_integer():
        value = int(value)
    check_param_value(name, value)
    if not meta["integer"]:
        value = float(value) + 0.0  # in range, so a float; + 0.0: -0.0 is 0
    return value  # type: ignore[no-any-return]


def _refused(name: str, reason: str, value: Any) -> InvalidInput:
    """A parameter's refusal: the English ``reason``, and its meaning (kind "range") for the new-run form."""
    meta = _FIELDS[name].metadata
    return InvalidInput(
        name, reason, "range", lo=meta["min"], hi=meta["max"], unit=meta["unit"], whole=bool(meta["integer"]), got=value
    )


def _range(meta: Any) -> str:
    return f"{meta['min']:g}–{meta['max']:g}"


DEFAULT_PARAMS = Params()

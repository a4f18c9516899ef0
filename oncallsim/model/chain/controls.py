"""What an operator may change in a chain of services during a run: a service's policy on the calls into it and
out of it, and its fleet, by the control ``<service>.<setting>`` ("recs.timeout_ms", "api.retries").

A service's name has no dot (``scenarios/graph.py``), the one service's controls have none either
(``controls.CONTROL_SPECS``), so the two never meet. The value is checked here, on every surface that takes an
action (``controls.coerce_control_value`` sends a dotted name here); whether the service exists is the run's to
say (``check_service_action``: the engine, with the run's graph). Each setting means what the same key means in
the file (docs/graphs.md), with one addition: ``timeout_ms`` 0, ``hedge_after_quantile`` 0, ``breaker_k`` 0 and
``max_queue`` 0 take the setting away (no timeout, no hedging, no breaker, no bound on the queue; ``breaker_k`` is
the K of ``breaker``, its window as declared or the default). Two are switches, 0 or 1: ``limiter`` (1: Kratos's BBR
limiter, the file's ``limiter = "bbr"``) and ``lifo`` (1: the newest waiting first, the file's ``discipline =
"lifo"``). The entry's timeout is its clients' patience, set in the file only.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from oncallsim.model.chain.layout import BALANCERS
from oncallsim.model.errors import InvalidInput, number_text, quote

if TYPE_CHECKING:
    from oncallsim.model.chain.layout import ChainLayout

__all__ = [
    "SERVICE_SETTINGS",
    "ServiceSetting",
    "check_service_action",
    "coerce_service_control",
    "graph_view",
    "service_settings",
    "split_control",
    "with_service_settings",
]


@dataclass(frozen=True)
class ServiceSetting:
    whole: bool  # a whole number
    low: float
    high: float
    off: bool  # 0 takes the setting away
    meaning: str
    switch: str = ""  # a switch (0 or 1): what 1 turns on

    def describe(self) -> str:
        if self.switch:
            return f"0 ({self.meaning}) or 1 ({self.switch})"
        kind = "a whole number" if self.whole else "a number"
        span = f"{kind} from {_plain(self.low)} to {_plain(self.high)}"
        return f"0 ({self.meaning}) or {span}" if self.off else span


def _plain(value: float) -> str:
    """A bound as written, never in exponent form (1000000, not 1e+06)."""
    return f"{value:.0f}" if value.is_integer() else f"{value:g}"


SERVICE_SETTINGS: dict[str, ServiceSetting] = {
    "timeout_ms": ServiceSetting(False, 1.0, 600_000.0, True, "no timeout"),
    "retries": ServiceSetting(True, 0.0, 5.0, False, ""),
    "retry_budget": ServiceSetting(False, 0.0, 1.0, False, ""),
    "hedge_after_quantile": ServiceSetting(False, 0.5, 0.999, True, "no hedging"),
    "instances": ServiceSetting(True, 1.0, 1000.0, False, ""),
    "breaker_k": ServiceSetting(False, 1.0, 10.0, True, "no breaker"),
    "max_queue": ServiceSetting(True, 1.0, 1_000_000.0, True, "no bound"),
    "limiter": ServiceSetting(True, 1.0, 1.0, True, "no limiter", switch="Kratos's BBR limiter"),
    "lifo": ServiceSetting(True, 1.0, 1.0, True, "the oldest waiting first", switch="the newest waiting first"),
}


def split_control(name: str) -> tuple[str, str]:
    """("recs", "timeout_ms") from "recs.timeout_ms"; refused when the setting is not one a service has."""
    service, _, setting = name.partition(".")
    if not service or setting not in SERVICE_SETTINGS:
        raise InvalidInput(
            "control",
            f"unknown control {name!r}: a chain's service takes <service>.<setting>, the settings "
            + ", ".join(SERVICE_SETTINGS),
        )
    return service, setting


def coerce_service_control(name: str, value: Any) -> float | int:
    """The value of ``<service>.<setting>``, checked (text from a command line is parsed); never clamped."""
    _, setting = split_control(name)
    spec = SERVICE_SETTINGS[setting]
    parsed: Any = value
    if isinstance(value, str):
        try:
            parsed = number_text(value)
        except ValueError:
            raise InvalidInput(name, f"must be {spec.describe()}, got {quote(value)}") from None
    # an integer is compared as it is (10**400 is out of range, never an OverflowError on the way to a float)
    finite = isinstance(parsed, int) or (isinstance(parsed, float) and math.isfinite(parsed))
    if isinstance(parsed, bool) or not finite:
        raise InvalidInput(name, f"must be {spec.describe()}, got {quote(value)}")
    if spec.off and parsed == 0:
        return 0 if spec.whole else 0.0
    whole = isinstance(parsed, int) or parsed.is_integer()
    if not spec.low <= parsed <= spec.high or (spec.whole and not whole):
        raise InvalidInput(name, f"must be {spec.describe()}, got {quote(value)}")
    return int(parsed) if spec.whole else float(parsed) + 0.0


def check_service_action(name: str, services: tuple[str, ...], entry: str | None) -> None:
    """A dotted control on a run: its service must be one of the run's graph (``services``; none: the run is not
    a chain), and the entry's instances are the fleet's (the minute model's floor and autoscaler)."""
    service, setting = split_control(name)
    if not services:
        raise InvalidInput(name, "acts on a chain's service; this run has no [graph]")
    if service not in services:
        raise InvalidInput(name, f"unknown service {service!r}; this run's services: {', '.join(services)}")
    if setting == "instances" and service == entry:
        raise InvalidInput(
            name, f"{service} is the entry: its instances are the fleet's (set floor, or let the autoscaler act)"
        )
    if setting == "timeout_ms" and service == entry:
        raise InvalidInput(name, f"{service} is the entry: its timeout is its clients' patience, set in the file")


def service_settings(layout: ChainLayout, actions: Iterable[tuple[str, Any]] = ()) -> dict[str, dict[str, float]]:
    """Each service's settings as declared, then as ``actions`` (in order, checked already) changed them: what a
    surface shows as "in force" (read from the run's log, never from the engine's world, which a worker process
    may hold)."""
    settings = {
        service.name: {
            "timeout_ms": 0.0 if service.timeout_s is None else service.timeout_s * 1000.0,
            "retries": float(service.retries),
            "retry_budget": service.retry_budget,
            "hedge_after_quantile": service.hedge_quantile or 0.0,
            "instances": float(service.instances),
            "breaker_k": service.breaker_k or 0.0,
            "max_queue": float(service.max_queue or 0),
            "limiter": 1.0 if service.bbr else 0.0,
            "lifo": 1.0 if service.lifo else 0.0,
        }
        for service in layout.services
    }
    for name, value in actions:
        if "." in name:
            service, setting = split_control(name)
            if service in settings:
                settings[service][setting] = float(value)
    return settings


def graph_view(layout: ChainLayout) -> dict[str, Any]:
    """The graph as a page draws it: its services in declaration order with their calls (callee, copies, the
    probability of a call made on some requests, parallel or not) and their balancer (as the file names it), the
    entry, the clients' deadline, and each setting's range (``SERVICE_SETTINGS``) for the console's inputs."""
    balancers = {code: name for name, code in BALANCERS.items()}
    return {
        "entry": layout.services[layout.entry].name,
        "deadline_ms": layout.deadline_s * 1000.0,
        "services": [
            {
                "name": service.name,
                "workers_per_instance": service.workers_per_instance,
                "balancer": balancers[service.balancer],
                "calls": [
                    {
                        "to": layout.services[call.to].name,
                        "copies": call.copies,
                        "probability": call.probability,
                        "parallel": call.parallel,
                    }
                    for call in service.calls
                ],
            }
            for service in layout.services
        ],
        "settings": {
            name: {"whole": spec.whole, "min": spec.low, "max": spec.high, "off": spec.off, "switch": bool(spec.switch)}
            for name, spec in SERVICE_SETTINGS.items()
        },
    }


def with_service_settings(layout: ChainLayout | None, settings: dict[str, float | int]) -> ChainLayout:
    """``layout`` with its services set as ``settings`` says (``<service>.<setting>``: values checked already),
    as if its file declared them: a run's opening overrides. Refused on a run without a graph, for a service it
    does not have, and for the entry's own instances and timeout, as during a run."""
    from dataclasses import replace

    from oncallsim.model.chain.layout import ChainLayout

    names = () if layout is None else layout.names
    entry = None if layout is None else layout.services[layout.entry].name
    for name in settings:
        check_service_action(name, names, entry)
    assert layout is not None
    services = list(layout.services)
    for name, value in settings.items():
        service, setting = split_control(name)
        s = layout.names.index(service)
        if setting == "timeout_ms":
            services[s] = replace(services[s], timeout_s=value / 1000.0 if value else None)
        elif setting == "retries":
            services[s] = replace(services[s], retries=int(value))
        elif setting == "retry_budget":
            services[s] = replace(services[s], retry_budget=float(value))
        elif setting == "hedge_after_quantile":
            services[s] = replace(services[s], hedge_quantile=float(value) if value else None)
        elif setting == "breaker_k":
            services[s] = replace(services[s], breaker_k=float(value) if value else None)
        elif setting == "max_queue":
            services[s] = replace(services[s], max_queue=int(value) if value else None)
        elif setting == "limiter":
            services[s] = replace(services[s], bbr=bool(value))
        elif setting == "lifo":
            services[s] = replace(services[s], lifo=bool(value))
        else:
            services[s] = replace(services[s], instances=int(value))
    return ChainLayout(tuple(services), layout.entry, layout.deadline_s, layout.propagation)

"""Service discovery, as Eureka and Bilibili's discovery do it (reference §7), at each minute's start.

Instances register when they are ready and renew every ``renew_interval_s`` from then; a crashed instance, or
one whose zone is off the network, stops renewing (a hung process still renews: its heartbeat runs). Every
``evict_check_s`` (checks at whole multiples of it) the registry evicts the instances last renewed more than
``evict_after_s`` before, so an eviction comes 90–150 s after the last renewal with the defaults — unless
**self-protection** is on and the renewals of the last minute fell below ``self_protection_threshold`` of those
expected: then it evicts nobody (a network split looks like mass death; the registry keeps its list). Scale-in
deregisters an instance cleanly (every balancer stops at once).

Instance health only changes at a minute's start (scenario events, the operator's actions), so every check of
the minute is computed here in advance; an eviction later in the minute is applied by the compiled loop at its
time (``instances.refresh_views``), and each balancer learns of a change after its long-poll delay.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import numpy.typing as npt

from oncallsim.model.control_spec import REQUEST_ONLY, ControlSpec
from oncallsim.model.events import Event
from oncallsim.model.jit import by_reference
from oncallsim.model.params import Params
from oncallsim.model.request.balancers import I_CLIENTS
from oncallsim.model.request.instances import HANG, UP

if TYPE_CHECKING:
    from oncallsim.model.request.world import World

__all__ = ["register_initial", "registry_minute"]

# ints[...]: 1 while self-protection holds the registry; 1 when self-protection is on (the operator's setting)
I_PROTECTING, I_SELF_PROTECTION = range(2)

CONTROLS = (
    ControlSpec(
        "self_protection",
        "bool",
        "Registry self-protection",
        "While fewer than ⟪self_protection_threshold%⟫ of the expected renewals arrive, the registry evicts "
        "nobody: it guards against a network split, and so keeps dead instances in rotation.",
        True,
        engines=REQUEST_ONLY,
        section="discovery",
        piece="registry",
        slot=I_SELF_PROTECTION,
        moves={"on": "switched registry self-protection on", "off": "switched registry self-protection off"},
        in_force={"on": "", "off": "registry self-protection off"},
    ),
)


@by_reference
class Registry(NamedTuple):
    """The registry's listing of each instance slot, its renewals and evictions."""

    ints: npt.NDArray[np.int64]
    reg: npt.NDArray[np.int64]  # per instance: 1 while the registry lists it
    reg_prev: npt.NDArray[np.int64]  # the listing before its last change
    reg_at: npt.NDArray[np.float64]  # when the listing last changed (s); balancers learn of it later
    evict_at: npt.NDArray[np.float64]  # a coming eviction within the minute (s), ∞ none
    renew_stop: npt.NDArray[np.float64]  # since when the instance no longer renews (s), ∞ while it does
    reg_since: npt.NDArray[np.float64]  # when its listing began: it renews every interval from then (s)


def new_registry(instances: int) -> Registry:
    """Every slot listed since ever (``register_initial`` sets the first minute's), self-protection on."""
    ints = np.zeros(2, dtype=np.int64)
    ints[I_SELF_PROTECTION] = 1
    return Registry(
        ints=ints,
        reg=np.ones(instances, dtype=np.int64),
        reg_prev=np.ones(instances, dtype=np.int64),
        reg_at=np.full(instances, -np.inf),
        evict_at=np.full(instances, np.inf),
        renew_stop=np.full(instances, np.inf),
        reg_since=np.zeros(instances),
    )


_GOLDEN = 0.6180339887498949


def register_initial(w: World, serving: int, params: Params) -> None:
    """The opening fleet, registered long ago, its renewals spread over the interval (no draw); each client's
    long-poll delay. (A new world lists every slot, so that a minute played on its own balances over all.)"""
    for i in range(len(w.registry.reg)):
        listed = 1 if i < serving else 0
        w.registry.reg[i] = listed
        w.registry.reg_prev[i] = listed
        w.registry.reg_at[i] = -math.inf
        w.registry.reg_since[i] = -params.renew_interval_s * ((i * _GOLDEN) % 1.0)
    clients = int(w.views.ints[I_CLIENTS])
    for c in range(clients):
        w.views.view_lag[c] = params.registry_poll_s * (c + 0.5) / clients


def _renewals(since: float, stop: float, a: float, b: float, every: float) -> int:
    """Renewals at since + j·every (j ≥ 0, the registration itself first) in (a, min(b, stop)]."""
    hi = min(b, stop)
    if hi < since or hi <= a:
        return 0
    last = math.floor((hi - since) / every)
    if a < since:
        return last + 1
    return last - math.floor((a - since) / every)


def _last_renewal(since: float, stop: float, at: float, every: float) -> float:
    hi = min(at, stop)
    return since + math.floor((hi - since) / every) * every


def registry_minute(w: World, t: int, serving: int, params: Params, self_protection: bool) -> list[Event]:
    """The registry from minute ``t``'s start to its end: who registers, deregisters, stops renewing and is
    evicted (now or later in the minute). Returns the events the operator sees."""
    t0 = 60.0 * t
    events: list[Event] = []
    every = params.renew_interval_s
    for i in range(len(w.registry.reg)):
        if i >= serving:
            if (
                w.registry.reg[i] or w.registry.reg_prev[i]
            ):  # scale-in (or a slot never used): deregistered, seen at once
                w.registry.reg[i] = w.registry.reg_prev[i] = 0
                w.registry.reg_at[i] = t0
            w.registry.evict_at[i] = math.inf
            w.registry.renew_stop[i] = math.inf
            continue
        renewing = int(w.fleet.health[i]) in (UP, HANG)
        if renewing:
            w.registry.renew_stop[i] = math.inf
            if not w.registry.reg[i] and math.isinf(
                w.registry.evict_at[i]
            ):  # ready, recovered, or back online: it registers
                w.registry.reg_prev[i] = 0
                w.registry.reg[i] = 1
                w.registry.reg_at[i] = t0
                w.registry.reg_since[i] = t0
        elif math.isinf(w.registry.renew_stop[i]):
            w.registry.renew_stop[i] = t0
    check = params.evict_check_s
    c = math.ceil(t0 / check) * check
    while c < t0 + 60.0:
        listed = [i for i in range(serving) if w.registry.reg[i] and math.isinf(w.registry.evict_at[i])]
        expected = sum(_renewals(w.registry.reg_since[i], math.inf, c - 60.0, c, every) for i in listed)
        actual = sum(_renewals(w.registry.reg_since[i], w.registry.renew_stop[i], c - 60.0, c, every) for i in listed)
        below = expected > 0 and actual < params.self_protection_threshold * expected
        protecting = below and self_protection
        if protecting != bool(w.registry.ints[I_PROTECTING]):
            w.registry.ints[I_PROTECTING] = 1 if protecting else 0
            events.append(Event("self_protection_engaged" if protecting else "self_protection_cleared"))
        if not protecting:
            for i in listed:
                last = _last_renewal(w.registry.reg_since[i], w.registry.renew_stop[i], c, every)
                if c - last > params.evict_after_s:
                    w.registry.evict_at[i] = c
                    events.append(Event("instance_evicted", instance=i))
        c += check
    return events

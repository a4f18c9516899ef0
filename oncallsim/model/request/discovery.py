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

That was revision 1 (run files of model version 1). Since revision 2 the registry is bilibili/discovery's
(``registry/registry.go``, ``registry/guard.go``, ``naming/client.go``, read at 1e12d5c):

- **Long polls hear of a change at once**: the registry answers every hanging poll when it registers, cancels or
  evicts (``broadcast``), so ``registry_poll_s`` no longer delays anything.
- **The guard** (``Guard``): the renewals expected a minute are 2 per instance, counted up by 2 at each new
  registration and down by 2 at each cancellation (a scale-in), not at an eviction, and recounted from the
  registry every 15 minutes; every minute the registry compares the renewals of the last minute with
  ``int(expected × 0.85)`` and protects itself below it.
- **Eviction** (``evict``): an instance last renewed more than 90 s ago is evicted unless the registry protects
  itself, one silent more than 3,600 s is evicted even then; at most ``size − int(size × 0.85)`` a round (15 %
  of the registry), chosen in random order (a partial Fisher–Yates shuffle, seeded from the run's generator).
- **A renewal answered 404** (the instance was evicted while its process kept running: its zone was cut off)
  re-registers at once: the instance is listed again at its first renewal after it is reachable, on its own
  30 s ticker. A process that starts (a new instance, a revived one, a replacement) registers when it starts.
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
from oncallsim.model.request.instances import HANG, REFUSE, UP

if TYPE_CHECKING:
    from oncallsim.model.request.world import World

__all__ = ["register_initial", "registry_minute"]

# ints[...]: 1 while self-protection holds the registry; 1 when self-protection is on (the operator's setting); the
# model revision's rules (world.set_revision); the guard's expected renewals a minute (revision 2)
I_PROTECTING, I_SELF_PROTECTION, I_REVISION, I_EXPECTED = range(4)
EVICT_CEILING_S = 3600.0  # registry.go ``_evictCeiling``: silent this long, evicted even under self-protection
RECOUNT_S = 900.0  # registry.go ``proc``: the expected renewals recounted from the registry every 15 minutes
RENEWALS_A_MINUTE = 2  # guard.go: each instance is expected to renew twice a minute (its 30 s ticker)
# stopped[...]: why an instance no longer renews — it renews; its process is gone (it will start afresh); its
# process runs but the registry cannot hear it (its renewals resume on their own ticker)
RENEWING, GONE, CUT_OFF = range(3)

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
    stopped: npt.NDArray[np.int64]  # per instance: RENEWING, GONE, CUT_OFF (revision 2)


def new_registry(instances: int) -> Registry:
    """Every slot listed since ever (``register_initial`` sets the first minute's), self-protection on."""
    ints = np.zeros(4, dtype=np.int64)
    ints[I_SELF_PROTECTION] = 1
    ints[I_EXPECTED] = RENEWALS_A_MINUTE * instances
    return Registry(
        ints=ints,
        reg=np.ones(instances, dtype=np.int64),
        reg_prev=np.ones(instances, dtype=np.int64),
        reg_at=np.full(instances, -np.inf),
        evict_at=np.full(instances, np.inf),
        renew_stop=np.full(instances, np.inf),
        reg_since=np.zeros(instances),
        stopped=np.zeros(instances, dtype=np.int64),
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
    if w.registry.ints[I_REVISION] >= 2:  # a long poll hears of a change at once
        w.views.view_lag[:clients] = 0.0
        w.registry.ints[I_EXPECTED] = RENEWALS_A_MINUTE * serving
        return
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
    if w.registry.ints[I_REVISION] >= 2:
        return _bilibili_minute(w, t, serving, params, self_protection)
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


# --- revision 2: bilibili/discovery ---------------------------------------------------------------------------


def _listed_at(reg: Registry, i: int, at: float) -> bool:
    """Whether the registry lists instance ``i`` at ``at`` (a registration may be due later in the minute)."""
    return bool(reg.reg[i] if reg.reg_at[i] <= at else reg.reg_prev[i])


def _renewals_heard(reg: Registry, i: int, a: float, b: float, every: float) -> int:
    """Renewals the registry counts in (a, b]: on the instance's ticker, after its registration (which is not a
    renewal), while it renews."""
    since = float(reg.reg_since[i])
    first = max(a, float(reg.reg_at[i]))
    hi = min(b, float(reg.renew_stop[i]))
    if hi <= first:
        return 0
    return math.floor((hi - since) / every) - math.floor((first - since) / every)


class _Shuffle:
    """splitmix64 from a seed: Go's ``rand.Intn`` in the eviction's shuffle, deterministic for a run."""

    def __init__(self, seed: int) -> None:
        self.state = seed & 0xFFFFFFFFFFFFFFFF

    def below(self, n: int) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
        z ^= z >> 31
        return (z * n) >> 64


def eviction_order(candidates: list[int], limit: int, seed: int) -> list[int]:
    """The first ``limit`` of ``candidates`` in random order: registry.go's partial Knuth shuffle."""
    order = list(candidates)
    draw = _Shuffle(seed)
    count = min(len(order), limit)
    for j in range(count):
        k = j + draw.below(len(order) - j)
        order[j], order[k] = order[k], order[j]
    return order[:count]


def _bilibili_minute(w: World, t: int, serving: int, params: Params, self_protection: bool) -> list[Event]:
    """Revision 2's minute: who stops renewing, the check at the minute's start (the registry's minute tick, which
    heard the minute before), who registers (a process that starts; a renewal answered 404), the checks after."""
    t0 = 60.0 * t
    reg = w.registry
    events: list[Event] = []
    every = params.renew_interval_s
    for i in range(len(reg.reg)):
        if i >= serving:
            if reg.reg[i] or reg.reg_prev[i]:  # scale-in: the instance cancels its registration, seen at once
                if reg.reg[i] and reg.ints[I_EXPECTED] > 0:
                    reg.ints[I_EXPECTED] -= RENEWALS_A_MINUTE
                reg.reg[i] = reg.reg_prev[i] = 0
                reg.reg_at[i] = t0
            reg.evict_at[i] = math.inf
            reg.renew_stop[i] = math.inf
            reg.stopped[i] = RENEWING
            continue
        health = int(w.fleet.health[i])
        if health not in (UP, HANG) and math.isinf(reg.renew_stop[i]):
            reg.renew_stop[i] = t0
            reg.stopped[i] = GONE if health == REFUSE else CUT_OFF
    c = math.ceil(t0 / params.evict_check_s) * params.evict_check_s
    if c == t0:
        events.extend(_check(w, c, serving, params, self_protection))
        c += params.evict_check_s
    for i in range(serving):
        if int(w.fleet.health[i]) not in (UP, HANG):
            continue
        cut_off = False
        if not math.isinf(reg.renew_stop[i]):  # renewing again
            cut_off = reg.stopped[i] == CUT_OFF
            reg.renew_stop[i] = math.inf
            reg.stopped[i] = RENEWING
            if not cut_off:  # a process that starts registers first; its ticker starts then
                reg.reg_since[i] = t0
        if reg.evict_at[i] <= t0:  # evicted at this very tick: out of the registry before it is heard again
            reg.reg_prev[i] = reg.reg[i]
            reg.reg[i] = 0
            reg.reg_at[i] = reg.evict_at[i]
            reg.evict_at[i] = math.inf
        if reg.reg[i] or not math.isinf(reg.evict_at[i]):
            continue
        at = t0
        if cut_off:  # evicted while cut off: its next renewal is answered 404 and it registers at once
            since = float(reg.reg_since[i])
            at = since + math.ceil((t0 - since) / every) * every
        else:
            reg.reg_since[i] = t0
        reg.reg_prev[i] = 0
        reg.reg[i] = 1
        reg.reg_at[i] = at
        reg.ints[I_EXPECTED] += RENEWALS_A_MINUTE
    while c < t0 + 60.0:
        events.extend(_check(w, c, serving, params, self_protection))
        c += params.evict_check_s
    return events


def _check(w: World, c: float, serving: int, params: Params, self_protection: bool) -> list[Event]:
    """The registry's tick at ``c``: the 15-minute recount when due, the guard, and the evictions."""
    reg = w.registry
    events: list[Event] = []
    every = params.renew_interval_s
    listed = [i for i in range(serving) if _listed_at(reg, i, c) and math.isinf(reg.evict_at[i])]
    if c > 0 and c % RECOUNT_S == 0:  # the 15-minute recount (taken before the minute's check)
        reg.ints[I_EXPECTED] = RENEWALS_A_MINUTE * len(listed)
    heard = sum(_renewals_heard(reg, i, c - 60.0, c, every) for i in listed)
    protecting = self_protection and heard < int(reg.ints[I_EXPECTED] * params.self_protection_threshold)
    if protecting != bool(reg.ints[I_PROTECTING]):
        reg.ints[I_PROTECTING] = 1 if protecting else 0
        events.append(Event("self_protection_engaged" if protecting else "self_protection_cleared"))
    silent = []
    for i in listed:
        last = max(float(reg.reg_at[i]), _last_renewal(reg.reg_since[i], reg.renew_stop[i], c, every))
        if (not protecting and c - last > params.evict_after_s) or c - last > EVICT_CEILING_S:
            silent.append(i)
    size = len(listed)
    limit = size - int(size * params.self_protection_threshold)
    seed = int(w.gen[0]) ^ ((int(c) * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF)
    for i in eviction_order(silent, limit, seed):
        reg.evict_at[i] = c
        events.append(Event("instance_evicted", instance=i))
    return events

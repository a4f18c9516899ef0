"""The fleet as instances: which ones each balancer sends to (its rotation), and what a dead one does.

An instance is in a balancer's rotation while that balancer's view of the registry lists it and the operator
has not ejected it. The pooled balancer sees the registry as it is; each client-side balancer learns of a
change ``registry_poll_s`` × (client + ½) / clients after it (a long-poll; discovery.py keeps the registry).
Health (``world.fleet.health``): a refused connection fails in ``REFUSED_S``; a hung instance, or one whose zone is
off the network, holds the request until its client gives up. A slow one takes 1/speed times the CPU time.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from oncallsim.model.control_spec import REQUEST_ONLY, ControlSpec
from oncallsim.model.jit import by_reference
from oncallsim.model.kernel import step
from oncallsim.model.request.balancers import I_CLIENTS, MAX_CLIENTS, R_NEXT_VIEW
from oncallsim.model.request.connections import I_REVISION as C_REVISION
from oncallsim.model.request.connections import loss_time
from oncallsim.model.request.workers import I_ENABLED, free_add, free_remove

__all__ = ["POOL", "in_pool", "refresh_views", "sync_free"]

# an instance's health: serving; connection refused (crashed); accepts and never answers (hung, still renewing
# its registration); off the network (its zone is out: no answers, no renewals)
UP, REFUSE, HANG, OFFLINE = range(4)
HEALTH = ("up", "refuse", "hang", "offline")
REFUSED_S = 0.001  # a refused connection fails this fast
I_ZONE_END = 0  # ints[...]: the minute the zone outage ends (0: none)
R_ZONE_SHARE = 0  # reals[...]: the share of the instance slots in the zone that is off the network (0: none)

CONTROLS = (
    ControlSpec(
        "eject",
        "instance",
        "Eject",
        "Take one instance out of rotation at every balancer (it finishes what it holds). Readmit puts it back.",
        engines=REQUEST_ONLY,
        section="fleet",
        moves={"": "ejected instance %(value)s"},
    ),
    ControlSpec(
        "readmit",
        "instance",
        "Readmit",
        "Put an ejected instance back into rotation.",
        engines=REQUEST_ONLY,
        section="fleet",
        moves={"": "put instance %(value)s back in rotation"},
    ),
    ControlSpec(
        "replace",
        "instance",
        "Replace",
        "Boot a fresh instance (⟪boot_delay_min⟫ min, billed); when it is ready it takes this one's place and "
        "the old one leaves.",
        engines=REQUEST_ONLY,
        section="fleet",
        danger=True,
        moves={"": "replaced instance %(value)s"},
    ),
)


@by_reference
class Fleet(NamedTuple):
    """Each instance slot's health and speed, the operator's ejections and replacements, the zone outage."""

    ints: npt.NDArray[np.int64]
    reals: npt.NDArray[np.float64]
    speed: npt.NDArray[np.float64]  # per instance: 1 healthy; a slow one takes 1/speed times the CPU time
    base_speed: npt.NDArray[np.float64]  # per instance slot: its machine's speed (1; a scenario's fleet.speeds)
    health: npt.NDArray[np.int64]  # per instance: UP, REFUSE, HANG, OFFLINE
    ejected: npt.NDArray[np.int64]  # per instance: 1 when the operator took it out of rotation
    replacing: npt.NDArray[np.int64]  # per instance: the minute a fresh one is ready, + 1, while it boots (0: none)


def new_fleet(instances: int) -> Fleet:
    """Every slot up, at full speed, in rotation."""
    return Fleet(
        ints=np.zeros(1, dtype=np.int64),
        reals=np.zeros(1),
        speed=np.ones(instances),
        base_speed=np.ones(instances),
        health=np.zeros(instances, dtype=np.int64),
        ejected=np.zeros(instances, dtype=np.int64),
        replacing=np.zeros(instances, dtype=np.int64),
    )


POOL = MAX_CLIENTS  # the pooled balancer's row of ``world.views.rot``
_INF = math.inf


@step
def in_pool(registry: Any, fleet: Any, i: int, serving: int) -> bool:
    """Whether the pooled balancer sends to instance ``i`` now."""
    return i < serving and registry.reg[i] != 0 and fleet.ejected[i] == 0


@step
def refresh_views(views: Any, registry: Any, fleet: Any, conns: Any, x: float, serving: int) -> None:
    """Apply the registry's evictions due by ``x``, rebuild every balancer's rotation as it sees things at
    ``x``, and note when the next view changes (``reals[R_NEXT_VIEW]``)."""
    nxt = _INF
    for i in range(len(registry.reg)):
        if registry.evict_at[i] <= x:
            registry.reg_prev[i] = registry.reg[i]
            registry.reg[i] = 0
            registry.reg_at[i] = registry.evict_at[i]
            registry.evict_at[i] = _INF
        elif registry.evict_at[i] < nxt:
            nxt = registry.evict_at[i]
    if conns.ints[C_REVISION] >= 2:
        nxt = _client_views(views, registry, fleet, conns, x, serving, nxt)
    else:
        nxt = _long_polled_views(views, registry, fleet, x, serving, nxt)
    m = 0
    for i in range(serving):
        if in_pool(registry, fleet, i, serving):
            views.rot[POOL, m] = i
            m += 1
    views.nrot[POOL] = m
    views.reals[R_NEXT_VIEW] = nxt


@step
def _long_polled_views(views: Any, registry: Any, fleet: Any, x: float, serving: int, nxt: float) -> float:
    """Revision 1: each client's rotation is the registry as its long poll saw it, ``view_lag`` late, less
    the ejected. Returns the next time a view changes (``nxt`` if none sooner)."""
    for c in range(views.ints[I_CLIENTS]):
        lag = views.view_lag[c]
        m = 0
        for i in range(serving):
            seen = registry.reg[i]
            at = registry.reg_at[i] + lag
            if x < at:
                seen = registry.reg_prev[i]
                if at < nxt:
                    nxt = at
            if seen != 0 and fleet.ejected[i] == 0:
                views.rot[c, m] = i
                m += 1
        views.nrot[c] = m
    return nxt


@step
def _client_views(views: Any, registry: Any, fleet: Any, conns: Any, x: float, serving: int, nxt: float) -> float:
    """Since revision 2 (connections.py): each client's SDK lists what the registry lists — a long poll hears of
    a change at once — unless that would be nothing (it keeps its list); its picker holds those it is connected
    to, less the ejected. Returns the next time a view changes (``nxt`` if none sooner)."""
    for c in range(views.ints[I_CLIENTS]):
        listed = 0
        for i in range(serving):
            if registry.reg_at[i] > x:  # a registration due later in the minute (a renewal's 404)
                if registry.reg_at[i] < nxt:
                    nxt = registry.reg_at[i]
                listed += registry.reg_prev[i] != 0
            else:
                listed += registry.reg[i] != 0
        if listed > 0:  # an update that empties the list is ignored: the SDK keeps its cache
            for i in range(serving):
                conns.addr[c, i] = registry.reg_prev[i] if registry.reg_at[i] > x else registry.reg[i]
        m = 0
        for i in range(serving):
            if conns.addr[c, i] == 0 or fleet.ejected[i] != 0:
                continue
            lost = loss_time(conns, c, i)
            if x < lost:
                if lost < nxt:
                    nxt = lost
            elif x < conns.back_at[i]:
                if conns.back_at[i] < nxt:
                    nxt = conns.back_at[i]
                continue
            views.rot[c, m] = i
            m += 1
        views.nrot[c] = m
    return nxt


@step
def sync_free(workers: Any, registry: Any, fleet: Any, wpi: int) -> None:
    """The pooled balancer hands requests to free workers of instances in its rotation only: the free set
    follows the rotation (the other balancers pick an instance first and need all of them)."""
    enabled = workers.ints[I_ENABLED]
    serving = enabled // wpi
    for k in range(enabled):
        want = (not workers.w_busy[k]) and in_pool(registry, fleet, k // wpi, serving)
        if want and workers.free_pos[k] < 0:
            free_add(workers, k)
        elif not want and workers.free_pos[k] >= 0:
            free_remove(workers, k)

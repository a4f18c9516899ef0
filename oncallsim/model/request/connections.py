"""What each client holds between discovery and its balancer (model version 2): the addresses its discovery SDK
last gave it, and gRPC's connection to each (warden on grpc-go: bilibili/kratos v1.0.1, grpc-go v1.39).

- **The SDK's list.** A client's resolver holds the instances its discovery SDK last delivered. An update that
  would leave it none is ignored and the cached list kept (bilibili/discovery ``naming/client.go``, ``broadcast``:
  an app whose update counts 0 instances is skipped; warden's resolver ``newAddress`` returns on an empty list).
  That is the SDK's only threshold: an update that drops any share short of all is taken as it comes.
- **The picker holds only ready connections** (grpc-go's base balancer builds its picker from the ready
  sub-connections), so an instance leaves a client's rotation when its connection is lost, whatever the registry
  says, and comes back when a reconnection succeeds.
- **A crashed instance** resets its connections: every client's connection fails at once and its reconnections
  are refused — it leaves every picker at once.
- **An unreachable instance** (its zone off the network) answers nothing and resets nothing: the connection
  stays ready until grpc-go notices. Keepalive (warden's ``KeepAliveInterval`` 60 s, ``KeepAliveTimeout`` 20 s)
  pings after 60 s without a byte read and closes the connection 20 s later: 80 s after the last answer. grpc-go
  also sets the socket's ``TCP_USER_TIMEOUT`` to the keepalive timeout, so the kernel closes a connection whose
  sent data has gone unacknowledged for 20 s: a client that sends the instance a request after it went away
  loses the connection 20 s after that request. Each client's loss is the earlier of the two.
- **Reconnection**: grpc-go's backoff — attempts 1 s × 1.6ⁿ apart, at most 120 s (its ±20 % jitter left out) —
  from the loss; an attempt at an unreachable host lasts the minimum connect timeout (20 s), a refused one ends at
  once. The first attempt after the instance accepts again succeeds. An instance the registry lists anew (after
  an eviction) is a new address: a new sub-connection, which connects at once.

Instance health changes only at a minute's start, so the losses and reconnections are worked out there
(``connections_minute``); the one time only the loop knows is when a client first sends to an unreachable
instance (``unacknowledged``). ``instances.refresh_views`` builds each rotation from these. Under revision 1 (run
files of model version 1) none of this applied: a client's rotation was the registry as its long poll saw it.
The pooled balancer (one proxy's queue) is not gRPC's and keeps revision 1's rule.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import numpy.typing as npt

from oncallsim.model.jit import by_reference
from oncallsim.model.kernel import inline_step, step
from oncallsim.model.request.balancers import MAX_CLIENTS, R_NEXT_VIEW

if TYPE_CHECKING:
    from oncallsim.model.request.world import World

__all__ = [
    "CONNECT_TIMEOUT_S",
    "KEEPALIVE_TIMEOUT_S",
    "KEEPALIVE_TIME_S",
    "Conns",
    "connections_minute",
    "loss_time",
    "new_conns",
    "reconnected",
    "unacknowledged",
]

KEEPALIVE_TIME_S = 60.0  # warden's KeepAliveInterval: a ping after this long without a byte read
KEEPALIVE_TIMEOUT_S = 20.0  # warden's KeepAliveTimeout: the ping's answer awaited; also grpc-go's TCP_USER_TIMEOUT
BACKOFF_BASE_S = 1.0  # grpc-go's default reconnection backoff: base delay, multiplier, ceiling
BACKOFF_MULTIPLIER = 1.6
BACKOFF_MAX_S = 120.0
CONNECT_TIMEOUT_S = 20.0  # grpc-go's minimum connect timeout: how long an attempt at an unreachable host lasts
I_REVISION = 0  # ints[...]: the model revision's rules (world.set_revision)
# what a connection was lost to (``kind``): nothing; a crash (refused); the network (unreachable)
LOST_NONE, LOST_REFUSED, LOST_UNREACHABLE = range(3)
_INF = math.inf


@by_reference
class Conns(NamedTuple):
    """Each client's address list and its connection to each instance."""

    ints: npt.NDArray[np.int64]
    lost_at: npt.NDArray[np.float64]  # per instance: when every client's connection is lost (s), ∞ none
    back_at: npt.NDArray[np.float64]  # per instance: when the clients reconnect (s), ∞ not yet known
    kind: npt.NDArray[np.int64]  # per instance: LOST_…
    unacked: npt.NDArray[np.float64]  # unacked[client, instance]: its first request to the unreachable one, ∞ none
    addr: npt.NDArray[np.int64]  # addr[client, instance]: 1 while the client's SDK lists it


def new_conns(instances: int) -> Conns:
    """Every client lists every slot and is connected to it."""
    return Conns(
        ints=np.zeros(1, dtype=np.int64),
        lost_at=np.full(instances, _INF),
        back_at=np.full(instances, _INF),
        kind=np.zeros(instances, dtype=np.int64),
        unacked=np.full((MAX_CLIENTS, instances), _INF),
        addr=np.ones((MAX_CLIENTS, instances), dtype=np.int64),
    )


@step
def loss_time(conns: Any, c: int, i: int) -> float:
    """When client ``c`` loses its connection to instance ``i`` (∞: it does not): the instance's loss for
    everyone, or 20 s after the client's first unacknowledged request, whichever comes first."""
    lost = conns.lost_at[i]
    unacked = conns.unacked[c, i] + KEEPALIVE_TIMEOUT_S
    return unacked if unacked < lost else lost


@inline_step
def unacknowledged(conns: Any, views: Any, c: int, i: int, x: float) -> None:
    """Client ``c`` sends a request to unreachable instance ``i`` at ``x``: the first such request starts the
    kernel's 20 s ``TCP_USER_TIMEOUT``; its balancer's view changes when it runs out."""
    if conns.unacked[c, i] == _INF:
        conns.unacked[c, i] = x
        if x + KEEPALIVE_TIMEOUT_S < views.reals[R_NEXT_VIEW]:
            views.reals[R_NEXT_VIEW] = x + KEEPALIVE_TIMEOUT_S


def reconnected(lost: float, back: float, unreachable: bool) -> float:
    """The start of grpc-go's first reconnection attempt after a loss at ``lost`` that comes at or after ``back``
    (when the instance accepts connections again): attempts start 1 s × 1.6ⁿ (at most 120 s) after the one
    before, or when it ended if later — an attempt at an unreachable host lasts 20 s, a refused one no time."""
    at = lost
    n = 0
    while at < back:
        delay = min(BACKOFF_BASE_S * BACKOFF_MULTIPLIER**n, BACKOFF_MAX_S)
        at += max(delay, CONNECT_TIMEOUT_S) if unreachable else delay
        n += 1
    return at


def _clear(conns: Conns, i: int) -> None:
    conns.lost_at[i] = _INF
    conns.back_at[i] = _INF
    conns.kind[i] = LOST_NONE
    conns.unacked[:, i] = _INF


def connections_minute(w: World, t: int, serving: int) -> None:
    """The connections at minute ``t``'s start, after the faults and the registry's minute: who is lost (a crash
    at once, an unreachable instance 80 s after its last answer at the latest) and when each lost one that is
    reachable again reconnects."""
    from oncallsim.model.request.instances import OFFLINE, REFUSE  # the fleet's module imports this one

    conns = w.conns
    if conns.ints[I_REVISION] < 2:
        return
    t0 = 60.0 * t
    reg = w.registry
    for i in range(len(conns.lost_at)):
        if i >= serving:  # scaled in: its connections closed; a slot used again starts afresh
            _clear(conns, i)
            continue
        health = int(w.fleet.health[i])
        if health == REFUSE:
            if conns.kind[i] == LOST_NONE:
                conns.lost_at[i] = t0
            conns.kind[i] = LOST_REFUSED
            conns.back_at[i] = _INF
        elif health == OFFLINE:
            if conns.kind[i] == LOST_NONE:
                conns.lost_at[i] = t0 + KEEPALIVE_TIME_S + KEEPALIVE_TIMEOUT_S  # last answer ≈ the outage's start
                conns.unacked[:, i] = _INF
            conns.kind[i] = LOST_UNREACHABLE
            conns.back_at[i] = _INF
        elif conns.kind[i] != LOST_NONE:  # reachable again
            lost = min(float(conns.lost_at[i]), float(conns.unacked[:, i].min()) + KEEPALIVE_TIMEOUT_S)
            if lost >= t0:  # no client had lost it yet
                _clear(conns, i)
                continue
            back = float(conns.back_at[i])
            if back == _INF:  # the first minute it is reachable: the first attempt from now succeeds
                back = reconnected(lost, t0, conns.kind[i] == LOST_UNREACHABLE)
            if reg.reg[i] and not reg.reg_prev[i] and reg.reg_at[i] >= lost:  # listed anew: a new sub-connection
                back = min(back, float(reg.reg_at[i]))
            if back <= t0:
                _clear(conns, i)
            else:
                conns.back_at[i] = back

"""Balancers: how a request's instance is chosen (REQUESTS.md "balancer"; reference §1).

``pooled`` keeps one queue at the balancer and hands each request to a free worker of any instance (the
minute model's M/M/N). The others choose an instance per request, which queues it when its workers are busy:

- ``round-robin``: nginx's smooth weighted round-robin with equal weights, i.e. each client in turn;
- ``random``: uniformly among the serving instances;
- ``least-outstanding``: the instance this client has the fewest requests outstanding on (ties at random);
- ``p2c``: power of two choices with EWMA, as Bilibili's warden balancer (kratos v1.0.1 ``p2c.go``): two
  distinct random instances; the one with the larger success/load wins, load = server CPU ‰ ×
  (√(latency EWMA in ns) + 1) × (outstanding + 1); the loser is picked instead when it has not been picked
  for 3 s; an instance is valid while its success EWMA > 500 ‰ and its CPU < 900 ‰ (a pair is redrawn up
  to 3 times until one is valid). On each response the client updates the instance's latency and success
  EWMAs with the weight e^(−Δt/600 ms), Δt the time since the instance's previous response, and takes the
  CPU the server reports.

Every balancer but ``pooled`` runs in ``clients`` independent copies (client-side balancing): a request comes
from one client, chosen uniformly, and only that client's view and state are used and updated. Each client
chooses among the instances in its rotation: those its view of the registry lists, not ejected
(instances.py); round-robin steps through that list.
"""

from __future__ import annotations

import math
from typing import Any

from oncallsim.model.kernel import inline_step
from oncallsim.model.request.generator import uniform, uniform_int
from oncallsim.model.request.throttle import mark
from oncallsim.model.request.world import (
    B_CPU,
    B_LAG,
    B_OUT,
    B_PICK,
    B_STAMP,
    B_SUCCESS,
    I_BALANCER,
    I_CLIENTS,
    I_THROTTLE,
)

__all__ = [
    "BALANCERS",
    "LEAST_OUTSTANDING",
    "P2C",
    "POOLED",
    "RANDOM",
    "ROUND_ROBIN",
    "answered",
    "choose",
    "client_of",
    "instance_for",
    "picked",
]

BALANCERS = ("pooled", "round-robin", "random", "least-outstanding", "p2c")
POOLED, ROUND_ROBIN, RANDOM, LEAST_OUTSTANDING, P2C = range(len(BALANCERS))

TAU_S = 0.6  # the EWMAs' time constant
PENALTY = 1000.0 * 250e6  # a load of 0 (no sample yet) counts as this
FORCE_GAP_S = 3.0  # a loser not picked for this long is picked instead
SUCCESS_START = 1000.0  # ‰
CPU_START = 500.0  # ‰


@inline_step
def _p2c_load(w: Any, c: int, i: int) -> float:
    b = w.bal
    load = b[B_CPU, c, i] * (math.floor(math.sqrt(b[B_LAG, c, i])) + 1.0) * (b[B_OUT, c, i] + 1.0)
    return PENALTY if load == 0.0 else load


@inline_step
def _p2c_valid(w: Any, c: int, i: int) -> bool:
    return w.bal[B_SUCCESS, c, i] > 500.0 and w.bal[B_CPU, c, i] < 900.0


@inline_step
def _p2c(w: Any, c: int, n: int, x: float) -> int:
    rot = w.rot[c]
    if n == 1:
        return rot[0]
    g = w.gen
    a = 0
    z = 1
    for _ in range(3):
        a = uniform_int(g, n)
        z = uniform_int(g, n - 1)
        if z >= a:
            z += 1
        a = rot[a]
        z = rot[z]
        if _p2c_valid(w, c, a) or _p2c_valid(w, c, z):
            break
    b = w.bal
    # the winner has the larger success/load: compare cross-multiplied, as the original does
    if _p2c_load(w, c, a) * b[B_SUCCESS, c, z] > _p2c_load(w, c, z) * b[B_SUCCESS, c, a]:
        win, lose = z, a
    else:
        win, lose = a, z
    if x - b[B_PICK, c, lose] > FORCE_GAP_S:
        b[B_PICK, c, lose] = x
        return lose
    b[B_PICK, c, win] = x
    return win


@inline_step
def _least(w: Any, c: int, n: int) -> int:
    out = w.bal[B_OUT, c]
    rot = w.rot[c]
    best = rot[0]
    ties = 0
    for j in range(n):
        i = rot[j]
        if out[i] < out[best]:
            best = i
            ties = 1
        elif out[i] == out[best]:
            ties += 1
            if ties > 1 and uniform(w.gen) * ties < 1.0:  # reservoir: each tie equally likely
                best = i
    return best


@inline_step
def choose(w: Any, x: float) -> tuple[int, int]:
    """(client, instance) for a request arriving at ``x`` (not ``pooled``): a client at random, and its choice."""
    c = client_of(w)
    return c, instance_for(w, c, x)


@inline_step
def client_of(w: Any) -> int:
    """The client a new request comes from: uniformly among the clients."""
    clients = w.ints[I_CLIENTS]
    return uniform_int(w.gen, clients) if clients > 1 else 0


@inline_step
def instance_for(w: Any, c: int, x: float) -> int:
    """The instance client ``c`` sends a request to at ``x`` (not ``pooled``), among the instances in its
    rotation (``w.rot``; instances.py); −1 when its rotation is empty."""
    kind = w.ints[I_BALANCER]
    n = w.nrot[c]
    if n == 0:
        return -1
    if kind == ROUND_ROBIN:
        j = (w.rr[c] + 1) % n
        w.rr[c] = j
        i = w.rot[c, j]
    elif kind == RANDOM:
        i = w.rot[c, uniform_int(w.gen, n)]
    elif kind == LEAST_OUTSTANDING:
        i = _least(w, c, n)
    else:
        i = _p2c(w, c, n, x)
    return i


@inline_step
def picked(w: Any, c: int, i: int) -> None:
    """The client sent a request to instance ``i``: one more outstanding."""
    w.bal[B_OUT, c, i] += 1.0


@inline_step
def answered(w: Any, c: int, i: int, x: float, rtt: float, ok: bool, cpu_permille: float) -> None:
    """The client saw instance ``i``'s response at ``x``: one fewer outstanding; p2c's EWMAs updated."""
    b = w.bal
    b[B_OUT, c, i] -= 1.0
    if w.ints[I_THROTTLE] != 0:  # adaptive throttling counts what the backend accepted
        mark(w, c, x, ok)
    if w.ints[I_BALANCER] != P2C:
        return
    gap = x - b[B_STAMP, c, i]
    b[B_STAMP, c, i] = x
    keep = math.exp(-gap / TAU_S) if b[B_LAG, c, i] > 0.0 else 0.0
    b[B_LAG, c, i] = b[B_LAG, c, i] * keep + rtt * 1e9 * (1.0 - keep)
    b[B_SUCCESS, c, i] = b[B_SUCCESS, c, i] * keep + (1000.0 if ok else 0.0) * (1.0 - keep)
    if cpu_permille > 0.0:
        b[B_CPU, c, i] = cpu_permille

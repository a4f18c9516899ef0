"""Balancers: how a request's instance is chosen (REQUESTS.md "balancer"; reference §1).

``pooled`` keeps one queue at the balancer and hands each request to a free worker of any instance (the
minute model's M/M/N). The others choose an instance per request, which queues it when its workers are busy:

- ``round-robin``: nginx's smooth weighted round-robin with equal weights, i.e. each client in turn;
- ``random``: uniformly among the serving instances;
- ``least-outstanding``: the instance this client has the fewest requests outstanding on (ties at random);
- ``p2c``: power of two choices with EWMA, as Bilibili's warden balancer (kratos v1.0.1 ``p2c.go``): two
  distinct random instances; B wins over A when load(A)·success(B)·W(B) > load(B)·success(A)·W(A), load =
  server CPU ‰ × (√(latency EWMA in ns) + 1) × (outstanding + 1), W the registry's weight of the instance
  (default 10); the loser is picked instead when it has not been picked for 3 s; an instance is valid while
  its success EWMA > 500 ‰ and its CPU < 900 ‰ (a pair is redrawn up to 3 times until one is valid). When the
  client hears of an attempt (``answered``: its answer, or its own deadline passing) it updates the instance's
  latency and success EWMAs with the weight e^(−Δt/600 ms), Δt the time since the instance's previous one, and
  takes the CPU the server reports (its sampler's last 500 ms reading, ``cpu.py``). As in warden, only what
  gRPC itself reports lowers the success: the client's deadline passing and a refused connection; a server's
  own answers — the bad build's 500, a limiter's 429, a queue's 503 — travel as application errors and count
  as successes.

Under revision 1 (run files of model version 1) p2c read the instance's busy workers at the response instead of
the sampled CPU, ignored the weights, counted every failure against the success EWMA, and a client heard of a
timed-out attempt only when its late answer came (``calls.reply``).

Every balancer but ``pooled`` runs in ``clients`` independent copies (client-side balancing): a request comes
from one client, chosen uniformly, and only that client's view and state are used and updated. Each client
chooses among the instances in its rotation: those its view of the registry lists, not ejected
(instances.py); round-robin steps through that list.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from oncallsim.model.control_spec import REQUEST_ONLY, ControlSpec
from oncallsim.model.jit import by_reference
from oncallsim.model.kernel import inline_step
from oncallsim.model.request.breaker import I_BREAKER, heard
from oncallsim.model.request.generator import uniform, uniform_int
from oncallsim.model.request.wrr import CPU_DEFAULT, WINDOW_BUCKETS, dynamic_answer, smooth_pick

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

MAX_CLIENTS = 64
# bal[...]: each client's view of each instance
B_OUT, B_LAG, B_SUCCESS, B_CPU, B_STAMP, B_PICK = range(6)
# ints[...]: the balancer (``BALANCERS``); how many clients balance on their own; the model revision's rules
I_BALANCER, I_CLIENTS, I_REVISION = range(3)
# What a client hears of an attempt (``answered``): an answer (the server's own error included: its kind says
# which), or gRPC's own failures — its deadline passed, the connection was refused
A_OK, A_ERROR, A_LIMITED, A_DROPPED, A_TIMEOUT, A_REFUSED = range(6)
R_NEXT_VIEW = 0  # reals[...]: the next time a balancer's view of the registry changes (instances.py)


@by_reference
class Views(NamedTuple):
    """What each client's balancer knows of each instance, and which instances are in its rotation."""

    ints: npt.NDArray[np.int64]
    reals: npt.NDArray[np.float64]
    bal: npt.NDArray[np.float64]  # bal[B_…, client, instance]
    rr: npt.NDArray[np.int64]  # each client's round-robin position
    view_lag: npt.NDArray[np.float64]  # per client: how long after a change its long-poll learns of it (s)
    rot: npt.NDArray[np.int64]  # rot[client, j]: the instances in that client's rotation
    nrot: npt.NDArray[np.int64]  # how many; the last row (MAX_CLIENTS) is the pooled balancer's
    weight: npt.NDArray[np.float64]  # per instance: the weight it registered with, as the clients' resolvers say
    # the smooth weighted round robins (wrr.py), per client and instance: current weight, effective weight
    # (dynamic-wrr's), score, the CPU the instance last reported; per client: when its weights were last redone;
    # dynamic-wrr's window w_win[W_…, client, instance, bucket] and each bucket's number (time / 100 ms)
    w_cw: npt.NDArray[np.float64]
    w_ewt: npt.NDArray[np.float64]
    w_score: npt.NDArray[np.float64]
    w_cpu: npt.NDArray[np.float64]
    w_update: npt.NDArray[np.float64]
    w_win: npt.NDArray[np.float64]
    w_stamp: npt.NDArray[np.int64]


def new_views(instances: int, clients: int = 1) -> Views:
    """One client; every view as it starts: nothing outstanding, no latency sample, full success, half CPU, every
    weight 10. dynamic-wrr's windows for ``clients`` (the run's; a window is a second of answers per instance)."""
    ints = np.zeros(3, dtype=np.int64)
    ints[I_CLIENTS] = 1
    bal = np.zeros((6, MAX_CLIENTS, instances))
    bal[B_SUCCESS] = SUCCESS_START
    bal[B_CPU] = CPU_START
    bal[B_PICK] = -np.inf
    return Views(
        ints=ints,
        reals=np.zeros(1),
        bal=bal,
        rr=np.full(MAX_CLIENTS, -1, dtype=np.int64),
        view_lag=np.zeros(MAX_CLIENTS),
        rot=np.zeros((MAX_CLIENTS + 1, instances), dtype=np.int64),
        nrot=np.zeros(MAX_CLIENTS + 1, dtype=np.int64),
        weight=np.full(instances, DEFAULT_WEIGHT),
        w_cw=np.zeros((MAX_CLIENTS, instances)),
        w_ewt=np.full((MAX_CLIENTS, instances), DEFAULT_WEIGHT),
        w_score=np.full((MAX_CLIENTS, instances), -1.0),
        w_cpu=np.full((MAX_CLIENTS, instances), CPU_DEFAULT),
        w_update=np.zeros(clients),
        w_win=np.zeros((3, clients, instances, WINDOW_BUCKETS)),
        w_stamp=np.full((clients, instances, WINDOW_BUCKETS), -1, dtype=np.int64),
    )


BALANCERS = ("pooled", "round-robin", "random", "least-outstanding", "p2c", "weighted-round-robin", "dynamic-wrr")
POOLED, ROUND_ROBIN, RANDOM, LEAST_OUTSTANDING, P2C, WEIGHTED_RR, DYNAMIC_WRR = range(len(BALANCERS))
DEFAULT_WEIGHT = 10.0  # warden's weight of an instance that registers none

CONTROLS = (
    ControlSpec(
        "balancer",
        "choice",
        "Balancer",
        "How each request's instance is chosen: pooled (one queue, any free worker), round-robin, random, "
        "least-outstanding, p2c (two random instances, the less loaded by latency × in-flight × CPU wins), "
        "weighted-round-robin (by the weights instances registered) or dynamic-wrr (weights from each "
        "instance's reported CPU, latency and errors, redone every second).",
        "pooled",
        choices=BALANCERS,
        engines=REQUEST_ONLY,
        section="balancers",
        piece="views",
        slot=I_BALANCER,
        moves={"": "switched the balancer to %(value)s"},
        in_force={"": "the %(value)s balancer"},
    ),
)

TAU_S = 0.6  # the EWMAs' time constant
PENALTY = 1000.0 * 250e6  # a load of 0 (no sample yet) counts as this
FORCE_GAP_S = 3.0  # a loser not picked for this long is picked instead
SUCCESS_START = 1000.0  # ‰
CPU_START = 500.0  # ‰


@inline_step
def _p2c_load(views: Any, c: int, i: int) -> float:
    b = views.bal
    load = b[B_CPU, c, i] * (math.floor(math.sqrt(b[B_LAG, c, i])) + 1.0) * (b[B_OUT, c, i] + 1.0)
    return PENALTY if load == 0.0 else load


@inline_step
def _p2c_valid(views: Any, c: int, i: int) -> bool:
    return views.bal[B_SUCCESS, c, i] > 500.0 and views.bal[B_CPU, c, i] < 900.0


@inline_step
def _p2c(views: Any, gen: Any, c: int, n: int, x: float) -> int:
    rot = views.rot[c]
    if n == 1:
        return rot[0]
    g = gen
    a = 0
    z = 1
    for _ in range(3):
        a = uniform_int(g, n)
        z = uniform_int(g, n - 1)
        if z >= a:
            z += 1
        a = rot[a]
        z = rot[z]
        if _p2c_valid(views, c, a) or _p2c_valid(views, c, z):
            break
    b = views.bal
    # the winner has the larger success × weight / load: compared cross-multiplied, as the original does
    if views.ints[I_REVISION] >= 2:
        z_wins = (
            _p2c_load(views, c, a) * b[B_SUCCESS, c, z] * views.weight[z]
            > _p2c_load(views, c, z) * b[B_SUCCESS, c, a] * views.weight[a]
        )
    else:
        z_wins = _p2c_load(views, c, a) * b[B_SUCCESS, c, z] > _p2c_load(views, c, z) * b[B_SUCCESS, c, a]
    if z_wins:
        win, lose = z, a
    else:
        win, lose = a, z
    if x - b[B_PICK, c, lose] > FORCE_GAP_S:
        b[B_PICK, c, lose] = x
        return lose
    b[B_PICK, c, win] = x
    return win


@inline_step
def _least(views: Any, gen: Any, c: int, n: int) -> int:
    out = views.bal[B_OUT, c]
    rot = views.rot[c]
    best = rot[0]
    ties = 0
    for j in range(n):
        i = rot[j]
        if out[i] < out[best]:
            best = i
            ties = 1
        elif out[i] == out[best]:
            ties += 1
            if ties > 1 and uniform(gen) * ties < 1.0:  # reservoir: each tie equally likely
                best = i
    return best


@inline_step
def choose(views: Any, gen: Any, x: float) -> tuple[int, int]:
    """(client, instance) for a request arriving at ``x`` (not ``pooled``): a client at random, and its choice."""
    c = client_of(views, gen)
    return c, instance_for(views, gen, c, x)


@inline_step
def client_of(views: Any, gen: Any) -> int:
    """The client a new request comes from: uniformly among the clients."""
    clients = views.ints[I_CLIENTS]
    return uniform_int(gen, clients) if clients > 1 else 0


@inline_step
def instance_for(views: Any, gen: Any, c: int, x: float) -> int:
    """The instance client ``c`` sends a request to at ``x`` (not ``pooled``), among the instances in its
    rotation (``views.rot``; instances.py); −1 when its rotation is empty."""
    kind = views.ints[I_BALANCER]
    n = views.nrot[c]
    if n == 0:
        return -1
    if kind == ROUND_ROBIN:
        j = (views.rr[c] + 1) % n
        views.rr[c] = j
        i = views.rot[c, j]
    elif kind == RANDOM:
        i = views.rot[c, uniform_int(gen, n)]
    elif kind == LEAST_OUTSTANDING:
        i = _least(views, gen, c, n)
    elif kind == P2C:
        i = _p2c(views, gen, c, n, x)
    else:  # weighted-round-robin, dynamic-wrr
        i = smooth_pick(views, c, n, kind == DYNAMIC_WRR, views.weight)
    return i


@inline_step
def picked(views: Any, c: int, i: int) -> None:
    """The client sent a request to instance ``i``: one more outstanding."""
    views.bal[B_OUT, c, i] += 1.0


@inline_step
def answered(views: Any, breaker: Any, c: int, i: int, x: float, rtt: float, how: int, cpu_permille: float) -> None:
    """Client ``c`` heard of its attempt on instance ``i`` at ``x`` (``how``: A_…; ``rtt`` since it sent it; the
    CPU the server reported, 0 none): one fewer outstanding; its breaker's window and its balancer's knowledge
    updated (inlined where a request is answered: what is not the common case is a call)."""
    views.bal[B_OUT, c, i] -= 1.0
    if breaker.ints[I_BREAKER] != 0:  # the client's breaker counts what it heard
        heard(breaker, c, x, rtt, how)
    kind = views.ints[I_BALANCER]
    if kind == P2C:
        _p2c_heard(views, c, i, x, rtt, how, cpu_permille)
    elif kind == DYNAMIC_WRR:
        dynamic_answer(views, views.weight, c, i, x, rtt, how == A_TIMEOUT or how == A_REFUSED, cpu_permille)


@inline_step
def _p2c_heard(views: Any, c: int, i: int, x: float, rtt: float, how: int, cpu_permille: float) -> None:
    """p2c's EWMAs of instance ``i`` at client ``c``: latency and success weighted e^(−Δt/600 ms), the CPU taken."""
    b = views.bal
    gap = x - b[B_STAMP, c, i]
    b[B_STAMP, c, i] = x
    keep = math.exp(-gap / TAU_S) if b[B_LAG, c, i] > 0.0 else 0.0
    if views.ints[I_REVISION] >= 2:  # gRPC's own failures only (warden: codes other than OK and Unknown)
        ok = how != A_TIMEOUT and how != A_REFUSED
    else:
        ok = how == A_OK
    b[B_LAG, c, i] = b[B_LAG, c, i] * keep + rtt * 1e9 * (1.0 - keep)
    b[B_SUCCESS, c, i] = b[B_SUCCESS, c, i] * keep + (1000.0 if ok else 0.0) * (1.0 - keep)
    if cpu_permille > 0.0:
        b[B_CPU, c, i] = cpu_permille

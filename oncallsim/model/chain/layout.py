"""A service graph as the compiled loop reads it: numbers in arrays, times in seconds, services by position.

The scenario layer owns the file format (``scenarios/graph.py``: names, validation, refusals) and builds this
layout from it; the model reads only the layout, so the engine knows nothing of TOML or of pydantic. The
columns are named by the constants below (``svc[s, SV_MEAN_S]``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

__all__ = [
    "BALANCERS",
    "BAL_LEAST_OUTSTANDING",
    "BAL_POOLED",
    "BAL_RANDOM",
    "BAL_ROUND_ROBIN",
    "DIST_CONSTANT",
    "DIST_EXPONENTIAL",
    "DIST_LOGNORMAL",
    "CallLayout",
    "ChainLayout",
    "ServiceLayout",
    "quantile_s",
    "tiny_chain",
]

# a service's row of ``svc``
(
    SV_MEAN_S,  # the mean of its own work per request
    SV_DIST,  # DIST_*
    SV_MU,  # lognormal: the log's mean, ln(mean) − σ²/2
    SV_SIGMA,  # lognormal: the log's standard deviation
    SV_ASYNC,  # 1: its worker is freed when its own work is done
    SV_TIMEOUT_S,  # a caller's wait for one attempt of a call into it (∞: none)
    SV_RETRIES,  # retries of each failed call it makes
    SV_BUDGET,  # the most of its calls (over the last BUDGET_WINDOW_S) that may be retries
    SV_HEDGE_Q,  # the quantile past which it hedges a call (0: never)
    SV_WORKERS,  # instances × workers per instance
    SV_INSTANCES,
    SV_BREAKER_K,  # its breaker on the calls it makes: Google SRE's K (0: no breaker)
    SV_BREAKER_BUCKET_S,  # the breaker's window / BREAKER_BUCKETS
    SV_BREAKER_MIN,  # the requests in the window below which it rejects nothing
    SV_MAX_QUEUE,  # the most attempts waiting for a worker; one more is refused on arrival (∞: no bound)
    SV_BBR,  # 1: Kratos's BBR limiter sheds arrivals at it
    SV_LIFO,  # 1: a free worker takes the newest waiting attempt (0: the oldest, FIFO)
    SV_BALANCER,  # BAL_*: one queue for all its workers, or a queue per instance and how an instance is chosen
    SV_WORKERS_PER_INSTANCE,
    SV_COLUMNS,
) = range(20)

BREAKER_BUCKETS = 10  # a breaker's rolling window: 10 buckets (as aegis's sre breaker)

DIST_EXPONENTIAL, DIST_LOGNORMAL, DIST_CONSTANT = range(3)

# how an arriving attempt finds a worker (docs/graphs.md, "Balancers"): one queue in front of every worker (a
# perfect balancer), or a queue per instance, the instance chosen at random, in turn, or by fewest outstanding
BAL_POOLED, BAL_RANDOM, BAL_ROUND_ROBIN, BAL_LEAST_OUTSTANDING = range(4)
BALANCERS = {
    "pooled": BAL_POOLED,
    "random": BAL_RANDOM,
    "round-robin": BAL_ROUND_ROBIN,
    "least-outstanding": BAL_LEAST_OUTSTANDING,
}

# a call's row of ``edge_i`` and ``edge_f``
EI_CALLEE, EI_COPIES, EI_CALLER, EI_PAIR, EI_COLUMNS = range(5)  # EI_PAIR: its (caller, callee)'s breaker
EF_PROBABILITY, EF_NETWORK_S, EF_HEDGE_DECLARED_S, EF_COLUMNS = range(4)  # probability −1: made count times


@dataclass(frozen=True)
class CallLayout:
    """One call a service makes: ``copies`` copies (or one, with ``probability``), in a stage of its caller."""

    to: int
    copies: int
    probability: float | None
    network_s: float
    parallel: bool


@dataclass(frozen=True)
class ServiceLayout:
    name: str
    instances: int
    workers_per_instance: int
    mean_s: float
    distribution: int
    sigma: float
    asynchronous: bool
    timeout_s: float | None
    retries: int
    retry_budget: float
    hedge_quantile: float | None
    calls: tuple[CallLayout, ...] = ()
    breaker_k: float | None = None  # Google SRE's adaptive throttling on its calls, one per callee (None: off)
    breaker_window_s: float = 3.0
    breaker_min: int = 20
    max_queue: int | None = None  # the most attempts waiting for its workers (None: no bound)
    bbr: bool = False  # Kratos's BBR limiter on the service
    lifo: bool = False  # its queue's discipline: the newest first (False: the oldest, FIFO)
    balancer: int = BAL_POOLED  # BAL_*: one queue, or a queue per instance chosen by the balancer


@dataclass(frozen=True)
class ChainLayout:
    """The graph's services (``services[entry]`` is the one the clients call), the clients' deadline, and the
    arrays the loop reads: ``svc`` (a row per service), the stages (``stage_first[s]`` to ``stage_first[s + 1]``
    are service s's, ``stage_edges[g]`` to ``stage_edges[g + 1]`` the calls of stage g) and the calls
    (``edge_i``, ``edge_f``). ``hedge_declared_s`` of a call is its caller's hedge delay before the callee has
    answered often enough to measure one: the callee's declared quantile plus the network there and back.
    ``pairs`` is the number of distinct (caller, callee) pairs: each has its breaker's window (``EI_PAIR``)."""

    services: tuple[ServiceLayout, ...]
    entry: int
    deadline_s: float
    propagation: bool = True  # calls carry what is left of the clients' deadline; a client's cancel reaches the entry
    svc: npt.NDArray[np.float64] = field(init=False, repr=False, compare=False)
    stage_first: npt.NDArray[np.int64] = field(init=False, repr=False, compare=False)
    stage_edges: npt.NDArray[np.int64] = field(init=False, repr=False, compare=False)
    edge_i: npt.NDArray[np.int64] = field(init=False, repr=False, compare=False)
    edge_f: npt.NDArray[np.float64] = field(init=False, repr=False, compare=False)
    pairs: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        n = len(self.services)
        svc = np.zeros((n, SV_COLUMNS))
        stage_first = [0]
        stage_edges = [0]
        edges_i: list[list[int]] = []
        edges_f: list[list[float]] = []
        pairs: dict[tuple[int, int], int] = {}
        for s, service in enumerate(self.services):
            row = svc[s]
            row[SV_MEAN_S] = service.mean_s
            row[SV_DIST] = service.distribution
            row[SV_SIGMA] = service.sigma
            row[SV_MU] = math.log(service.mean_s) - service.sigma**2 / 2.0 if service.mean_s > 0 else 0.0
            row[SV_ASYNC] = 1.0 if service.asynchronous else 0.0
            row[SV_TIMEOUT_S] = math.inf if service.timeout_s is None else service.timeout_s
            row[SV_RETRIES] = service.retries
            row[SV_BUDGET] = service.retry_budget
            row[SV_HEDGE_Q] = service.hedge_quantile or 0.0
            row[SV_WORKERS] = service.instances * service.workers_per_instance
            row[SV_INSTANCES] = service.instances
            row[SV_BREAKER_K] = service.breaker_k or 0.0
            row[SV_BREAKER_BUCKET_S] = service.breaker_window_s / BREAKER_BUCKETS
            row[SV_BREAKER_MIN] = service.breaker_min
            row[SV_MAX_QUEUE] = math.inf if service.max_queue is None else service.max_queue
            row[SV_BBR] = 1.0 if service.bbr else 0.0
            row[SV_LIFO] = 1.0 if service.lifo else 0.0
            row[SV_BALANCER] = service.balancer
            row[SV_WORKERS_PER_INSTANCE] = service.workers_per_instance
            stages = 0
            parallel = False
            for call in service.calls:  # a sequential call's copies a stage each; consecutive parallel calls one
                copies = 1 if call.probability is not None else call.copies
                declared = 0.0
                if service.hedge_quantile is not None:
                    declared = 2.0 * call.network_s + quantile_s(self.services[call.to], service.hedge_quantile)
                edge_f = [-1.0 if call.probability is None else call.probability, call.network_s, declared]
                pair = pairs.setdefault((s, call.to), len(pairs))
                if call.parallel:
                    if not parallel:
                        stages += 1
                        stage_edges.append(stage_edges[-1])
                    edges_i.append([call.to, copies, s, pair])
                    edges_f.append(edge_f)
                    stage_edges[-1] += 1
                    parallel = True
                else:
                    for _ in range(copies):
                        stages += 1
                        edges_i.append([call.to, 1, s, pair])
                        edges_f.append(edge_f)
                        stage_edges.append(stage_edges[-1] + 1)
                    parallel = False
            stage_first.append(stage_first[-1] + stages)
        object.__setattr__(self, "svc", svc)
        object.__setattr__(self, "stage_first", np.array(stage_first, dtype=np.int64))
        object.__setattr__(self, "stage_edges", np.array(stage_edges, dtype=np.int64))
        object.__setattr__(self, "edge_i", np.array(edges_i, dtype=np.int64).reshape(-1, EI_COLUMNS))
        object.__setattr__(self, "edge_f", np.array(edges_f, dtype=np.float64).reshape(-1, EF_COLUMNS))
        object.__setattr__(self, "pairs", len(pairs))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.services)

    @property
    def widest_stage(self) -> int:
        """The most calls one stage sends at once (what one event may create)."""
        widest = 1
        for g in range(len(self.stage_edges) - 1):
            widest = max(widest, int(self.edge_i[self.stage_edges[g] : self.stage_edges[g + 1], EI_COPIES].sum()))
        return widest

    def leaves(self) -> list[int]:
        return [s for s, service in enumerate(self.services) if not service.calls]


def quantile_s(service: ServiceLayout, q: float) -> float:
    """The q-quantile of a service's own work as declared: exponential −S·ln(1 − q); lognormal with the mean S,
    exp(μ + σ·z_q), μ = ln S − σ²/2; constant S."""
    from statistics import NormalDist

    if service.distribution == DIST_CONSTANT:
        return service.mean_s
    if service.distribution == DIST_EXPONENTIAL:
        return -service.mean_s * math.log1p(-q)
    mu = math.log(service.mean_s) - service.sigma**2 / 2.0
    return math.exp(mu + service.sigma * NormalDist().inv_cdf(q))


def tiny_chain() -> ChainLayout:
    """Three services, every mechanism on (a breaker, a queue bound, a BBR limiter, LIFO, a lognormal, a constant and an
    exponential work, a timeout, retries, a hedge, a parallel call with a probability): what preparing the engine
    plays, so each step is compiled."""
    leaf = ServiceLayout(
        "leaf", 1, 2, 0.002, DIST_EXPONENTIAL, 0.0, False, 0.05, 0, 1.0, None, max_queue=4, bbr=True, lifo=True
    )
    mid = ServiceLayout(
        "mid", 1, 2, 0.001, DIST_LOGNORMAL, 0.5, True, 0.2, 1, 0.5, 0.9, (CallLayout(2, 2, None, 0.0005, True),)
    )
    entry = ServiceLayout(
        "entry", 1, 2, 0.0, DIST_CONSTANT, 0.0, False, None, 1, 0.2, None, (CallLayout(1, 1, 0.9, 0.001, False),),
        breaker_k=1.0, breaker_window_s=1.0, breaker_min=0,
    )  # fmt: skip
    return ChainLayout((entry, mid, leaf), 0, 1.0)

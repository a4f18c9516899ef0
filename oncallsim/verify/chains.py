"""A chain of services simulated on its own: the oracle a graph in the request engine will be checked against
(issue 24). Written separately from the engine, in plain Python with one event heap, so that it shares no code
and no mistake with it; it reads a ``GraphSpec`` (oncallsim/scenarios/graph.py) and nothing else of oncallsim.

What it simulates, per docs/graphs.md:

- Poisson arrivals at the entry; the client waits ``deadline_ms`` (or the entry's ``timeout_ms``, if shorter)
  and never retries.
- Each service: one FIFO queue in front of instances × workers (with a ``balancer``, a queue per instance: see
  below); an attempt waits for a worker, does its own work (the declared distribution), then makes its calls
  stage by stage (a sequential copy alone, consecutive parallel calls together; a call with a probability is
  drawn per attempt). Unless the service is asynchronous, the worker stays held while the attempt waits on its
  callees; an asynchronous service frees it when its own work is done.
- A call's copy travels ``network_ms`` there and back. It carries a deadline: the caller's own, or sooner the
  callee's per-attempt ``timeout_ms`` from the moment it was sent. A callee refuses work whose deadline has
  passed (on arrival and again when a worker takes it), abandons it between stages once the deadline passes,
  and its caller gives up on the copy at that deadline. A cancellation travels the call's network like a
  request (the callee's work goes on until it arrives); the client's reaches the entry at once.
- A failed call (an error answer, or no answer by its deadline) is retried at once by the caller up to its
  ``retries``, while its deadline lasts and while its ``retry_budget`` allows: a retry is sent only if the
  caller's retries would then be at most that share of the calls it has sent (first tries and retries) in the
  last ``BUDGET_WINDOW_S`` whole seconds (this one and the nine before).
- Hedging (the caller's ``hedge_after_quantile`` q): a second copy of a try that has not answered after the
  q-quantile of the callee's latency (as the callers have seen it: the last 1,000 successful answers, until 100
  of them the declared service time's quantile plus the network there and back; or always the declared one);
  the first success wins and the other copy is cancelled; the try fails when both have.
- A breaker (the caller's ``breaker``: Google SRE's adaptive throttling, one per callee): over the last
  ``window_s`` in 10 buckets (the current one included) it counts the copies it sent that came back (requests)
  and those accepted; with requests at least ``min_requests`` and above ``k`` × accepts, it rejects a copy
  itself with probability (requests − k·accepts)/(requests + 1). A rejected try fails at once (never sent, counted
  as a request not accepted) and is retried as any failed try; a rejected hedge is simply not sent. An answer
  counts as accepted when it succeeded, not when it failed or timed out; a copy the caller cancelled (its other
  copy won, or the caller stopped) counts as accepted (Kratos marks only 500, 503 and 504 as failures).
- A queue bound (``max_queue``): an attempt arriving when that many wait and no worker is idle is refused at
  once, an error answer (its failure beginning where a wait for a worker there would: ``wait_began``); a
  caller's breaker counts that answer as accepted (an overloaded server's 429, as Kratos counts it).
- A BBR limiter (``limiter = "bbr"``, Kratos's, as ``model/request/limiter.py`` describes it for one service):
  the service's CPU is sampled every 500 ms as its workers' own work begun since the last sample against its
  workers × 500 ms (a worker waiting on its calls burns none), a zero reading leaving the last non-zero one,
  and estimated as 0.95·itself + 0.05·that reading; over 100 buckets of 100 ms it keeps the attempts it was done
  with (answered, or dropped when cancelled after a worker took them) and their times from a worker's start (whole
  ms, rounded up). An arrival is shed (an error answer, accepted by a caller's breaker) when the estimate is at
  least 800 ‰ and the attempts in flight (held workers and the queue) are above 1 and above
  floor(maxPass × minRT × 10 / 1000) over the 99 buckets before the current one; for 1 s after the first shed
  of an episode, on the in-flight test alone.
- A queue discipline (``discipline``): a free worker takes the oldest waiting attempt (``fifo``) or the
  newest (``lifo``).
- A balancer (``balancer``): ``pooled`` (the default) is the one queue above. Otherwise each instance has its
  own queue in front of its own ``workers_per_instance`` workers, and an attempt that passed the arrival checks
  (cancelled, deadline, BBR, in that order) is given one instance at once: ``random``, any with the same
  chance; ``round-robin``, the service's counter (from 0) modulo the instances, the counter then moving on;
  ``least-outstanding``, the one with the fewest attempts outstanding (given it and not yet finished there:
  answered, dropped as cancelled, refused, abandoned; an asynchronous service's attempt stays outstanding after
  its worker is freed), a tie drawn evenly. ``max_queue`` then bounds each instance's queue, the discipline
  orders each, and a freed worker takes only from its own instance's queue; BBR stays one limiter for the
  service (its CPU over all its workers, its in-flight over all its queues), and where a wait began is still
  read from all the service's held workers. One instance draws nothing: the same run, to the bit, as pooled.
- ``failures`` (service → p): each attempt's own work ends in an error with probability p (the faults the tests
  inject; a scenario's faults are events, not graph declarations).

It reports, per service, the attempts that arrived, their outcomes, waits and latencies, and the attempts each
leaf received per entry request; per entry request, its end-to-end latency, whether it succeeded, and for a
failed one the service where its failure began (docs/graphs.md, "Where the failures began"):

- an attempt's own failure begins at its service: its own error, its deadline passed between stages, refused
  on arrival with its deadline passed; refused after waiting in the queue, it begins where that wait began;
- a wait for a worker at a service began at that service, unless more than half of its held workers wait on one
  stage of calls: then at that stage's first callee, by the same rule;
- a wait that ran out (a caller's timer, the client's deadline) began at the deepest service still working on
  it: down the first unanswered call's awaited copy while waiting on calls; at its own work, that service; waiting
  for a worker or on the network, where that wait began; answered already, where its answer's failure began;
- a call that fails for good (its retries spent or refused) fails its caller where its last try's failure
  began; a call sent past the caller's deadline, at the caller.

The engine counts each origin as it goes (per-stage counters); here the held workers are looked at one by one.
"""

from __future__ import annotations

import heapq
import math
import random
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from oncallsim.scenarios.graph import CallSpec, GraphSpec, ServiceSpec, service_quantile_ms, stages

__all__ = ["ChainReport", "ServiceReport", "simulate"]

QUANTILES = (0.5, 0.95, 0.99)
HEDGE_WINDOW = 1000  # the latencies a hedge delay is read from
HEDGE_MIN_SEEN = 100  # fewer than this: the declared quantile
HEDGE_REFRESH = 100  # the observed quantile recomputed every so many new answers
BUDGET_WINDOW_S = 10  # a retry budget counts the calls of the last 10 whole seconds

# event kinds
_CLIENT, _REACH, _OWN_DONE, _REPLY, _TIMER, _HEDGE, _CLIENT_TIMER, _CANCEL = range(8)
# an attempt's phases
_WAITING, _WORKING, _CALLING, _FINISHED = range(4)


@dataclass(frozen=True)
class ServiceReport:
    """One service over the measured requests (those after the warm-up, and everything they caused).

    ``attempts``: arrived (first tries, retries and hedges alike); ``started``: taken by a worker; ``refused``:
    their deadline had passed on arrival or when a worker took them; ``cancelled``: their caller gave up or
    another copy won; ``succeeded``/``failed``: answered OK / with an error (abandoned at the deadline between
    stages counts as failed). As a caller: ``retries`` and ``hedges`` sent, ``timeouts`` (copies given up on).
    ``latency_ms``: arrival to answer of the successful attempts, at QUANTILES; ``waits_ms``: each started
    attempt's wait for a worker, in start order; ``failures_begun``: the measured entry requests that failed
    whose failure began here."""

    attempts: int
    started: int
    succeeded: int
    failed: int
    refused: int
    cancelled: int
    retries: int
    hedges: int
    timeouts: int
    goodput_per_s: float
    latency_ms: dict[float, float]
    waits_ms: np.ndarray
    failures_begun: int = 0
    rejected: int = 0
    queue_full: int = 0
    limited: int = 0

    @property
    def mean_wait_ms(self) -> float:
        return float(self.waits_ms.mean()) if len(self.waits_ms) else 0.0


@dataclass(frozen=True)
class ChainReport:
    """A run of the oracle: per measured entry request (arrival order) its latency to the client's answer (the
    deadline, for one given up on), whether it succeeded and the attempts each leaf received on its behalf
    (first tries, retries and hedges), and for a failed one the service where its failure began (``origin``,
    None for a success); per service its ``ServiceReport``."""

    requests: int
    duration_s: float
    latency_ms: np.ndarray
    ok: np.ndarray
    services: dict[str, ServiceReport]
    leaf_attempts: dict[str, np.ndarray]
    origin: list[str | None] = field(default_factory=list)

    @property
    def leaf_attempts_per_request(self) -> dict[str, float]:
        """The amplification at each leaf: its attempts per entry request."""
        return {leaf: float(counts.mean()) for leaf, counts in self.leaf_attempts.items()}

    @property
    def succeeded(self) -> int:
        return int(self.ok.sum())

    @property
    def goodput_per_s(self) -> float:
        return self.succeeded / self.duration_s if self.duration_s > 0 else 0.0


@dataclass
class _Counts:
    attempts: int = 0
    started: int = 0
    succeeded: int = 0
    failed: int = 0
    refused: int = 0
    cancelled: int = 0
    retries: int = 0
    hedges: int = 0
    timeouts: int = 0
    rejected: int = 0
    queue_full: int = 0
    limited: int = 0
    waits: list[float] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)


class _Instance:
    """A queue and the workers that take from it: the service's whole fleet when pooled, else one instance's."""

    __slots__ = ("free", "outstanding", "queue")

    def __init__(self, workers: int) -> None:
        self.free = workers
        self.queue: deque[_Attempt] = deque()
        self.outstanding = 0  # assigned here and not yet finished at the service (least-outstanding reads it)


class _Service:
    __slots__ = (
        "bbr",
        "breakers",
        "counts",
        "cpu",
        "drop_at",
        "holders",
        "instances",
        "name",
        "quantile_at",
        "quantile_cache",
        "seen",
        "seen_count",
        "sent",
        "sent_retries",
        "spec",
        "stages",
        "turn",
    )

    def __init__(self, name: str, spec: ServiceSpec) -> None:
        self.name = name
        self.spec = spec
        self.holders: set[_Attempt] = set()  # the attempts holding its workers (where a wait began)
        if spec.balancer == "pooled":
            self.instances = [_Instance(spec.workers)]
        else:
            self.instances = [_Instance(spec.workers_per_instance) for _ in range(spec.instances)]
        self.turn = 0  # round-robin's counter
        self.stages = stages(spec)
        self.counts = _Counts()
        self.sent: dict[int, int] = {}  # calls sent (first tries and retries) per whole second: the budget's base
        self.sent_retries: dict[int, int] = {}
        self.seen: deque[float] = deque(maxlen=HEDGE_WINDOW)  # its answers' latencies as its callers saw them
        self.seen_count = 0
        self.quantile_cache: dict[float, float] = {}
        self.quantile_at = -1  # seen_count when the cache was filled
        self.breakers: dict[str, dict[int, list[int]]] = {}  # per callee: bucket number → [requests, accepts]
        self.bbr: dict[int, list[int]] = {}  # BBR: bucket number → [completions, their times' sum (ms)]
        self.cpu = {"work_ms": 0.0, "last": 0.0, "estimate": 0.0, "next_ms": 500.0}
        self.drop_at: float | None = None


class _Attempt:
    """One attempt at a service: a request being served (an entry request, a call's copy)."""

    __slots__ = (
        "arrived",
        "calls",
        "cancelled",
        "copy",
        "deadline",
        "holds",
        "instance",
        "measured",
        "origin",
        "phase",
        "plan",
        "plan_stages",
        "root",
        "service",
        "stage",
        "started",
    )

    def __init__(self, service: _Service, root: int, measured: bool, deadline: float, copy: _Copy | None) -> None:
        self.service = service
        self.root = root
        self.measured = measured
        self.deadline = deadline
        self.copy = copy  # None: the entry's attempt, answered to the client
        self.cancelled = False
        self.holds = False
        self.instance: _Instance | None = None  # the queue and workers it was given at its arrival
        self.phase = _WAITING
        self.arrived = 0.0
        self.plan: list[list[tuple[CallSpec, int]]] = []
        self.plan_stages: list[int] = []  # each drawn stage's place among the service's declared stages
        self.origin: str | None = None  # where its failure began
        self.stage = 0
        self.calls: list[_Call] = []
        self.started: float | None = None  # when a worker took it


class _Call:
    """One call an attempt makes: its tries (the first and the retries), each of one or two copies."""

    __slots__ = ("callee", "copies", "done", "hedged", "origin", "parent", "retries", "spec", "try_no")

    def __init__(self, parent: _Attempt, spec: CallSpec, callee: _Service) -> None:
        self.parent = parent
        self.spec = spec
        self.callee = callee
        self.copies: list[_Copy] = []
        self.done = False
        self.retries = 0
        self.try_no = 0
        self.hedged = False
        self.origin: str | None = None  # where its last failed try's failure began


class _Copy:
    __slots__ = ("alive", "attempt", "call", "hedge", "sent")

    def __init__(self, call: _Call, sent: float, hedge: bool) -> None:
        self.call = call
        self.sent = sent
        self.hedge = hedge
        self.alive = True
        self.attempt: _Attempt | None = None


def simulate(
    graph: GraphSpec,
    rate_per_s: float,
    requests: int,
    seed: int = 0,
    warmup: int = 0,
    failures: Mapping[str, float] | None = None,
    deadline_ms: float | None = None,
    hedge_delay: Literal["observed", "declared"] = "observed",
) -> ChainReport:
    """``warmup`` + ``requests`` entry requests arriving as a Poisson stream of ``rate_per_s``; only the last
    ``requests`` (and everything they cause) are measured. ``deadline_ms`` replaces the graph's (a test of a
    deadline the validator would refuse); ``failures`` maps services to the chance an attempt's work fails."""
    if not rate_per_s > 0.0 or requests < 1 or warmup < 0:
        raise ValueError("needs a rate above 0, a request or more, and a warm-up of 0 or more")
    failures = dict(failures or {})
    for name, p in failures.items():
        if name not in graph.services or not 0.0 <= p <= 1.0:
            raise ValueError(f"failures: {name!r} must be a declared service with a chance from 0 to 1")
    sim = _Chain(graph, random.Random(seed), failures, graph.deadline_ms if deadline_ms is None else deadline_ms)
    sim.hedge_declared = hedge_delay == "declared"
    return sim.run(rate_per_s, requests, warmup)


class _Chain:
    def __init__(self, graph: GraphSpec, rng: random.Random, failures: dict[str, float], deadline_ms: float) -> None:
        self.graph = graph
        self.propagation = graph.deadline_propagation
        self.rng = rng
        self.failures = failures
        self.deadline_ms = deadline_ms
        self.services = {name: _Service(name, spec) for name, spec in graph.services.items()}
        self.events: list[tuple[float, int, int, Any]] = []
        self.seq = 0
        self.hedge_declared = False
        self.done: list[bool] = []
        self.ok: list[bool] = []
        self.origin: list[str | None] = []
        self.latency: list[float] = []
        self.arrivals: list[float] = []
        self.mean_gap_ms = 1.0
        self.warmup = 0
        self.leaf_counts: dict[str, list[int]] = {}

    def push(self, t: float, kind: int, obj: Any) -> None:
        self.seq += 1
        heapq.heappush(self.events, (t, self.seq, kind, obj))

    # --- the run ---------------------------------------------------------------------------------------------

    def run(self, rate_per_s: float, requests: int, warmup: int) -> ChainReport:
        total = warmup + requests
        self.mean_gap_ms = 1000.0 / rate_per_s
        self.done = [False] * total
        self.ok = [False] * total
        self.origin = [None] * total
        self.latency = [0.0] * total
        self.arrivals = [0.0] * total
        self.warmup = warmup
        self.leaf_counts = {leaf: [0] * total for leaf in self.graph.leaves()}
        self.push(self.rng.expovariate(1.0 / self.mean_gap_ms), _CLIENT, 0)
        handlers: dict[int, Callable[[float, Any], None]] = {
            _CLIENT: self.client,
            _REACH: self.reach,
            _OWN_DONE: self.own_done,
            _REPLY: self.reply,
            _TIMER: self.timer,
            _HEDGE: self.hedge,
            _CLIENT_TIMER: self.client_timer,
            _CANCEL: self.cancel,
        }
        while self.events:
            t, _, kind, obj = heapq.heappop(self.events)
            handlers[kind](t, obj)
        return self.report(requests, warmup)

    def report(self, requests: int, warmup: int) -> ChainReport:
        first, last = self.arrivals[warmup], self.arrivals[-1]
        duration_s = max(last - first, 0.0) / 1000.0 if requests > 1 else 0.0
        out: dict[str, ServiceReport] = {}
        for name, service in self.services.items():
            c = service.counts
            lat = np.array(c.latencies)
            out[name] = ServiceReport(
                attempts=c.attempts,
                started=c.started,
                succeeded=c.succeeded,
                failed=c.failed,
                refused=c.refused,
                cancelled=c.cancelled,
                retries=c.retries,
                hedges=c.hedges,
                timeouts=c.timeouts,
                goodput_per_s=c.succeeded / duration_s if duration_s > 0 else 0.0,
                latency_ms={q: float(np.quantile(lat, q)) if len(lat) else math.nan for q in QUANTILES},
                waits_ms=np.array(c.waits),
                failures_begun=sum(1 for o in self.origin[warmup:] if o == name),
                rejected=c.rejected,
                queue_full=c.queue_full,
                limited=c.limited,
            )
        return ChainReport(
            requests=requests,
            duration_s=duration_s,
            latency_ms=np.array(self.latency[warmup:]),
            ok=np.array(self.ok[warmup:], dtype=bool),
            services=out,
            leaf_attempts={leaf: np.array(counts[warmup:]) for leaf, counts in self.leaf_counts.items()},
            origin=self.origin[warmup:],
        )

    # --- the client ------------------------------------------------------------------------------------------

    def client(self, t: float, root: int) -> None:
        if root + 1 < len(self.done):
            self.push(t + self.rng.expovariate(1.0 / self.mean_gap_ms), _CLIENT, root + 1)
        entry = self.services[self.graph.entry]
        deadline = t + self.deadline_ms
        if entry.spec.timeout_ms is not None:
            deadline = min(deadline, t + entry.spec.timeout_ms)
        self.arrivals[root] = t
        # without propagation the entry knows no deadline: it serves the request however late
        attempt = _Attempt(entry, root, root >= self.warmup, deadline if self.propagation else math.inf, None)
        self.push(deadline, _CLIENT_TIMER, attempt)
        self.reach(t, attempt)

    def client_timer(self, t: float, attempt: _Attempt) -> None:
        if not self.done[attempt.root]:
            self.answer(t, attempt, False, self.waited_on(attempt))
            if self.propagation:  # else the client's going reaches nobody: the entry works on
                self.cancel(t, attempt)

    def answer(self, t: float, attempt: _Attempt, ok: bool, origin: str | None = None) -> None:
        root = attempt.root
        if self.done[root]:
            return
        self.done[root] = True
        self.ok[root] = ok
        if not ok:
            self.origin[root] = origin or attempt.service.name
        self.latency[root] = t - self.arrivals[root]

    # --- a service ---------------------------------------------------------------------------------------------

    def reach(self, t: float, attempt: _Attempt) -> None:
        service = attempt.service
        counts = service.counts if attempt.measured else None
        attempt.arrived = t
        if counts is not None:
            counts.attempts += 1
            if not service.stages:
                self.leaf_counts[service.name][attempt.root] += 1
        if self.turned_away(t, attempt, queued=False):
            return
        if service.spec.limiter == "bbr" and self.bbr_sheds(t, service):
            if counts is not None:
                counts.limited += 1
            attempt.origin = service.name
            self.finish(t, attempt, False, counted=False, overloaded=True)
            return
        instance = self.balance(service)
        attempt.instance = instance
        instance.outstanding += 1
        bound = service.spec.max_queue
        if bound is not None and instance.free <= 0 and len(instance.queue) >= bound:
            if counts is not None:
                counts.queue_full += 1
            attempt.origin = self.wait_began(service)
            self.finish(t, attempt, False, counted=False, overloaded=True)
            return
        if service.spec.discipline == "lifo":
            instance.queue.appendleft(attempt)  # taken first
        else:
            instance.queue.append(attempt)
        self.dequeue(t, service, instance)

    def balance(self, service: _Service) -> _Instance:
        """The instance an arrival is given: pooled, the one queue; random, any with the same chance; round-robin,
        the service's counter modulo the instances, then the counter moves on; least-outstanding, the one with the
        fewest attempts assigned and not finished, a tie drawn evenly. A single instance draws nothing (it is the
        pooled fleet, and its runs are the same to the bit)."""
        instances = service.instances
        n = len(instances)
        if n == 1:
            return instances[0]
        balancer = service.spec.balancer
        if balancer == "random":
            return instances[self.rng.randrange(n)]
        if balancer == "round-robin":
            chosen = instances[service.turn % n]
            service.turn += 1
            return chosen
        fewest = min(i.outstanding for i in instances)
        tied = [i for i in instances if i.outstanding == fewest]
        return tied[0] if len(tied) == 1 else tied[self.rng.randrange(len(tied))]

    def dequeue(self, t: float, service: _Service, instance: _Instance) -> None:
        while instance.free > 0 and instance.queue:
            attempt = instance.queue.popleft()
            if self.turned_away(t, attempt, queued=True):
                continue
            counts = service.counts if attempt.measured else None
            instance.free -= 1
            service.holders.add(attempt)
            attempt.holds = True
            attempt.phase = _WORKING
            if counts is not None:
                counts.started += 1
                counts.waits.append(t - attempt.arrived)
            attempt.started = t
            work = self.work_ms(service.spec)
            if service.spec.limiter == "bbr":
                self.cpu_samples(t, service)
                service.cpu["work_ms"] += work
            self.push(t + work, _OWN_DONE, attempt)

    def turned_away(self, t: float, attempt: _Attempt, queued: bool) -> bool:
        """Whether the service drops the attempt before any work: cancelled by its caller, or its deadline past.
        Checked twice, on arrival and again when a worker takes it (a deadline can pass while it queues)."""
        counts = attempt.service.counts if attempt.measured else None
        if attempt.cancelled:
            if counts is not None:
                counts.cancelled += 1
            self.gone(attempt)
            return True
        if t >= attempt.deadline:
            if counts is not None:
                counts.refused += 1
            attempt.origin = self.wait_began(attempt.service) if queued else attempt.service.name
            self.finish(t, attempt, False, counted=False)
            return True
        return False

    def work_ms(self, spec: ServiceSpec) -> float:
        if spec.distribution == "constant":
            return spec.service_ms
        if spec.distribution == "exponential":
            return self.rng.expovariate(1.0 / spec.service_ms)
        assert spec.sigma is not None
        return self.rng.lognormvariate(math.log(spec.service_ms) - spec.sigma**2 / 2.0, spec.sigma)

    def release(self, t: float, attempt: _Attempt) -> None:
        if attempt.holds:
            assert attempt.instance is not None
            attempt.holds = False
            attempt.service.holders.discard(attempt)
            attempt.instance.free += 1
            self.dequeue(t, attempt.service, attempt.instance)

    @staticmethod
    def gone(attempt: _Attempt) -> None:
        """The attempt is finished at its service (answered, dropped as cancelled, refused, abandoned): no longer
        outstanding at its instance."""
        attempt.phase = _FINISHED
        if attempt.instance is not None:
            attempt.instance.outstanding -= 1

    def own_done(self, t: float, attempt: _Attempt) -> None:
        if attempt.cancelled:  # given up on while it worked: the work is wasted, the worker freed
            self.gone(attempt)
            self.bbr_done(t, attempt)
            self.release(t, attempt)
            return
        p = self.failures.get(attempt.service.name, 0.0)
        if p > 0.0 and self.rng.random() < p:
            attempt.origin = attempt.service.name
            self.finish(t, attempt, False)
            return
        plan: list[list[tuple[CallSpec, int]]] = []
        for declared, stage in enumerate(attempt.service.stages):
            drawn: list[tuple[CallSpec, int]] = []
            for call, copies in stage:
                if call.probability is not None and not self.rng.random() < call.probability:
                    continue
                drawn.append((call, copies))
            if drawn:
                plan.append(drawn)
                attempt.plan_stages.append(declared)
        attempt.plan = plan
        attempt.phase = _CALLING
        if attempt.service.spec.asynchronous:
            self.release(t, attempt)
        self.next_stage(t, attempt)

    def next_stage(self, t: float, attempt: _Attempt) -> None:
        if t >= attempt.deadline:  # the budget ran out during the last stage: abandoned (an answer now is late)
            attempt.origin = attempt.service.name
            self.finish(t, attempt, False)
            return
        if attempt.stage == len(attempt.plan):
            self.finish(t, attempt, True)
            return
        stage = attempt.plan[attempt.stage]
        attempt.calls = [_Call(attempt, call, self.services[call.to]) for call, copies in stage for _ in range(copies)]
        for call in list(attempt.calls):
            if attempt.phase != _CALLING:
                break  # a copy failed at once (no budget left) and failed the attempt
            self.send(t, call, hedge=False)

    def finish(self, t: float, attempt: _Attempt, ok: bool, counted: bool = True, overloaded: bool = False) -> None:
        """The attempt's answer: released, its outstanding calls cancelled, the answer sent back (``overloaded``:
        an error saying it was refused for overload, which a breaker counts as accepted)."""
        if attempt.phase == _FINISHED:
            return
        self.gone(attempt)
        self.bbr_done(t, attempt)
        if attempt.measured and counted:
            counts = attempt.service.counts
            if ok:
                counts.succeeded += 1
                counts.latencies.append(t - attempt.arrived)
            else:
                counts.failed += 1
        self.cancel_calls(t, attempt)
        self.release(t, attempt)
        if attempt.copy is None:
            if t <= attempt.deadline:
                self.answer(t, attempt, ok, attempt.origin)
            return
        self.push(t + attempt.copy.call.spec.network_ms, _REPLY, (attempt.copy, ok, ok or overloaded))

    def cancel(self, t: float, attempt: _Attempt) -> None:
        """The caller gave up (or another copy won): a queued or in-flight attempt is dropped when it is reached,
        one at work stops when its work ends, one waiting on calls stops now and cancels them."""
        if attempt.cancelled or attempt.phase == _FINISHED:
            return
        attempt.cancelled = True
        if attempt.phase == _CALLING:
            self.gone(attempt)
            if attempt.measured:
                attempt.service.counts.cancelled += 1
            self.bbr_done(t, attempt)
            self.cancel_calls(t, attempt)
            self.release(t, attempt)
        elif attempt.phase == _WORKING and attempt.measured:
            attempt.service.counts.cancelled += 1

    def cancel_copy(self, t: float, copy: _Copy) -> None:
        """The caller gives up on a copy: the cancellation travels the call's network to the callee."""
        if copy.attempt is not None:
            self.push(t + copy.call.spec.network_ms, _CANCEL, copy.attempt)

    def cancel_calls(self, t: float, attempt: _Attempt) -> None:
        for call in attempt.calls:
            if not call.done:
                call.done = True
                for copy in call.copies:
                    if copy.alive:
                        copy.alive = False
                        self.breaker_mark(t, attempt.service, call.callee, accepted=True)
                        self.cancel_copy(t, copy)

    # --- a call ------------------------------------------------------------------------------------------------

    def send(self, t: float, call: _Call, hedge: bool) -> None:
        parent = call.parent
        caller = parent.service
        if t >= parent.deadline:
            call.origin = caller.name
            self.call_failed(t, call)
            return
        callee = call.callee
        if caller.spec.breaker is not None and self.breaker_rejects(t, caller, callee):
            if parent.measured:
                caller.counts.rejected += 1
            self.breaker_mark(t, caller, callee, accepted=False)
            if hedge:
                return
            second = int(t // 1000.0)
            caller.sent[second] = caller.sent.get(second, 0) + 1
            call.try_no += 1
            call.hedged = False
            call.origin = callee.name
            self.copy_failed(t, call)  # no copy of this try is alive: retried, or the call fails
            return
        deadline = parent.deadline if self.propagation else math.inf
        if callee.spec.timeout_ms is not None:
            deadline = min(deadline, t + callee.spec.timeout_ms)
        copy = _Copy(call, t, hedge)
        call.copies.append(copy)
        if hedge:
            call.hedged = True
            if parent.measured:
                caller.counts.hedges += 1
        else:
            second = int(t // 1000.0)
            caller.sent[second] = caller.sent.get(second, 0) + 1
            call.try_no += 1
            call.hedged = False
            if caller.spec.hedge_after_quantile is not None:
                self.push(t + self.hedge_ms(caller.spec.hedge_after_quantile, call), _HEDGE, (call, call.try_no))
        attempt = _Attempt(callee, parent.root, parent.measured, deadline, copy)
        copy.attempt = attempt
        self.push(t + call.spec.network_ms, _REACH, attempt)
        if deadline < math.inf:  # a call without a deadline (no timeout, nothing propagated) waits for its answer
            self.push(deadline, _TIMER, copy)

    # --- BBR ----------------------------------------------------------------------------------------------------

    @staticmethod
    def cpu_samples(t: float, service: _Service) -> None:
        cpu = service.cpu
        while cpu["next_ms"] <= t:
            reading = 1000.0 * cpu["work_ms"] / (service.spec.workers * 500.0)
            if reading > 0.0:
                cpu["last"] = reading
            cpu["estimate"] = 0.95 * cpu["estimate"] + 0.05 * cpu["last"]
            cpu["work_ms"] = 0.0
            cpu["next_ms"] += 500.0

    @staticmethod
    def bbr_done(t: float, attempt: _Attempt) -> None:
        service = attempt.service
        if service.spec.limiter != "bbr" or attempt.started is None:
            return
        bucket = service.bbr.setdefault(int(t // 100.0), [0, 0])
        bucket[0] += 1
        bucket[1] += max(0, math.ceil(t - attempt.started))

    def bbr_sheds(self, t: float, service: _Service) -> bool:
        self.cpu_samples(t, service)
        in_flight = len(service.holders) + sum(len(instance.queue) for instance in service.instances)
        now = int(t // 100.0)
        for old in [k for k in service.bbr if k <= now - 100]:
            del service.bbr[old]
        window = [counts for k, counts in service.bbr.items() if now - 99 <= k < now]
        max_pass = max((n for n, _ in window), default=0)
        min_rt = min((math.ceil(rt / n) for n, rt in window if n > 0), default=1)
        cap = math.floor(max_pass * max(min_rt, 1) * 10 / 1000) if max_pass > 0 else 0
        over = in_flight > 1 and in_flight > cap
        if service.cpu["estimate"] < 800.0:
            if service.drop_at is None:
                return False
            if t - service.drop_at <= 1000.0:
                return over
            service.drop_at = None
            return False
        if over and service.drop_at is None:
            service.drop_at = t
        return over

    def breaker_window(self, t: float, caller: _Service, callee: _Service) -> tuple[int, dict[int, list[int]]]:
        assert caller.spec.breaker is not None
        bucket_ms = caller.spec.breaker.window_s * 1000.0 / 10.0
        now = int(t / bucket_ms)
        buckets = caller.breakers.setdefault(callee.name, {})
        for old in [k for k in buckets if k <= now - 10]:
            del buckets[old]
        return now, buckets

    def breaker_mark(self, t: float, caller: _Service, callee: _Service, accepted: bool) -> None:
        if caller.spec.breaker is None:
            return
        now, buckets = self.breaker_window(t, caller, callee)
        counts = buckets.setdefault(now, [0, 0])
        counts[0] += 1
        counts[1] += 1 if accepted else 0

    def breaker_rejects(self, t: float, caller: _Service, callee: _Service) -> bool:
        spec = caller.spec.breaker
        assert spec is not None
        _, buckets = self.breaker_window(t, caller, callee)
        requests = sum(n for n, _ in buckets.values())
        accepts = sum(ok for _, ok in buckets.values())
        drop = max(0.0, (requests - spec.k * accepts) / (requests + 1.0))
        return requests >= spec.min_requests and drop > 0.0 and self.rng.random() < drop

    def hedge_ms(self, q: float, call: _Call) -> float:
        callee = call.callee
        if self.hedge_declared or len(callee.seen) < HEDGE_MIN_SEEN:
            return 2.0 * call.spec.network_ms + service_quantile_ms(callee.spec, q)
        if callee.seen_count - callee.quantile_at >= HEDGE_REFRESH:
            callee.quantile_cache.clear()
            callee.quantile_at = callee.seen_count
        if q not in callee.quantile_cache:
            callee.quantile_cache[q] = float(np.quantile(np.fromiter(callee.seen, float), q))
        return callee.quantile_cache[q]

    def hedge(self, t: float, item: tuple[_Call, int]) -> None:
        call, try_no = item
        if call.done or call.try_no != try_no or call.hedged or not any(c.alive for c in call.copies):
            return
        self.send(t, call, hedge=True)

    def timer(self, t: float, copy: _Copy) -> None:
        if not copy.alive:
            return
        copy.alive = False
        if copy.call.parent.measured:
            copy.call.parent.service.counts.timeouts += 1
        self.breaker_mark(t, copy.call.parent.service, copy.call.callee, accepted=False)
        assert copy.attempt is not None
        copy.call.origin = self.waited_on(copy.attempt)
        self.cancel_copy(t, copy)
        self.copy_failed(t, copy.call)

    def reply(self, t: float, item: tuple[_Copy, bool, bool]) -> None:
        copy, ok, accepted = item
        if not copy.alive:
            return  # given up on already (its deadline, or another copy won)
        copy.alive = False
        call = copy.call
        self.breaker_mark(t, call.parent.service, call.callee, accepted=accepted)
        if not ok:
            assert copy.attempt is not None
            call.origin = copy.attempt.origin or call.callee.name
            self.copy_failed(t, call)
            return
        if not copy.hedge:
            self.seen(call.callee, t - copy.sent)
        if call.done:
            return
        call.done = True
        for other in call.copies:
            if other.alive:
                other.alive = False
                if not other.hedge:  # a first copy its hedge beat: seen as at least this long (see seen)
                    self.seen(call.callee, t - other.sent)
                self.breaker_mark(t, call.parent.service, call.callee, accepted=True)
                self.cancel_copy(t, other)
        parent = call.parent
        if parent.phase != _CALLING:
            return
        if all(c.done for c in parent.calls):
            parent.stage += 1
            self.next_stage(t, parent)

    @staticmethod
    def seen(callee: _Service, ms: float) -> None:
        """A first copy's latency as its caller saw it: to its answer, or, when its hedge answered first, to that
        moment (a lower bound). Censored so, the record still has the callee's true q-quantile at the fixed point:
        only values past the hedge delay are cut short, and a delay below the quantile leaves more than 1 − q of
        the record above it, which raises the delay (recording the winners instead would feed back and hedge
        ever more)."""
        callee.seen.append(ms)
        callee.seen_count += 1

    def copy_failed(self, t: float, call: _Call) -> None:
        if call.done or any(c.alive for c in call.copies):
            return  # another copy of this try may still answer
        caller = call.parent.service
        spec = caller.spec
        second = int(t // 1000.0)
        recent = range(second - BUDGET_WINDOW_S + 1, second + 1)
        sent = sum(caller.sent.get(k, 0) for k in recent)
        retried = sum(caller.sent_retries.get(k, 0) for k in recent)
        budget_ok = retried + 1 <= spec.retry_budget * (sent + 1)
        if call.retries < spec.retries and budget_ok and t < call.parent.deadline:
            call.retries += 1
            caller.sent_retries[second] = caller.sent_retries.get(second, 0) + 1
            if call.parent.measured:
                caller.counts.retries += 1
            self.send(t, call, hedge=False)
            return
        self.call_failed(t, call)

    def call_failed(self, t: float, call: _Call) -> None:
        call.done = True
        parent = call.parent
        if parent.phase == _CALLING:
            parent.origin = call.origin or parent.service.name
            self.finish(t, parent, False)

    # --- where a failure began ---------------------------------------------------------------------------------

    def wait_began(self, service: _Service) -> str:
        """Where a wait for a worker at ``service`` began: its held workers counted one by one by the declared
        stage whose calls they wait on; more than half of them on one stage pass the question on to its first
        call's callee, else it began at the service."""
        while True:
            waiting = [0] * len(service.stages)
            for held in service.holders:
                if held.phase == _CALLING:
                    waiting[held.plan_stages[held.stage]] += 1
            most = max(waiting, default=0)
            if 2 * most <= len(service.holders):
                return service.name
            service = self.services[service.stages[waiting.index(most)][0][0].to]

    def waited_on(self, attempt: _Attempt) -> str:
        """Where a wait for ``attempt`` that ran out began: the deepest service still working on it."""
        while True:
            if attempt.phase == _WAITING:
                return self.wait_began(attempt.service)
            if attempt.phase == _WORKING:
                return attempt.service.name
            if attempt.phase == _FINISHED:
                return attempt.origin or attempt.service.name
            below = next(
                (copy.attempt for call in attempt.calls if not call.done for copy in call.copies if copy.alive),
                None,
            )
            if below is None:
                return attempt.service.name
            attempt = below

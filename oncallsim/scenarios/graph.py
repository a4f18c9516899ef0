"""A chain of services declared in a scenario file (``[graph]``, issue 24): services, the calls between them,
their timeouts, retries and hedging, and the entry's deadline.

The declaration is checked here, strictly, so that a file that cannot mean anything is refused with one line
naming the field: unknown keys, a call to a service that is not declared, a cycle (its path named), a service no
call reaches from the entry, an entry that is not declared, and a deadline no request can meet (the least time a
request takes at the mean service times, network included, is longer). Declarations that are legal but work
against each other (a callee allowed longer than its caller) are not refused: ``contradictions`` lists them, for
the debrief to show.

The request engine plays a graph from the layout ``layout_of`` builds (``oncallsim.model.chain``: numbers in
arrays, times in seconds); ``oncallsim.verify.chains`` simulates one separately (the oracle the engine is checked
against). docs/graphs.md is the format's reference.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from oncallsim.model.chain.layout import (
    BALANCERS,
    DIST_CONSTANT,
    DIST_EXPONENTIAL,
    DIST_LOGNORMAL,
    CallLayout,
    ChainLayout,
    ServiceLayout,
)

__all__ = [
    "CONTRADICTION_TEXTS",
    "BreakerSpec",
    "CallSpec",
    "GraphSpec",
    "ServiceSpec",
    "contradiction_parts",
    "contradictions",
    "layout_of",
    "least_time_ms",
    "service_quantile_ms",
    "stages",
]


MAX_SERVICES = 50
MAX_CALLS = 50  # per service
MAX_MS = 600_000.0  # ten minutes: any longer time in a request's path is a typo


class Strict(BaseModel):
    # as spec.py's models (which import this module): unknown keys refused, no coercion, no nan or inf
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


ServiceName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_-]{0,39}$")]


def _refusal(model: str, loc: tuple[str | int, ...], message: str, value: Any) -> ValidationError:
    """A refusal of the field at ``loc`` below the model being checked (a check across fields, which pydantic
    would place at the model itself). Raised from a model's validator, pydantic puts the model's own place in
    front, so the line names the full dotted path (``graph.services.orders.calls.0.to``), as its own do."""
    error = PydanticCustomError("value_error", "{message}", {"message": message})
    return ValidationError.from_exception_data(model, [InitErrorDetails(type=error, loc=loc, input=value)])


class CallSpec(Strict):
    """One call a service makes while it serves a request: to ``to``, ``count`` copies of it (1 when neither
    ``count`` nor ``probability`` is given) or one copy with probability ``probability``; ``sequential`` copies
    one after another, ``parallel`` ones all at once (consecutive parallel calls go out together). Each copy
    travels ``network_ms`` to the callee and ``network_ms`` back."""

    to: ServiceName
    mode: Literal["sequential", "parallel"] = "sequential"
    count: int | None = Field(default=None, ge=1, le=1000, description="copies per request (default 1)")
    probability: float | None = Field(default=None, gt=0.0, le=1.0, description="or: made with this probability")
    network_ms: float = Field(default=0.0, ge=0.0, le=MAX_MS, description="one way, added there and back")

    @model_validator(mode="after")
    def _count_or_probability(self) -> CallSpec:
        if self.count is not None and self.probability is not None:
            raise ValueError("give count (copies per request) or probability (made or not), not both")
        return self

    @property
    def copies(self) -> int:
        """The copies a request makes for sure (0 when the call is made only with a probability below 1)."""
        if self.probability is not None:
            return 1 if self.probability == 1.0 else 0
        return self.count if self.count is not None else 1


class BreakerSpec(Strict):
    """A service's breaker on the calls it makes (one per callee): Google SRE's adaptive throttling, as Kratos's
    sre breaker. Over the last ``window_s`` (10 buckets), once it has ``min_requests`` requests and more than
    ``k`` × the accepted ones, it rejects a call itself with probability (requests − k·accepts)/(requests + 1)."""

    k: float = Field(default=2.0, ge=1.0, le=10.0, description="requests allowed per accepted one before rejecting")
    window_s: float = Field(default=3.0, ge=0.1, le=60.0, description="the rolling window, in 10 buckets")
    min_requests: int = Field(default=20, ge=0, le=100_000, description="below this many in the window: no rejection")


class ServiceSpec(Strict):
    """One service: its fleet (instances × workers, one queue or, with a ``balancer``, a queue per instance), its
    own work per request, and its policy on the calls it makes (``retries`` with a ``retry_budget``, hedging);
    ``timeout_ms`` is how long a caller waits for one attempt of a call into it (for the entry: the client)."""

    instances: int = Field(default=1, ge=1, le=1000)
    workers_per_instance: int = Field(default=1, ge=1, le=1000)
    service_ms: float = Field(ge=0.0, le=MAX_MS, description="the mean of the service's own work per request")
    distribution: Literal["exponential", "lognormal", "constant"] = "exponential"
    sigma: float | None = Field(default=None, gt=0.0, le=4.0, description="lognormal: the log's standard deviation")
    asynchronous: bool = Field(default=False, description="false: a worker is held while the service waits on calls")
    timeout_ms: float | None = Field(default=None, gt=0.0, le=MAX_MS, description="per attempt of a call into it")
    retries: int = Field(default=0, ge=0, le=5, description="retries of each failed call this service makes")
    retry_budget: float = Field(
        default=1.0, ge=0.0, le=1.0, description="the most of this service's calls that may be retries (1: no cap)"
    )
    hedge_after_quantile: float | None = Field(
        default=None, ge=0.5, le=0.999, description="a second copy of a call unanswered past this quantile"
    )
    calls: list[CallSpec] = Field(default_factory=list, max_length=MAX_CALLS)
    breaker: BreakerSpec | None = Field(default=None, description="adaptive throttling on its calls, per callee")
    limiter: Literal["off", "bbr"] = Field(
        default="off", description="bbr: Kratos's BBR limiter sheds arrivals past its capacity while its CPU is high"
    )
    discipline: Literal["fifo", "lifo"] = Field(
        default="fifo", description="which waiting request a free worker takes: the oldest (fifo) or the newest"
    )
    max_queue: int | None = Field(
        default=None,
        ge=1,
        le=1_000_000,
        description="the most requests waiting for its workers (balanced: at each instance); one more is refused",
    )
    balancer: Literal["pooled", "random", "round-robin", "least-outstanding"] = Field(
        default="pooled",
        description="pooled: one queue for all its workers; else a queue per instance, chosen at random, in turn, "
        "or with the fewest requests outstanding",
    )

    @model_validator(mode="after")
    def _distribution_fits(self) -> ServiceSpec:
        if (self.sigma is not None) != (self.distribution == "lognormal"):
            message = 'sigma is given with distribution = "lognormal" and only then'
            raise _refusal("ServiceSpec", ("sigma",), message, self.sigma)
        if self.service_ms == 0.0 and self.distribution != "constant":
            message = f'must be above 0 unless distribution = "constant" (here {self.distribution})'
            raise _refusal("ServiceSpec", ("service_ms",), message, self.service_ms)
        return self

    @property
    def workers(self) -> int:
        return self.instances * self.workers_per_instance


class GraphSpec(Strict):
    """``[graph]``: the services by name, the ``entry`` the clients call and their ``deadline_ms``."""

    entry: ServiceName
    deadline_ms: float = Field(gt=0.0, le=MAX_MS, description="the clients' deadline, carried down every call")
    deadline_propagation: bool = Field(
        default=True,
        description="true: each call carries what is left of the clients' deadline, and a client that gives up "
        "cancels its request; false: a call's only deadline is its callee's timeout_ms, and the entry works on "
        "for a client that has gone",
    )
    services: dict[ServiceName, ServiceSpec] = Field(min_length=1, max_length=MAX_SERVICES)

    @model_validator(mode="after")
    def _a_graph_that_can_run(self) -> GraphSpec:
        names = list(self.services)
        if self.entry not in self.services:
            message = f"{self.entry!r} is not a declared service; declared: {', '.join(names)}"
            raise _refusal("GraphSpec", ("entry",), message, self.entry)
        for name, service in self.services.items():
            for i, call in enumerate(service.calls):
                if call.to not in self.services:
                    message = f"unknown service {call.to!r}; declared: {', '.join(names)}"
                    raise _refusal("GraphSpec", ("services", name, "calls", i, "to"), message, call.to)
        cycle = _a_cycle(self)
        if cycle:
            message = f"a cycle, {' → '.join(cycle)} (calls must not loop back)"
            raise _refusal("GraphSpec", ("services", cycle[-2], "calls"), message, cycle)
        reached = _reachable(self)
        for name in names:
            if name not in reached:
                message = f"not reachable from the entry {self.entry!r} (no call leads to it)"
                raise _refusal("GraphSpec", ("services", name), message, name)
        least, path = least_time_ms(self)
        if least > self.deadline_ms:
            message = (
                f"{self.deadline_ms:g} ms is less than the least a request takes at the mean service times with the "
                f"network, {least:g} ms along {' → '.join(path)}: no request could meet it"
            )
            raise _refusal("GraphSpec", ("deadline_ms",), message, self.deadline_ms)
        return self

    def callers(self, name: str) -> list[str]:
        """The services that call ``name``, in declaration order."""
        return [s for s, spec in self.services.items() if any(c.to == name for c in spec.calls)]

    def leaves(self) -> list[str]:
        """The services that call nothing."""
        return [s for s, spec in self.services.items() if not spec.calls]


def _a_cycle(graph: GraphSpec) -> list[str]:
    """A cycle's path (its first service again at the end), or [] when the calls form no loop."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(name: str) -> list[str]:
        state[name] = 1
        path.append(name)
        for call in graph.services[name].calls:
            if state.get(call.to) == 1:
                return [*path[path.index(call.to) :], call.to]
            if call.to not in state:
                found = visit(call.to)
                if found:
                    return found
        path.pop()
        state[name] = 2
        return []

    for name in [graph.entry, *graph.services]:
        if name not in state:
            found = visit(name)
            if found:
                return found
    return []


def _reachable(graph: GraphSpec) -> set[str]:
    seen = {graph.entry}
    todo = [graph.entry]
    while todo:
        for call in graph.services[todo.pop()].calls:
            if call.to not in seen:
                seen.add(call.to)
                todo.append(call.to)
    return seen


def stages(service: ServiceSpec) -> list[list[tuple[CallSpec, int]]]:
    """The service's calls as they go out, each stage a list of (call, copies): a sequential call's copies one
    stage each, consecutive parallel calls together in one stage with all their copies. A call made with a
    probability is one copy, made or not per request (whoever follows the stages draws it)."""
    out: list[list[tuple[CallSpec, int]]] = []
    parallel = False
    for call in service.calls:
        copies = call.count if call.count is not None else 1
        if call.mode == "parallel":
            if not parallel:
                out.append([])
            out[-1].append((call, copies))
            parallel = True
        else:
            out.extend([(call, 1)] for _ in range(copies))
            parallel = False
    return out


def least_time_ms(graph: GraphSpec, name: str | None = None) -> tuple[float, list[str]]:
    """The least time a request at ``name`` (default: the entry) takes at the mean service times: its own work,
    then each stage of the calls it always makes (a count, or probability 1) one after another, a stage as long
    as its slowest copy (the network there and back and the callee's least time); calls made with a probability
    below 1 may be skipped. Returns the time and the path that sets it (the critical path). The graph must be
    acyclic (the validator checks that first)."""
    memo: dict[str, tuple[float, list[str]]] = {}

    def least(service_name: str) -> tuple[float, list[str]]:
        if service_name in memo:
            return memo[service_name]
        spec = graph.services[service_name]
        total, path, longest = spec.service_ms, [service_name], 0.0
        for stage in stages(spec):
            slowest, slowest_path = 0.0, [service_name]
            for call, _copies in stage:
                if call.copies == 0:  # made only with a probability below 1: a request may skip it
                    continue
                below, below_path = least(call.to)
                hop = 2.0 * call.network_ms + below
                if hop >= slowest:
                    slowest, slowest_path = hop, [service_name, *below_path]
            total += slowest
            if slowest > longest:
                longest, path = slowest, slowest_path
        memo[service_name] = (total, path)
        return memo[service_name]

    return least(graph.entry if name is None else name)


# A contradiction's line, a template and its arguments (the debrief translates it; ``contradictions`` fills it in
# English). The arguments are the names and numbers as written (``:g``), the field by its dotted path.
CONTRADICTION_TEXTS = {
    "too_short": "%(field)s: %(timeout)s ms is less than an attempt at %(service)s takes at the mean service times "
    "with the network, %(least)s ms along %(path)s: most attempts time out",
    "past_deadline": "%(field)s: %(timeout)s ms is longer than the entry's deadline (%(deadline)s ms): the deadline "
    "cuts every attempt short first",
    "longer_than_caller": "%(field)s: %(timeout)s ms is longer than its caller %(caller)s's (%(caller_timeout)s ms): "
    "%(caller)s gives up first and %(service)s works on for nobody",
    "retries": "%(field)s: %(attempts)s attempts at %(service)s's timeout of %(timeout)s ms take up to %(total)s ms, "
    "longer than %(caller)s's own %(caller_timeout)s ms: the last retries cannot finish in time",
}


def contradictions(graph: GraphSpec) -> list[str]:
    """Declarations that are allowed but work against each other, one line each (for the debrief to show): a
    callee's timeout longer than its caller's (the caller gives up first and the callee works on for nobody) or
    than the entry's deadline, a timeout shorter than the service's least time at the mean service times (most
    attempts time out), and retries whose attempts cannot all fit in the caller's own timeout."""
    return [template % args for template, args in contradiction_parts(graph)]


def contradiction_parts(graph: GraphSpec) -> list[tuple[str, dict[str, str]]]:
    """``contradictions`` as (template from ``CONTRADICTION_TEXTS``, arguments): what the debrief translates."""
    out: list[tuple[str, dict[str, str]]] = []
    for name, spec in graph.services.items():
        least, path = least_time_ms(graph, name)
        # an attempt's timeout runs from its sending: the network to it and back counts (the nearest caller's)
        least += min((2.0 * c.network_ms for s in graph.services.values() for c in s.calls if c.to == name), default=0)
        field = f"services.{name}.timeout_ms"
        if spec.timeout_ms is not None and spec.timeout_ms < least:
            args = {"field": field, "timeout": f"{spec.timeout_ms:g}", "service": name, "least": f"{least:g}"}
            out.append((CONTRADICTION_TEXTS["too_short"], {**args, "path": " → ".join(path)}))
        if spec.timeout_ms is not None and spec.timeout_ms > graph.deadline_ms:
            args = {"field": field, "timeout": f"{spec.timeout_ms:g}", "deadline": f"{graph.deadline_ms:g}"}
            out.append((CONTRADICTION_TEXTS["past_deadline"], args))
        for caller in graph.callers(name):
            above = graph.services[caller]
            if spec.timeout_ms is None or above.timeout_ms is None:
                continue
            args = {
                "timeout": f"{spec.timeout_ms:g}",
                "service": name,
                "caller": caller,
                "caller_timeout": f"{above.timeout_ms:g}",
            }
            if spec.timeout_ms > above.timeout_ms:
                out.append((CONTRADICTION_TEXTS["longer_than_caller"], {"field": field, **args}))
            elif above.retries and (1 + above.retries) * spec.timeout_ms > above.timeout_ms:
                total = f"{(1 + above.retries) * spec.timeout_ms:g}"
                more = {"field": f"services.{caller}.retries", "attempts": str(1 + above.retries), "total": total}
                out.append((CONTRADICTION_TEXTS["retries"], {**more, **args}))
    return out


def service_quantile_ms(spec: ServiceSpec, q: float) -> float:
    """The q-quantile of the service's own work as declared (the oracle's hedge delay before it has seen enough
    answers): exponential −S·ln(1 − q); lognormal with the mean S, exp(μ + σ·z_q) with μ = ln S − σ²/2."""
    if spec.distribution == "constant":
        return spec.service_ms
    if spec.distribution == "exponential":
        return -spec.service_ms * math.log1p(-q)
    assert spec.sigma is not None
    mu = math.log(spec.service_ms) - spec.sigma**2 / 2.0
    return math.exp(mu + spec.sigma * NormalDist().inv_cdf(q))


_DISTRIBUTIONS = {"exponential": DIST_EXPONENTIAL, "lognormal": DIST_LOGNORMAL, "constant": DIST_CONSTANT}


def layout_of(graph: GraphSpec) -> ChainLayout:
    """The graph as the request engine reads it: services by position (declaration order), times in seconds."""
    names = list(graph.services)
    services = []
    for name, spec in graph.services.items():
        calls = tuple(
            CallLayout(
                to=names.index(call.to),
                copies=call.count if call.count is not None else 1,
                probability=call.probability,
                network_s=call.network_ms / 1000.0,
                parallel=call.mode == "parallel",
            )
            for call in spec.calls
        )
        services.append(
            ServiceLayout(
                name=name,
                instances=spec.instances,
                workers_per_instance=spec.workers_per_instance,
                mean_s=spec.service_ms / 1000.0,
                distribution=_DISTRIBUTIONS[spec.distribution],
                sigma=spec.sigma or 0.0,
                asynchronous=spec.asynchronous,
                timeout_s=None if spec.timeout_ms is None else spec.timeout_ms / 1000.0,
                retries=spec.retries,
                retry_budget=spec.retry_budget,
                hedge_quantile=spec.hedge_after_quantile,
                calls=calls,
                breaker_k=None if spec.breaker is None else spec.breaker.k,
                breaker_window_s=3.0 if spec.breaker is None else spec.breaker.window_s,
                breaker_min=20 if spec.breaker is None else spec.breaker.min_requests,
                max_queue=spec.max_queue,
                bbr=spec.limiter == "bbr",
                lifo=spec.discipline == "lifo",
                balancer=BALANCERS[spec.balancer],
            )
        )
    return ChainLayout(
        tuple(services), names.index(graph.entry), graph.deadline_ms / 1000.0, graph.deadline_propagation
    )

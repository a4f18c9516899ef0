"""The debrief's "Where the failures began" (issue 24; docs/graphs.md): for a chain of services, each service's
share of the clients' failed requests whose failure began there (the request engine counts each failure at its
origin, ``failures_begun_per_s`` in each minute's ``extras["graph"]``) beside where they were seen — every client
failure is seen at the entry, whatever began it — and the graph's contradictions (``scenarios.graph``)."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from oncallsim.model import MinuteRecord
from oncallsim.scenarios.graph import GraphSpec, contradiction_parts

__all__ = ["ORIGIN_TEXTS", "FailureOrigins", "ServiceOrigin", "failure_origins", "origin_parts"]

ORIGIN_TEXTS = {
    "began": "%(share)s of the failed requests (%(budget)s of the error budget) began at %(service)s, though every "
    "failed request was seen at %(entry)s, the service the clients call.",
    "began_at_entry": "%(share)s of the failed requests (%(budget)s of the error budget) began at %(entry)s itself, "
    "the service the clients call.",
}


class ServiceOrigin(BaseModel):
    """One service: the failed client requests whose failure began there, their share of all the failed ones,
    the error budget they burned (that share of what the failed requests burned), and the share seen there
    (the entry's: all of them)."""

    service: str
    failed: int
    share: float
    budget_spent: float
    seen_share: float


class FailureOrigins(BaseModel):
    entry: str
    failed: int
    services: list[ServiceOrigin]
    contradictions: list[tuple[str, dict[str, str]]] = Field(default_factory=list)  # templates and arguments


def failure_origins(
    timeline: Sequence[MinuteRecord], graph: GraphSpec | None, failed_budget: float
) -> FailureOrigins | None:
    """The run's origins, summed over its minutes (None when the run is not a chain). ``failed_budget``: the
    error budget the clients' failed requests burned (the timeouts' and the error answers')."""
    if graph is None:
        return None
    counts: dict[str, float] = {name: 0.0 for name in graph.services}
    for record in timeline:
        services = (record.extras or {}).get("graph", {}).get("services", {})
        for name, measures in services.items():
            if name in counts:
                counts[name] += float(measures.get("failures_begun_per_s", 0.0)) * 60.0
    whole = {name: round(value) for name, value in counts.items()}
    failed = sum(whole.values())
    rows = [
        ServiceOrigin(
            service=name,
            failed=count,
            share=count / failed if failed else 0.0,
            budget_spent=failed_budget * count / failed if failed else 0.0,
            seen_share=(1.0 if failed else 0.0) if name == graph.entry else 0.0,
        )
        for name, count in whole.items()
    ]
    return FailureOrigins(entry=graph.entry, failed=failed, services=rows, contradictions=contradiction_parts(graph))


def origin_parts(origins: FailureOrigins | None) -> list[tuple[str, dict[str, str]]]:
    """The headline's sentence: where most of the failed requests began, and that the entry saw them all."""
    if origins is None or origins.failed == 0:
        return []
    top = max(origins.services, key=lambda row: row.share)  # the first declared on a tie
    args = {"share": f"{top.share:.1%}", "budget": f"{top.budget_spent:.1%}", "entry": origins.entry}
    if top.service == origins.entry:
        return [(ORIGIN_TEXTS["began_at_entry"], args)]
    return [(ORIGIN_TEXTS["began"], {**args, "service": top.service})]

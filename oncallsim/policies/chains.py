"""The textbook operator's playbook for a chain of services (a scenario's ``[graph]``, docs/graphs.md): each of the
three lessons' fixes, applied when its failure shows on the console (the record's ``extras["graph"]``, each
service's minute), once.

- **Retries multiplying** (the deepest service's attempts per entry request at 1.5× or more while requests fail):
  retry at one layer only, with a budget — the retrying caller nearest the failing service keeps its retries with
  a budget of 10 % (the SRE book's per-client rule), every other retrying service stops retrying.
- **A cascade** (the entry's workers all held while requests fail, and deadlines not propagated): propagate the
  deadline, so that each service gives up when its caller's budget is spent instead of waiting for an answer
  nobody reads, and a client's going cancels its request.
- **The tail at scale** (a service fanning out to ten or more copies at once, no hedging, and the clients' p99
  three times their median or more): hedge its calls past the callee's p95.

Only what the console shows is read (the last record's per-service lines), and the graph as the scenario declares
it (who calls whom, who fans out).
"""

from __future__ import annotations

from typing import Any

from oncallsim.simulation import Observation

__all__ = ["ChainPlaybook"]

AMPLIFIED = 1.5  # attempts at the deepest service per entry request: the retries multiply
FAILING = 0.01  # a share of requests failing that calls for a fix
HELD = 0.95  # the entry's workers this busy: held by the calls they wait on
FAN_OUT = 10  # copies at once that make a fan-out
TAIL_RATIO = 3.0  # the clients' p99 over their median: the slowest copy sets the pace
HEDGE_AT = 0.95
RETRY_BUDGET = 0.1


class ChainPlaybook:
    """Per-run memory: the fixes already applied."""

    def __init__(self) -> None:
        self.done: set[str] = set()

    def decide(self, observation: Observation) -> list[tuple[str, Any]]:
        last = observation.last
        graph = observation.scenario.graph
        if last is None or graph is None or not last.extras or "graph" not in last.extras:
            return []
        lines = last.extras["graph"]["services"]
        actions: list[tuple[str, Any]] = []
        if "retries" not in self.done and last.error_rate > FAILING:
            actions += self._one_retrying_layer(graph, lines, last.requests_per_s)
        if "cascade" not in self.done and last.error_rate > FAILING:
            entry = lines[graph.entry]
            if entry["utilization"] >= HELD and not graph.deadline_propagation:
                self.done.add("cascade")
                actions.append(("deadline_propagation", True))
        if "hedge" not in self.done:
            p50 = last.extras.get("p50_ms") or 0.0
            if p50 > 0 and last.p99_ms >= TAIL_RATIO * p50:
                fanning = [
                    name
                    for name, spec in graph.services.items()
                    if spec.hedge_after_quantile is None
                    and any(c.mode == "parallel" and (c.count or 1) >= FAN_OUT for c in spec.calls)
                ]
                if fanning:
                    self.done.add("hedge")
                    actions += [(f"{name}.hedge_after_quantile", HEDGE_AT) for name in fanning]
        return actions

    def _one_retrying_layer(self, graph: Any, lines: dict[str, Any], requests_per_s: float) -> list[tuple[str, Any]]:
        depth = _depths(graph)
        deepest = max(depth, key=lambda name: (depth[name], name))
        if requests_per_s <= 0 or lines[deepest]["attempts_per_s"] / requests_per_s < AMPLIFIED:
            return []
        retrying = [name for name, spec in graph.services.items() if spec.retries > 0]
        if len(retrying) < 1:
            return []
        keep = max(retrying, key=lambda name: (depth[name], name))
        self.done.add("retries")
        actions: list[tuple[str, Any]] = [(f"{name}.retries", 0) for name in retrying if name != keep]
        if graph.services[keep].retry_budget > RETRY_BUDGET:
            actions.append((f"{keep}.retry_budget", RETRY_BUDGET))
        return actions


def _depths(graph: Any) -> dict[str, int]:
    """Each service's longest distance from the entry in calls (the graph has no cycle)."""
    depth = {graph.entry: 0}
    order = [graph.entry]
    for name in order:
        for call in graph.services[name].calls:
            if depth.get(call.to, -1) < depth[name] + 1:
                depth[call.to] = depth[name] + 1
                order.append(call.to)
    return depth

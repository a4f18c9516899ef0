"""The debrief's numbers: pure functions of a timeline (plus the plan, parameters and the action log).

Budget spent per minute = error rate / error budget / budget period, so the per-cause shares of the
record add up to the budget spent, and so do the phases.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel

from oncallsim.debrief.accumulate import OutcomeAccumulator, scenario_incident_start
from oncallsim.debrief.incident import incident_start, recovery_minute
from oncallsim.model import CONTROL_SPECS, MinuteRecord, Params, RunPlan
from oncallsim.simulation import Action

__all__ = ["CostSplit", "Decision", "Outcome", "Phase", "cost_split", "decisions", "outcome", "phases"]

CAUSES = ("overload", "timeout", "bad_build", "dead_instance")
# The request engine's overload errors by what turned them away, from its extras (req/s): the client's own
# throttling, an instance's concurrency limiter, a queue that dropped them (CoDel, adaptive LIFO, a full queue).
OVERLOAD_SPLIT = {"throttled": "throttled_per_s", "limited": "limited_per_s", "dropped": "dropped_per_s"}
EFFECT_BEFORE_MIN = 5
EFFECT_AFTER_MIN = 10


class Outcome(BaseModel):
    """The numbers every run is compared on (the player's, and each counterfactual's)."""

    budget_spent: float
    budget_spent_by_cause: dict[str, float]
    budget_left: float
    cost: float
    worst_p99_ms: float
    minutes_over_latency_target: int
    shed_requests: float
    requests: float = 0.0  # every request that arrived (a summary stored before it was counted: 0)
    turned_away_share: float = 0.0  # the users turned away: shed requests / requests
    mean_staleness_s: float
    max_db_utilization: float
    minutes_db_over_capacity: int
    page_minute: int | None
    incident_minute: int | None
    time_to_first_mitigation_min: int | None
    time_to_recovery_min: int | None
    p99_within_share: dict[str, float]
    # request-engine runs only (None on the minute engine): the attempts each admitted request took (1 without
    # retries) and the share of the service time spent on requests whose client had given up
    attempts_per_request: float | None = None
    wasted_work_share: float | None = None


def budget_per_minute(record: MinuteRecord, params: Params) -> float:
    return record.error_rate / params.error_budget / params.budget_period_min


def outcome(
    timeline: Sequence[MinuteRecord],
    plan: RunPlan,
    params: Params,
    actions: Sequence[Action],
    latency_target_ms: float,
    p99_targets: Sequence[float] = (),
) -> Outcome:
    """One run's outcome, through the same accumulator the batch engine uses."""
    acc = OutcomeAccumulator(1, params, np.array([plan.budget_start]), latency_target_ms, p99_targets)
    acc.add_records(timeline)
    start = scenario_incident_start(plan, len(timeline))
    found = acc.finish([start], [[a.minute for a in actions]])[0]
    if timeline and timeline[0].engine == "request":
        found["budget_spent_by_cause"] = split_overload(found["budget_spent_by_cause"], timeline, params)
        found.update(attempts_and_waste(timeline))
    return Outcome(**found)


def split_overload(by_cause: dict[str, float], timeline: Sequence[MinuteRecord], params: Params) -> dict[str, float]:
    """The budget spent on overload split by what turned the requests away (``OVERLOAD_SPLIT``), plain overload
    (the minute's other rejections) keeping the rest: so the causes still add up to the budget spent.

    A minute's share of each is its rate over the minute's requests (the record's ``error_overload`` is already
    such a share: rejections over the requests decided); where the shares exceed ``error_overload`` (a minute
    whose requests are not all decided within it) they are scaled down to it."""
    scale = 1.0 / params.error_budget / params.budget_period_min
    spent = dict.fromkeys(OVERLOAD_SPLIT, 0.0)
    for r in timeline:
        if r.requests_per_s <= 0 or r.error_overload <= 0:
            continue
        shares = {c: max(0.0, r.extra(f) or 0.0) / r.requests_per_s for c, f in OVERLOAD_SPLIT.items()}
        total = sum(shares.values())
        fit = min(1.0, r.error_overload / total) if total > 0 else 0.0
        for cause, share in shares.items():
            spent[cause] += share * fit * scale
    out: dict[str, float] = {}
    for cause, value in by_cause.items():
        if cause == "overload":
            out[cause] = max(0.0, value - sum(spent.values()))
            out.update(spent)
        else:
            out[cause] = value
    return out


def attempts_and_waste(timeline: Sequence[MinuteRecord]) -> dict[str, float]:
    """Attempts per admitted request over the run (its extras' ``attempts_per_s``; 1 per request while the
    engine does not send it) and the share of the workers' busy time wasted on requests whose client had given up.

    A minute's wasted seconds are its ``wasted_work_share`` × its completions × their mean service time (the
    engine's share is over completed service, while the work deadline propagation abandons half-done is wasted
    without completing, so that share can pass 1); its busy seconds are utilization × workers × 60 s — a chain's,
    every service's workers' (its record's graph: the minute model's fleet is its entry alone)."""
    attempts = admitted = wasted = busy = 0.0
    for r in timeline:
        sent = r.extra("attempts_per_s")
        admitted += r.admitted_per_s
        attempts += sent if sent is not None else r.admitted_per_s
        wasted += wasted_seconds(r)
        graph = r.extras.get("graph") if isinstance(r.extras, dict) else None
        if isinstance(graph, dict):
            busy += sum(service.get("busy_s", 0.0) for service in graph["services"].values())
        else:
            busy += r.utilization * r.servers * 60.0
    return {
        "attempts_per_request": attempts / admitted if admitted > 0 else 1.0,
        "wasted_work_share": min(1.0, wasted / busy) if busy > 0 else 0.0,
    }


def wasted_seconds(r: MinuteRecord) -> float:
    """The worker-seconds a minute spent on requests whose client had given up (request engine): the engine
    counts them (``wasted_work_s``), answered or cut short by a deadline."""
    return r.extra("wasted_work_s") or 0.0


def first_mitigation(actions: Sequence[Action], start: int | None) -> int | None:
    """The first operator action at or after the incident's start."""
    if start is None:
        return None
    return next((a.minute for a in actions if a.minute >= start), None)


class Phase(BaseModel):
    name: str
    start_minute: int
    end_minute: int
    budget_spent: float


# The phases a run is cut into (their names are the translation catalog's message ids too).
PHASE_NAMES = (
    "before the incident",
    "incident, before any action",
    "incident",
    "after the first action, until recovery",
    "after recovery",
    "the whole run",
)
BEFORE, INCIDENT_UNMITIGATED, INCIDENT, MITIGATED, RECOVERED, WHOLE_RUN = PHASE_NAMES


def phases(timeline: Sequence[MinuteRecord], plan: RunPlan, params: Params, actions: Sequence[Action]) -> list[Phase]:
    """The run cut at the incident, the first mitigation and the recovery; budget spent in each."""
    start = incident_start(plan, timeline)
    end = len(timeline)
    if start is None:
        cuts = [(0, WHOLE_RUN)]
    else:
        mitigation = first_mitigation(actions, start)
        recovered = recovery_minute(timeline, start, params)
        cuts = [(0, BEFORE), (start, INCIDENT_UNMITIGATED if mitigation else INCIDENT)]
        if mitigation is not None and (recovered is None or mitigation < recovered):
            cuts.append((mitigation, MITIGATED))
        if recovered is not None:
            cuts.append((recovered, RECOVERED))
    out: list[Phase] = []
    for i, (begin, name) in enumerate(cuts):
        stop = cuts[i + 1][0] if i + 1 < len(cuts) else end
        if stop > begin:
            spent = sum(budget_per_minute(r, params) for r in timeline[begin:stop])
            out.append(Phase(name=name, start_minute=begin, end_minute=stop, budget_spent=spent))
    return out


class CostSplit(BaseModel):
    base_fleet: float
    extra_instances: float
    rollback_double_billing: float
    other_services: float = 0.0  # a chain's: every service's instances but the entry's (its fleet is the above)


def cost_split(timeline: Sequence[MinuteRecord], params: Params, chain: bool = False) -> CostSplit:
    """Base = the opening fleet's size; extra = instances above it; rollback = the doubled part of the bill; for
    a ``chain``, the other services' instances: the rest of each minute's bill (chain/engine.py
    ``bill_other_services`` adds them to it), so that the rows add up to the total."""
    if not timeline:
        return CostSplit(base_fleet=0.0, extra_instances=0.0, rollback_double_billing=0.0)
    base_size = timeline[0].serving + timeline[0].booting
    per_instance = params.instance_price_per_hour / 60.0
    base = extra = rollback = other = 0.0
    for r in timeline:
        size = r.serving + r.booting
        base += min(size, base_size) * per_instance
        extra += max(0, size - base_size) * per_instance
        doubled = size * per_instance * (params.rollback_cost_factor - 1.0) if r.rollback_active else 0.0
        rollback += doubled
        if chain:
            other += r.cost_per_hour / 60.0 - size * per_instance - doubled
    return CostSplit(base_fleet=base, extra_instances=extra, rollback_double_billing=rollback, other_services=other)


class Decision(BaseModel):
    """One minute's operator inputs and their measured effect: the means over the 10 minutes from them, with the
    decision (``after``, the run itself) and without it (``without``: the same run forked at that minute and played
    on the same draws without that minute's inputs, ``debrief/effects.py``), so a fix reads as a fix even while
    the incident still grows; ``before`` is the mean over the 5 minutes before."""

    minute: int
    clock: str
    actions: list[str]
    items: list[dict[str, Any]] = []  # each action as {"control", "value"?}: the pages render it translated
    before: dict[str, float]
    after: dict[str, float]
    without: dict[str, float] = {}  # empty: not measured (past MAX_MEASURED_DECISIONS, or a summary from before)


EFFECT_FIELDS = ("error_rate", "p99_ms", "db_utilization", "cache_hit", "cost_per_hour", "serving", "burn_5m")


def decisions(
    timeline: Sequence[MinuteRecord],
    actions: Sequence[Action],
    without: Mapping[int, Sequence[MinuteRecord]] | None = None,
) -> list[Decision]:
    """Every decision with its measured effect: the means over the 10 minutes from it with it (the run) and, where
    ``without`` has that minute's window (the run forked there without the decision), without it; and the mean
    over the 5 minutes before."""
    grouped: dict[int, list[Action]] = {}
    for a in actions:
        grouped.setdefault(a.minute, []).append(a)
    out: list[Decision] = []
    for minute, acts in grouped.items():
        if minute >= len(timeline):
            continue
        before = timeline[max(0, minute - EFFECT_BEFORE_MIN) : minute] or timeline[minute : minute + 1]
        after = timeline[minute : minute + EFFECT_AFTER_MIN]
        out.append(
            Decision(
                minute=minute,
                clock=timeline[minute].clock,
                actions=[describe(a) for a in acts],
                items=[a.to_dict() for a in acts],
                before=_means(before),
                after=_means(after),
                without=_means(without[minute][: len(after)]) if without and without.get(minute) else {},
            )
        )
    return out


def describe(action: Action) -> str:
    """An action as people read it: the control's label and the value with its unit ("Cache TTL = 300 s",
    "Load shedding = 30 %"; ``ControlSpec.value_text``), never the internal name."""
    spec = CONTROL_SPECS.get(action.control)
    value: Any = action.value
    if spec is None:
        if value is None:
            return action.control
        return (
            f"{action.control} = {float(value):g}" if isinstance(value, (int, float)) else f"{action.control} = {value}"
        )
    if value is None:
        return spec.label
    if isinstance(value, bool):
        return f"{spec.label}: {spec.value_text(value)}"
    if spec.kind == "instance":
        return f"{spec.label} {spec.value_text(value)}"
    return f"{spec.label} = {spec.value_text(value)}"


def _means(records: Sequence[MinuteRecord]) -> dict[str, float]:
    return {f: sum(float(getattr(r, f)) for r in records) / len(records) for f in EFFECT_FIELDS}

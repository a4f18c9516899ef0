"""The standard counterfactuals: the same scenario and seed, played hands-off and by the playbook; on the request
engine also the player's own decisions with a mechanism switched on from the start (p2c balancing, and the one
overload mechanism that would have saved the most)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from oncallsim.cliff.change import changes
from oncallsim.cliff.point import record_point
from oncallsim.debrief import Report, make_report
from oncallsim.debrief.cliff import at_risk_span, zones
from oncallsim.debrief.report import run_outcome
from oncallsim.model import CONTROL_SPECS, InvalidInput
from oncallsim.policies.base import load_policy
from oncallsim.simulation import Action, Simulation

__all__ = [
    "COUNTERFACTUAL_POLICIES",
    "MECHANISMS",
    "Mechanism",
    "cliff_replay",
    "counterfactuals",
    "full_report",
    "mechanism_counterfactuals",
    "with_balancer",
    "with_settings",
]

COUNTERFACTUAL_POLICIES = ("hands-off", "textbook")


@dataclass(frozen=True)
class Mechanism:
    """An overload mechanism a request-engine run can be replayed with: the settings that switch it on, and
    whether a run's opening controls already have it."""

    name: str  # the counterfactual's key in the debrief
    settings: Mapping[str, Any]

    def available(self) -> bool:
        """Every control it sets is in this model's registry (a mechanism not built yet is skipped)."""
        return all(c in CONTROL_SPECS and "request" in CONTROL_SPECS[c].engines for c in self.settings)

    def already_on(self, controls: Any) -> bool:
        """The run opened with it: each of its controls at its value (a token bucket is not BBR, a classic breaker
        not adaptive throttling; a retry budget of any size is one)."""
        return all(
            getattr(controls, c, None) == v
            or (isinstance(v, float) and getattr(controls, c, CONTROL_SPECS[c].default) != CONTROL_SPECS[c].default)
            for c, v in self.settings.items()
        )


# The candidates, each switched on from the start with the player's other decisions. A retry budget only
# matters while the clients retry (checked in ``mechanism_counterfactuals``).
MECHANISMS = (
    Mechanism("retry_budget", {"retry_budget": 0.1}),
    Mechanism("limiter", {"limiter": "bbr"}),
    Mechanism("codel", {"queue_discipline": "codel"}),
    Mechanism("deadlines", {"deadline_propagation": True}),
    Mechanism("sre", {"breaker": "sre"}),
)
MAX_MECHANISMS_KEPT = 1
# The order they are replayed in: those that usually end an overload fastest first. Their replays are cheap (a
# recovered fleet serves fewer requests) and what they spent bounds the rest, whose replays stop once they have
# spent more (``_replay``). Ties are still broken in ``MECHANISMS``' order.
TRY_FIRST = ("deadlines", "codel", "retry_budget", "limiter", "sre")


Progress = Callable[[int, int], None]  # (replays done, replays in all): a surface shows how far a debrief is


def counterfactuals(sim: Simulation, progress: Progress | None = None) -> dict[str, Simulation]:
    """Re-runs to the same minute as ``sim`` (cheap: runs are deterministic); on the request engine, when the
    run opened on another balancer, also the player's own decisions with ``p2c`` from the start, and with the
    overload mechanism that saves the most (``mechanism_counterfactuals``). ``progress`` is told after each
    replay how many are done of how many there are (a replay that stops early counts as done).

    The replays run side by side on the machine's cores (``REPLAY_THREADS``): each is its own deterministic run
    and the request engine's compiled minute releases the GIL, so the result is the one a replay after another
    gives, sooner."""
    policies = [name for name in COUNTERFACTUAL_POLICIES if not (name == "hands-off" and not sim.actions)]
    # the one service's mechanisms (p2c, the limiter, …): a chain of services has none of them to switch on
    request = sim.engine.name == "request" and bool(sim.timeline) and sim.plan.graph is None
    with_p2c = request and (sim.timeline[0].extras or {}).get("balancer") != "p2c"
    lesson = lesson_after(sim) if request else None
    candidates = [m for m in _candidates(sim) if m != lesson] if request else []
    cliff = _cliff_change(sim) if request else None
    total = (
        len(policies)
        + (1 if with_p2c else 0)
        + (1 if lesson else 0)
        + len(candidates)
        + (1 if cliff is not None else 0)
    )
    done = [0]
    lock = threading.Lock()

    def replayed() -> None:
        with lock:
            done[0] += 1
            count = done[0]
        if progress is not None:
            progress(count, total)

    def replay(name: str) -> Simulation:
        other = sim.counterfactual(load_policy(name), sim.minute)
        replayed()
        return other

    def balanced() -> Simulation:
        other = with_balancer(sim, "p2c")
        replayed()
        return other

    def the_after(mechanism: Mechanism) -> Simulation:
        other = with_settings(sim, mechanism.settings)
        replayed()
        return other

    def changed() -> Simulation:
        assert cliff is not None
        other = _replay(sim, {cliff[1]: cliff[2]}, None, at=cliff[0])
        assert other is not None  # no bound: it plays to the end
        replayed()
        return other

    with ThreadPoolExecutor(max_workers=REPLAY_THREADS, thread_name_prefix="replay") as pool:
        replays = {name: pool.submit(replay, name) for name in policies}
        p2c = pool.submit(balanced) if with_p2c else None
        after = pool.submit(the_after, lesson) if lesson else None
        cliffed = pool.submit(changed) if cliff is not None else None
        mechanisms = _mechanism_replays(sim, candidates, MAX_MECHANISMS_KEPT, replayed, pool) if request else {}
        out: dict[str, Simulation] = {}
        for name in COUNTERFACTUAL_POLICIES:
            # a run without a decision is its own hands-off replay (runs are deterministic)
            out[name] = replays[name].result() if name in replays else sim
        if p2c is not None:
            out["p2c"] = p2c.result()
        out.update(mechanisms)
        if after is not None and lesson is not None:
            out[lesson.name] = after.result()
        if cliffed is not None:
            out[CLIFF] = cliffed.result()
    return out


CLIFF = "cliff"  # the counterfactual of the map's single change (debrief/cliff.py says what it did)


def _cliff_change(sim: Simulation) -> tuple[int, str, Any] | None:
    """(minute, control, value): the map's change that takes the run back from the cliff soonest, at the first
    minute it stood past it (``cliff.change``); None when it never did, or no single change would."""
    found = at_risk_span(zones(sim.timeline, sim.params))
    if found is None:
        return None
    record = sim.timeline[found[0]]
    point = record_point(record, sim.params)
    if point is None:
        return None
    options = changes(point, int(record.serving), sim.params.boot_delay_min, sim.params.max_fleet)
    return (found[0], options[0].control, options[0].value) if options else None


def cliff_replay(sim: Simulation) -> Simulation | None:
    """The run replayed on the same draws with the map's change from the minute it first stood past the cliff
    and the player's other decisions (None: no such change)."""
    change = _cliff_change(sim)
    return None if change is None else _replay(sim, {change[1]: change[2]}, None, at=change[0])


def lesson_after(sim: Simulation) -> Mechanism | None:
    """The mechanism a lesson's scenario names as its "after" (``Scenario.after``), when the run did not open
    with it: replayed from the start whatever it would have saved (p2c has its own replay)."""
    after = dict(sim.scenario.after)
    if not after or after == {"balancer": "p2c"}:
        return None
    mechanism = next((m for m in MECHANISMS if dict(m.settings) == after), None)
    if mechanism is None or mechanism.already_on(sim.counterfactual(None, minutes=0).state.controls):
        return None
    return mechanism


# Replays at once: the machine's cores (two here), at most four (each holds a run's world).
REPLAY_THREADS = max(1, min(4, os.cpu_count() or 1))


def _candidates(sim: Simulation) -> list[Mechanism]:
    """The mechanisms ``mechanism_counterfactuals`` replays ``sim`` with, in the order it tries them."""
    opening = sim.counterfactual(None, minutes=0).state.controls
    retried = getattr(opening, "retries", 0) > 0 or any(a.control == "retries" and a.value for a in sim.actions)
    if run_outcome(sim).budget_spent == 0.0:
        return []  # nothing to save
    order = sorted(MECHANISMS, key=lambda m: TRY_FIRST.index(m.name) if m.name in TRY_FIRST else len(TRY_FIRST))
    return [
        m
        for m in order
        if m.available() and not m.already_on(opening) and (retried or "retry_budget" not in m.settings)
    ]


def mechanism_counterfactuals(
    sim: Simulation, keep: int = MAX_MECHANISMS_KEPT, on_replay: Callable[[], None] | None = None
) -> dict[str, Simulation]:
    """The player's run replayed with each mechanism of ``MECHANISMS`` that exists in the registry and was not
    on at the start switched on from the start; the ``keep`` that spent the least of the error budget, and
    only those that spent less than the player did. A replay that has spent more than the player, or than the
    ``keep``-th best of those done so far, stops there: it cannot be kept. ``on_replay`` is called after each
    replay."""
    with ThreadPoolExecutor(max_workers=REPLAY_THREADS, thread_name_prefix="replay") as pool:
        return _mechanism_replays(sim, _candidates(sim), keep, on_replay, pool)


def _mechanism_replays(
    sim: Simulation,
    candidates: list[Mechanism],
    keep: int,
    on_replay: Callable[[], None] | None,
    pool: ThreadPoolExecutor,
) -> dict[str, Simulation]:
    """``mechanism_counterfactuals`` on ``pool``: the replays run side by side, each reading the bound as the
    others finish. The kept ones are those a replay after another keeps: a replay stops only once it has spent
    more than the ``keep``-th best of those done (or the player), which the final ``keep``-th best can only be
    at or below, so a replay stopped early could never have been kept."""
    mine = run_outcome(sim).budget_spent
    tried: list[tuple[float, int, str, Simulation]] = []
    lock = threading.Lock()

    def bound() -> float:
        with lock:
            spent = sorted(t[0] for t in tried)
        return min([mine, *spent[keep - 1 : keep]])

    def run(mechanism: Mechanism) -> None:
        other = _replay(sim, mechanism.settings, bound)
        if other is not None:
            spent = run_outcome(other).budget_spent
            with lock:
                tried.append((spent, MECHANISMS.index(mechanism), mechanism.name, other))
        if on_replay is not None:
            on_replay()

    for future in [pool.submit(run, mechanism) for mechanism in candidates]:
        future.result()
    best = sorted((t for t in tried if t[0] < mine), key=lambda t: (t[0], t[1]))[:keep]
    return {name: other for _spent, _index, name, other in best}


def with_settings(sim: Simulation, settings: Mapping[str, Any]) -> Simulation:
    """The run replayed on the same draws with ``settings`` in force from the start and the player's other
    decisions (the player's own changes to those controls left out, so they hold the whole run; an action on an
    instance the other run does not have then is left out too)."""
    other = _replay(sim, settings, None)
    assert other is not None  # no bound: it plays to the end
    return other


# A replay stops once it has spent clearly more than its bound: the records' sum and the outcome's may round apart.
BOUND_MARGIN = 1e-9


def _replay(
    sim: Simulation, settings: Mapping[str, Any], bound: Callable[[], float] | None, at: int = 0
) -> Simulation | None:
    """``with_settings``' replay, the settings applied at minute ``at`` (the player's own changes to them from
    then on left out); None once it has spent more of the error budget than ``bound()`` (read each minute: it may
    fall as other replays finish; what a minute spends is never negative, so it could only end above it)."""
    other = sim.counterfactual(None, minutes=0)
    scale = 1.0 / other.params.error_budget / other.params.budget_period_min
    spent = 0.0
    by_minute: dict[int, list[Action]] = {}
    for a in sim.actions:
        if a.control not in settings or a.minute < at:
            by_minute.setdefault(a.minute, []).append(a)
    while other.minute < sim.minute:
        todo = [Action(at, name, value) for name, value in settings.items()] if other.minute == at else []
        for a in by_minute.get(other.minute, ()):
            try:
                other.engine.check_action(other.state, a.control, a.value)
            except InvalidInput:
                continue
            todo.append(a)
        other.step(todo)
        spent += other.timeline[-1].error_rate * scale
        if bound is not None and spent > bound() * (1.0 + BOUND_MARGIN):
            return None
    return other


def with_balancer(sim: Simulation, balancer: str) -> Simulation:
    """The run replayed on the same draws with ``balancer`` from the start and the player's other decisions."""
    return with_settings(sim, {"balancer": balancer})


def full_report(sim: Simulation) -> Report:
    """The full debrief of a run, counterfactuals included."""
    return make_report(sim, counterfactuals(sim))

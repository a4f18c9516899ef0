"""The standard counterfactuals: the same scenario and seed, played hands-off and by the playbook."""

from __future__ import annotations

from oncallsim.debrief import Report, make_report
from oncallsim.model import InvalidInput
from oncallsim.policies.base import load_policy
from oncallsim.simulation import Action, Simulation

__all__ = ["COUNTERFACTUAL_POLICIES", "counterfactuals", "full_report", "with_balancer"]

COUNTERFACTUAL_POLICIES = ("hands-off", "textbook")


def counterfactuals(sim: Simulation) -> dict[str, Simulation]:
    """Re-runs to the same minute as ``sim`` (cheap: runs are deterministic); on the request engine, when the
    run opened on another balancer, also the player's own decisions with ``p2c`` from the start."""
    out = {name: sim.counterfactual(load_policy(name), minutes=sim.minute) for name in COUNTERFACTUAL_POLICIES}
    if sim.engine.name == "request" and sim.timeline and (sim.timeline[0].extras or {}).get("balancer") != "p2c":
        out["p2c"] = with_balancer(sim, "p2c")
    return out


def with_balancer(sim: Simulation, balancer: str) -> Simulation:
    """The run replayed on the same draws with ``balancer`` from the start and the player's other decisions
    (an action on an instance the other run does not have then is left out)."""
    other = sim.counterfactual(None, minutes=0)
    by_minute: dict[int, list[Action]] = {}
    for a in sim.actions:
        if a.control != "balancer":
            by_minute.setdefault(a.minute, []).append(a)
    while other.minute < sim.minute:
        todo = [Action(0, "balancer", balancer)] if other.minute == 0 else []
        for a in by_minute.get(other.minute, ()):
            try:
                other.engine.check_action(other.state, a.control, a.value)
            except InvalidInput:
                continue
            todo.append(a)
        other.step(todo)
    return other


def full_report(sim: Simulation) -> Report:
    """The full debrief of a run, counterfactuals included."""
    return make_report(sim, counterfactuals(sim))

"""The standard counterfactuals: the same scenario and seed, played hands-off and by the playbook."""

from __future__ import annotations

from oncallsim.debrief import Report, make_report
from oncallsim.policies.base import load_policy
from oncallsim.simulation import Simulation

__all__ = ["COUNTERFACTUAL_POLICIES", "counterfactuals", "full_report"]

COUNTERFACTUAL_POLICIES = ("hands-off", "textbook")


def counterfactuals(sim: Simulation) -> dict[str, Simulation]:
    """Re-runs to the same minute as ``sim`` (cheap: runs are deterministic)."""
    return {name: sim.counterfactual(load_policy(name), minutes=sim.minute) for name in COUNTERFACTUAL_POLICIES}


def full_report(sim: Simulation) -> Report:
    """The full debrief of a run, counterfactuals included."""
    return make_report(sim, counterfactuals(sim))

"""The state of a run at the start of a minute: everything the next minute's computation reads."""

from __future__ import annotations

from typing import NamedTuple

from oncallsim.model.controls import Controls
from oncallsim.model.fleet import Fleet
from oncallsim.model.params import Params
from oncallsim.model.plan import RunPlan
from oncallsim.model.slo import BurnWindows

__all__ = ["State", "initial_state"]


class State(NamedTuple):
    minute: int
    plan: RunPlan
    controls: Controls
    fleet: Fleet
    cache_warm: float = 1.0
    warmup_left: int = 0
    bad_build_share: float = 0.0
    deploying: bool = False
    rollback_left: int = 0
    windows: BurnWindows | None = None
    page_firing: bool = False
    budget_left: float = 1.0
    cost_so_far: float = 0.0


def initial_state(plan: RunPlan, controls: Controls, params: Params) -> State:
    """Minute 0: the floor's instances all serving, the cache warm, the scenario's opening budget."""
    return State(minute=0, plan=plan, controls=controls, fleet=Fleet(controls.floor), budget_left=plan.budget_start)

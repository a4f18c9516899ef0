"""The state of a run at the start of a minute: everything the next minute's computation reads.

Held as the compiled minute wants it (``fields.STATE_SCHEMA`` as a float vector, booting counts by minutes
left, the burn window oldest first) with named views for the surfaces. Immutable by convention: ``step``
copies the arrays before the minute changes them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from oncallsim.model.controls import Controls
from oncallsim.model.events import KERNEL_EVENTS
from oncallsim.model.fields import NUMERIC_FIELDS, ST
from oncallsim.model.fleet import Fleet
from oncallsim.model.kernel import kernel_params, lgamma_table
from oncallsim.model.params import Params
from oncallsim.model.plan import RunPlan
from oncallsim.model.stages import BROWNOUT, DEPLOY, FLUSH, NO_SURGE

__all__ = ["KernelInputs", "State", "initial_state", "kernel_inputs", "surge_of"]


class KernelInputs(NamedTuple):
    """What the compiled minute needs besides the state, prepared once per run."""

    params: npt.NDArray[np.float64]  # kernel.kernel_params: the parameters as compiled code reads them
    ln_factorial: npt.NDArray[np.float64]
    flags: npt.NDArray[np.int64]  # per minute: DEPLOY | FLUSH
    surge: tuple[float, float, float, float]
    values: npt.NDArray[np.float64]  # scratch: the minute's record vector (read out at once)
    slots: npt.NDArray[np.int64]  # scratch: the minute's event counts


def kernel_inputs(plan: RunPlan, params: Params) -> KernelInputs:
    flags = np.zeros(plan.minutes + 1, dtype=np.int64)
    for m in plan.deploy_minutes:
        if 0 <= m < len(flags):
            flags[m] |= DEPLOY
    for m in plan.flush_minutes:
        if 0 <= m < len(flags):
            flags[m] |= FLUSH
    for start, minutes, slowdown in plan.brownouts:  # the slowdown in hundredths, above the flag bits
        for m in range(max(start, 0), min(start + minutes, len(flags))):
            flags[m] = (flags[m] & 0xFF) | BROWNOUT | (round(slowdown * 100.0) << 8)
    surge = surge_of(plan)
    table = lgamma_table(params.max_fleet * params.workers_per_instance)
    values = np.empty(len(NUMERIC_FIELDS))
    slots = np.empty(len(KERNEL_EVENTS), dtype=np.int64)
    return KernelInputs(kernel_params(params), table, flags, surge, values, slots)


def surge_of(plan: RunPlan) -> tuple[float, float, float, float]:
    """The plan's surge as the compiled minute reads it: (onset, peak, rise, decay); onset ∞ = none."""
    s = plan.surge
    return NO_SURGE if s is None else (float(s.onset_min), float(s.peak), float(s.rise_min), float(s.decay_min))


class State(NamedTuple):
    minute: int
    plan: RunPlan
    vec: npt.NDArray[np.float64]
    boot: npt.NDArray[np.int64]
    window: npt.NDArray[np.float64]
    kernel: KernelInputs
    world: Any = None  # the request engine's requests, workers, cache and database (request.world.World)
    controller: Any = None  # the request engine's plug-in controller as it stands (controllers.ControllerRun)

    def value(self, name: str) -> float:
        return float(self.vec[getattr(ST, name)])

    @property
    def controls(self) -> Controls:
        controls = Controls.from_vector(self.vec)
        if self.plan.graph is not None:  # a chain: the one service's mechanisms are not in play (at their defaults)
            return controls
        if self.world is not None:  # the request engine's own settings live in its world (or its view)
            from oncallsim.model.request.settings import world_settings
            from oncallsim.model.request.view import WorldView

            held = self.world.settings if isinstance(self.world, WorldView) else world_settings(self.world)
            controls = replace(controls, **held)
        return controls

    @property
    def fleet(self) -> Fleet:
        booting = tuple(k for k in range(len(self.boot) - 1, 0, -1) for _ in range(int(self.boot[k])))
        return Fleet(int(self.vec[ST.serving]), booting, int(self.vec[ST.quiet_minutes]))

    @property
    def budget_left(self) -> float:
        return self.value("budget_left")

    @property
    def cost_so_far(self) -> float:
        return self.value("cost_so_far")

    @property
    def cache_warm(self) -> float:
        return self.value("cache_warm")

    @property
    def warmup_left(self) -> int:
        return int(self.value("warmup_left"))

    @property
    def rollback_left(self) -> int:
        return int(self.value("rollback_left"))

    @property
    def page_firing(self) -> bool:
        return bool(self.value("page_firing"))


def initial_state(plan: RunPlan, controls: Controls, params: Params) -> State:
    """Minute 0: the floor's instances all serving, the cache warm, the scenario's opening budget."""
    vec = controls.to_vector()
    vec[ST.serving] = controls.floor
    vec[ST.cache_warm] = 1.0
    vec[ST.budget_left] = plan.budget_start
    boot = np.zeros(max(params.boot_delay_min, 0) + 1, dtype=np.int64)
    window = np.zeros(max(params.burn_long_window_min, params.burn_short_window_min), dtype=np.float64)
    return State(0, plan, vec, boot, window, kernel_inputs(plan, params))

"""The minute model: pure and deterministic (no I/O, no clock, no global state).

One module per concept; ``step`` ties them together in the order of MODEL.md §3a. The names below are loaded on
first use (PEP 562), so a caller that needs only ``InvalidInput`` (the command line's help) does not compile or
import numba.
"""

from typing import TYPE_CHECKING as _TYPE_CHECKING

from oncallsim.lazy import exports as _exports

# Bumped whenever a change alters any run's numbers; run files record it. A run file of a version this code still
# computes (``MODEL_VERSIONS``) replays with that version's rules, bit for bit (``RunPlan.revision``); another is
# refused, since its replay would not reproduce it. Version 2: the request engine as Kratos's code behaves (clients
# learn of a timeout at their deadline, P2C reads the sampled CPU and the registry's weights, aegis's BBR edge
# cases, bilibili/discovery's eviction and long polls, gRPC's connections); the minute engine is the same in both.
# Version 3: the BBR limiter times a request from its worker's start, not its admission (request/limiter.py).
# Both are plain strings here, not read from ``plan.REVISION``, so that importing the package stays free of numba
# (the help's budget); ``plan.REVISION`` is read from them.
MODEL_VERSIONS: tuple[str, ...] = ("1", "2", "3")
MODEL_VERSION: str = MODEL_VERSIONS[-1]

__all__ = [
    "BUTTONS",
    "CONTROL_SPECS",
    "CSV_FIELDS",
    "DEFAULT_PARAMS",
    "MODEL_VERSION",
    "MODEL_VERSIONS",
    "RECORD_FIELDS",
    "SETTINGS",
    "ControlSpec",
    "Controls",
    "InvalidInput",
    "MinuteRecord",
    "Mulberry32",
    "Params",
    "RunPlan",
    "State",
    "Surge",
    "apply_actions",
    "initial_state",
    "param_info",
    "step",
]

# each public name → the module of the model that defines it
_HOMES = {
    **dict.fromkeys(("BUTTONS", "CONTROL_SPECS", "SETTINGS", "Controls", "ControlSpec"), "controls"),
    "InvalidInput": "errors",
    **dict.fromkeys(("DEFAULT_PARAMS", "Params", "param_info"), "params"),
    "RunPlan": "plan",
    **dict.fromkeys(("CSV_FIELDS", "RECORD_FIELDS", "MinuteRecord"), "record"),
    "Mulberry32": "rng",
    **dict.fromkeys(("State", "initial_state"), "state"),
    **dict.fromkeys(("apply_actions", "step"), "step"),
    "Surge": "traffic",
}

if _TYPE_CHECKING:
    from oncallsim.model.controls import BUTTONS, CONTROL_SPECS, SETTINGS, Controls, ControlSpec
    from oncallsim.model.errors import InvalidInput
    from oncallsim.model.params import DEFAULT_PARAMS, Params, param_info
    from oncallsim.model.plan import RunPlan
    from oncallsim.model.record import CSV_FIELDS, RECORD_FIELDS, MinuteRecord
    from oncallsim.model.rng import Mulberry32
    from oncallsim.model.state import State, initial_state
    from oncallsim.model.step import apply_actions, step
    from oncallsim.model.traffic import Surge


__getattr__, __dir__ = _exports(__name__, {name: f"oncallsim.model.{home}" for name, home in _HOMES.items()})

"""oncallsim: an on-call simulator whose physics are textbook queueing models.

>>> from oncallsim import Simulation
>>> sim = Simulation("free-play", seed=1, noise=False, minutes=1)
>>> round(sim.step().requests_per_s)
1125

The names below are loaded on first use (PEP 562): ``oncallsim --help`` and ``oncallsim scenarios`` answer
without importing numba, SciPy or the engines. The compiled-code cache is installed by the model's
``jit`` module before any compiled function is declared.
"""

from typing import TYPE_CHECKING as _TYPE_CHECKING

from oncallsim.lazy import exports as _exports

__version__ = "0.1.0"

__all__ = [
    "CONTROL_SPECS",
    "MODEL_VERSION",
    "Action",
    "Controls",
    "InvalidInput",
    "MinuteRecord",
    "Params",
    "RunFile",
    "Scenario",
    "Simulation",
    "builtin_scenarios",
    "load_actions",
    "load_scenario",
    "param_info",
]

# each public name → the module that defines it
_HOMES = {
    **dict.fromkeys(
        ("CONTROL_SPECS", "MODEL_VERSION", "Controls", "InvalidInput", "MinuteRecord", "Params", "param_info"),
        "oncallsim.model",
    ),
    **dict.fromkeys(("Scenario", "builtin_scenarios", "load_scenario"), "oncallsim.scenarios"),
    **dict.fromkeys(("Action", "RunFile", "Simulation", "load_actions"), "oncallsim.simulation"),
}

if _TYPE_CHECKING:
    from oncallsim.model import CONTROL_SPECS, MODEL_VERSION, Controls, InvalidInput, MinuteRecord, Params, param_info
    from oncallsim.scenarios import Scenario, builtin_scenarios, load_scenario
    from oncallsim.simulation import Action, RunFile, Simulation, load_actions


# a run's view in a notebook comes from the debrief (its score): imported with the classes that show it
__getattr__, __dir__ = _exports(__name__, _HOMES, {"Simulation": "oncallsim.debrief"})

"""oncallsim: an on-call simulator whose physics are textbook queueing models.

>>> from oncallsim import Simulation
>>> sim = Simulation("free-play", seed=1, noise=False, minutes=1)
>>> round(sim.step().requests_per_s)
1125
"""

from oncallsim import compiled_cache

compiled_cache.install()  # before any compiled function is declared: numba's cache keyed on the code, not its prose

from oncallsim.model import CONTROL_SPECS, MODEL_VERSION, Controls, InvalidInput, MinuteRecord, Params, param_info  # noqa: E402
from oncallsim.scenarios import Scenario, builtin_scenarios, load_scenario  # noqa: E402
from oncallsim.simulation import Action, RunFile, Simulation, load_actions  # noqa: E402

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

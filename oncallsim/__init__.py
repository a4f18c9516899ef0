"""oncallsim: an on-call simulator whose physics are textbook queueing models.

>>> from oncallsim import Simulation
>>> sim = Simulation("free-play", seed=1, noise=False, minutes=1)
>>> round(sim.step().requests_per_s)
1125
"""


def _compiled_code_cache() -> None:
    """Give numba's on-disk cache a folder per version of the compiled sources.

    numba keys a cached function on its own file's time stamp only: a change in a function it calls from
    another module (the request engine's stages are spread over several) would load stale machine code and
    silently compute the old numbers. A folder named by a hash of every model source makes each version
    compile once and never see another's code. ``NUMBA_CACHE_DIR``, when set, is the user's choice.
    """
    import hashlib
    import os
    from pathlib import Path

    from numba.core import config

    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    model = Path(__file__).parent / "model"
    digest = hashlib.sha256()
    for path in sorted(model.rglob("*.py")):
        digest.update(path.relative_to(model).as_posix().encode())
        digest.update(path.read_bytes())
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    folder = base / "oncallsim" / "numba" / digest.hexdigest()[:16]
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return  # no writable home: numba's own default (beside the sources, else its user cache)
    setattr(config, "CACHE_DIR", str(folder))  # noqa: B010  (numba's config module declares it dynamically)


_compiled_code_cache()

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

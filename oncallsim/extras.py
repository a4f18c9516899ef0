"""What the optional extras add, and the one line that says which to install when one is missing.

Playing (``make run``: the console, the CLI's runs and debriefs, the Python API) needs the package alone. What
only some uses need is an extra of ``pyproject.toml``, so the install for playing stays small (docs/guide.md,
"Extras"): Parquet for sweeps, pandas for data frames, matplotlib for the validation report's plots, Gymnasium,
Dask. A feature whose extra is missing is refused like any bad input: one line naming the package and the
``pip install`` that brings it, never a traceback.

>>> require("json", "sweep").__name__
'json'
>>> require("no_such_package_here", "sweep")
Traceback (most recent call last):
...
oncallsim.model.errors.InvalidInput: no_such_package_here: not installed (for sweeps...): pip install 'oncallsim[sweep]'
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType

from oncallsim.model.errors import InvalidInput

__all__ = ["EXTRAS", "require"]

# Each extra and what it is for (pyproject.toml's [project.optional-dependencies] holds the
# packages and their versions).
EXTRAS = {
    "sweep": "sweeps and their Parquet files",
    "notebook": "runs and sweeps as data frames",
    "reports": "the validation report (oncallsim validate) and the cliff map's picture",
    "gym": "the Gymnasium environments",
    "cluster": "sweeps on a Dask cluster",
    "mcp": "the MCP server (oncallsim mcp)",
}


def require(module: str, extra: str) -> ModuleType:
    """``module`` imported, or ``InvalidInput`` naming it and the extra of ``EXTRAS`` that installs it."""
    try:
        return import_module(module)
    except ImportError:
        top = module.split(".")[0]
        raise InvalidInput(top, f"not installed (for {EXTRAS[extra]}): pip install 'oncallsim[{extra}]'") from None

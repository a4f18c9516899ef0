"""A package's exported names imported on first use (PEP 562), so the command line's help and listings start
in a fraction of a second instead of importing numba, SciPy and the engines (~0.9 s) for names they never use.

A package declares where each of its names lives and installs the hooks; type checkers read the same imports
under ``TYPE_CHECKING``:

>>> import oncallsim.model
>>> oncallsim.model.step.__module__, oncallsim.model.InvalidInput.__module__
('oncallsim.model.step', 'oncallsim.model.errors')
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from types import ModuleType
from typing import Any

__all__ = ["exports"]


def exports(
    package: str, homes: Mapping[str, str], companions: Mapping[str, str] | None = None
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, whose name ``n`` is defined in module ``homes[n]``;
    ``companions[n]``, when given, is imported with it (a module that registers what the name's class shows: the
    debrief's notebook view of a ``Simulation``).

    A name, once imported, is kept in the package. A submodule imported later that has the name of an exported
    function (``oncallsim.model.step``) does not replace the function: the package keeps the name for it, as
    eager imports in the package's ``__init__`` once made sure."""
    module = sys.modules[package]

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(home), name)
        if companions and name in companions:
            import_module(companions[name])
        ModuleType.__setattr__(module, name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(module), *homes})

    class Package(ModuleType):
        def __setattr__(self, name: str, value: Any) -> None:
            if isinstance(value, ModuleType) and name in homes:
                return  # the submodule stays in sys.modules; the package's name is the function's
            super().__setattr__(name, value)

    module.__class__ = Package
    return __getattr__, __dir__

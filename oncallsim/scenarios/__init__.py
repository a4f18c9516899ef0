"""Scenarios as validated, versioned data files, and the registry of the built-in ones (names imported on first
use: ``oncallsim scenarios`` lists the built-in files without validating them against the model)."""

from typing import TYPE_CHECKING as _TYPE_CHECKING

from oncallsim.lazy import exports as _exports

__all__ = [
    "SCHEMA_VERSION",
    "Scenario",
    "builtin_scenarios",
    "graph_scenarios",
    "load_scenario",
    "parse_clock",
    "registered_scenarios",
    "scenario_from_dict",
    "scenario_from_file",
]

_HOMES = {
    **dict.fromkeys(
        (
            "builtin_scenarios",
            "graph_scenarios",
            "load_scenario",
            "registered_scenarios",
            "scenario_from_dict",
            "scenario_from_file",
        ),
        "oncallsim.scenarios.registry",
    ),
    **dict.fromkeys(("SCHEMA_VERSION", "Scenario", "parse_clock"), "oncallsim.scenarios.spec"),
}

if _TYPE_CHECKING:
    from oncallsim.scenarios.registry import (
        builtin_scenarios,
        graph_scenarios,
        load_scenario,
        registered_scenarios,
        scenario_from_dict,
        scenario_from_file,
    )
    from oncallsim.scenarios.spec import SCHEMA_VERSION, Scenario, parse_clock

__getattr__, __dir__ = _exports(__name__, _HOMES)

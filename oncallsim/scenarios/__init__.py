"""Scenarios as validated, versioned data files, and the registry of the built-in ones."""

from oncallsim.scenarios.registry import builtin_scenarios, load_scenario, scenario_from_dict, scenario_from_file
from oncallsim.scenarios.spec import SCHEMA_VERSION, Scenario, parse_clock

__all__ = [
    "SCHEMA_VERSION",
    "Scenario",
    "builtin_scenarios",
    "load_scenario",
    "parse_clock",
    "scenario_from_dict",
    "scenario_from_file",
]

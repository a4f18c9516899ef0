"""The tutorial: a first-time player's run. A short bad deploy on guided difficulty; before the clock starts, a
tour points at each panel (status, diagram and charts, controls, event log), and the run ends on the debrief.

The scenario is a built-in one (``scenarios/data/00-tutorial.toml``: its texts in the catalogs, its objectives
measured like the others'); what is the console's own is how it starts: guided, paused, a fixed seed, the tour."""

from __future__ import annotations

from oncallsim.scenarios import builtin_scenarios
from oncallsim.scenarios.spec import Scenario

__all__ = ["TUTORIAL_ID", "TUTORIAL_SEED", "is_tutorial", "tutorial_scenario"]

TUTORIAL_ID = "tutorial"
TUTORIAL_SEED = 1  # every first-time player meets the same incident (objectives measured over seeds 0–199)


def tutorial_scenario() -> Scenario:
    return builtin_scenarios()[TUTORIAL_ID]


def is_tutorial(scenario: Scenario) -> bool:
    """A run of the built-in tutorial (not a user's scenario file that happens to use its id): it gets the tour."""
    return scenario == tutorial_scenario()

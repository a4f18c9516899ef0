"""The tutorial: a first-time player's run. A short bad deploy on guided difficulty; before the clock starts, a
tour points at each panel (status, diagram and charts, controls, event log), and the run ends on the debrief.

It is a scenario of the console's own (carried in the run file like any scenario file), not a built-in one: the
batch engine, the Gymnasium environments and the balance tests have nothing to learn from it."""

from __future__ import annotations

from oncallsim.scenarios.registry import scenario_from_text
from oncallsim.scenarios.spec import Scenario

__all__ = ["TUTORIAL_ID", "tutorial_scenario"]

TUTORIAL_ID = "tutorial"
TUTORIAL_TOML = """
id = "tutorial"
version = 1
title = "Tutorial: your first page"
summary = "A short bad deploy, with a tour of the console first."
briefing = \"\"\"
You are on call for a web service. At 09:05 a new build goes out, and it is bad: part of every request it \
serves fails. The clock waits for you when the incident starts and when the page fires, with a hint. Find the \
symptom, roll the build back, and read the debrief.
\"\"\"
start = "09:00"
minutes = 50
budget_start = 0.5
key_controls = ["rollback"]

[[events]]
kind = "deploy"
at = "09:05"

[[objectives]]
kind = "recover_within"
minutes = 30

[[objectives]]
kind = "budget_left_at_least"
value = 0.45
"""


def tutorial_scenario() -> Scenario:
    return scenario_from_text(TUTORIAL_TOML, "tutorial")

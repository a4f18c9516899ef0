"""The debrief: score card, budget by cause and phase, cost split, decisions and counterfactuals.

Pure functions of timelines; the counterfactual runs themselves are made by ``oncallsim.policies``.
"""

from oncallsim.debrief import notebook  # noqa: F401  (registers a run's notebook view: Simulation._repr_html_)
from oncallsim.debrief.incident import first_page, incident_start, recovery_minute
from oncallsim.debrief.report import Counterfactual, Report, make_report, run_outcome
from oncallsim.debrief.scorecard import ObjectiveResult, score
from oncallsim.debrief.summary import CostSplit, Decision, Outcome, Phase, cost_split, decisions, outcome, phases

__all__ = [
    "CostSplit",
    "Counterfactual",
    "Decision",
    "ObjectiveResult",
    "Outcome",
    "Phase",
    "Report",
    "cost_split",
    "decisions",
    "first_page",
    "incident_start",
    "make_report",
    "outcome",
    "phases",
    "recovery_minute",
    "run_outcome",
    "score",
]

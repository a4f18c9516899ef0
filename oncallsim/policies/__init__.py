"""Policies: the protocol lives in ``oncallsim.simulation``; here the built-ins and loading a user's own."""

from oncallsim.policies import hands_off, textbook  # noqa: F401  (registers the built-ins)
from oncallsim.policies.base import BUILTIN_POLICIES, load_policy
from oncallsim.policies.counterfactual import COUNTERFACTUAL_POLICIES, counterfactuals, full_report
from oncallsim.policies.hands_off import HandsOff
from oncallsim.policies.textbook import Textbook

__all__ = [
    "BUILTIN_POLICIES",
    "COUNTERFACTUAL_POLICIES",
    "HandsOff",
    "Textbook",
    "counterfactuals",
    "full_report",
    "load_policy",
]

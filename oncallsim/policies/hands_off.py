"""The counterfactual of doing nothing: the autoscaler and the defaults alone."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from oncallsim.policies.base import register
from oncallsim.simulation import Observation

__all__ = ["HandsOff"]


@register("hands-off")
class HandsOff:
    name = "hands-off"

    def reset(self, seed: int) -> None:
        pass

    def decide(self, observation: Observation) -> Iterable[tuple[str, Any]]:
        return ()

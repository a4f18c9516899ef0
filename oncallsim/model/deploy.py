"""The bad deploy and the rollback (MODEL.md §3.10): a rolling rollout, a rollback prepared on a new fleet."""

from __future__ import annotations

from typing import NamedTuple

from oncallsim.model import events as ev
from oncallsim.model.params import Params

__all__ = ["Rollout", "advance", "start_deploy"]


class Rollout(NamedTuple):
    bad_build_share: float
    deploying: bool
    rollback_left: int


def start_deploy(bad_build_share: float, params: Params) -> tuple[float, bool]:
    """The deploy starts: its first minute already puts one step of traffic on the bad build."""
    return min(1.0, bad_build_share + params.rollout_step), True


def advance(rollout: Rollout, params: Params, events: list[str]) -> Rollout:
    """The next minute's rollout: one more step of traffic on the bad build; a rollback that is ready ends it."""
    bad, deploying, rollback_left = rollout
    if deploying:
        bad = min(1.0, bad + params.rollout_step)
        if bad >= 1.0:
            deploying = False
            events.append(ev.DEPLOY_FINISHED)
    if rollback_left > 0:
        rollback_left -= 1
        if rollback_left == 0:
            bad = 0.0
            deploying = False
            events.append(ev.ROLLBACK_READY)
    return Rollout(bad, deploying, rollback_left)

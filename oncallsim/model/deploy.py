"""The bad deploy and the rollback (MODEL.md §3.10): a rolling rollout, a rollback prepared on a new fleet."""

from __future__ import annotations

from typing import Any

from oncallsim.model.kernel import P, compiled, step

__all__ = ["advance", "start_deploy"]


@step
def start_deploy(bad_build_share: float, p: Any) -> float:
    """The deploy starts: its first minute already puts one step of traffic on the bad build."""
    return min(1.0, bad_build_share + p[P.rollout_step])


@compiled
def advance(bad: float, deploying: bool, rollback_left: int, p: Any) -> tuple[float, bool, int, bool, bool]:
    """The next minute's rollout: one more step of traffic on the bad build; a rollback that is ready ends it.

    Returns (bad build share, deploying, rollback minutes left, deploy finished, rollback ready).
    """
    finished = False
    ready = False
    if deploying:
        bad = min(1.0, bad + p[P.rollout_step])
        if bad >= 1.0:
            deploying = False
            finished = True
    if rollback_left > 0:
        rollback_left -= 1
        if rollback_left == 0:
            bad = 0.0
            deploying = False
            ready = True
    return bad, deploying, rollback_left, finished, ready

"""One score per run, out of 100, and the parts it lost points on (docs/debrief.md, "The score").

Errors are not the only price, as in real operations: users turned away by load shedding, stale answers from a
long cache TTL, slow answers and money count too, so shedding everyone or buying a huge fleet to save the
budget scores badly. Each part loses nothing up to its ``free`` amount, then points in proportion to how far the
run went, up to its cap, all of which it loses at its ``full`` amount; the caps add up to 100. A scenario sets
its own scale (``[score]`` in its file: ``ScoreScale``), calibrated so that the playbook scores near 90 and
hands-off near the bottom (docs/scenarios.md, "Balance"). The score is a pure function of the run's outcome and
the scenario's scale.
"""

from __future__ import annotations

from pydantic import BaseModel

from oncallsim.debrief.summary import Outcome
from oncallsim.scenarios.spec import SCORE_PART_NAMES, ScorePartScale, ScoreScale

__all__ = ["SCORE_PARTS", "SCORE_UNITS", "ScorePart", "part_amounts", "run_score"]

# The unit each part's amount is counted in. Money: % over what the opening fleet costs over the run.
SCORE_UNITS: dict[str, str] = {
    "errors": "% of the error budget",
    "turned_away": "% of requests shed",
    "stale": "s of mean age over 30 s",
    "slow": "minutes over the latency target",
    "money": "% over the opening fleet's cost",
}
STALE_FREE_S = 30.0  # the default TTL of 60 s serves answers 30 s old on average: no point lost for that
# the default scale (a scenario without a [score] table): its caps and full amounts
SCORE_PARTS: dict[str, ScorePartScale] = ScoreScale().parts()
assert tuple(SCORE_UNITS) == SCORE_PART_NAMES


class ScorePart(BaseModel):
    name: str
    amount: float  # how far the run went, in the part's unit (SCORE_UNITS)
    lost: float  # points lost (at most the cap)
    cap: float
    full: float = 0.0  # the amount at which the whole cap is lost (0: a summary stored before scales existed)
    free: float = 0.0  # the amount that costs nothing


class RunScore(BaseModel):
    score: int
    parts: list[ScorePart]


def part_amounts(outcome: Outcome, opening_fleet_cost: float) -> dict[str, float]:
    """How far a run went on each part, in its unit (``SCORE_UNITS``)."""
    over_cost = max(0.0, outcome.cost / opening_fleet_cost - 1.0) if opening_fleet_cost > 0 else 0.0
    return {
        "errors": 100.0 * outcome.budget_spent,
        "turned_away": 100.0 * outcome.turned_away_share,
        "stale": max(0.0, outcome.mean_staleness_s - STALE_FREE_S),
        "slow": float(outcome.minutes_over_latency_target),
        "money": 100.0 * over_cost,
    }


def run_score(outcome: Outcome, opening_fleet_cost: float, scale: ScoreScale | None = None) -> RunScore:
    """The score of one run; ``opening_fleet_cost`` is what the opening fleet alone costs over the run, ``scale``
    the scenario's (``Scenario.score``; the default scale when None)."""
    amounts = part_amounts(outcome, opening_fleet_cost)
    parts = []
    for name, part in (scale or ScoreScale()).parts().items():
        parts.append(
            ScorePart(
                name=name,
                amount=amounts[name],
                lost=part.lost(amounts[name]),
                cap=part.cap,
                full=part.full,
                free=part.free,
            )
        )
    return RunScore(score=max(0, round(100.0 - sum(p.lost for p in parts))), parts=parts)

"""One score per run, out of 100, and the parts it lost points on (docs/debrief.md).

Errors are not the only price, as in real operations: users turned away by load shedding, stale answers from a
long cache TTL, slow answers and money count too, so shedding everyone or buying a huge fleet to save the
budget scores badly. Each part loses points in proportion to how far the run went, up to its cap; the caps add
up to 100. The score is a pure function of the run's outcome (the batch engine's rows score the same way).
"""

from __future__ import annotations

from pydantic import BaseModel

from oncallsim.debrief.summary import Outcome

__all__ = ["SCORE_PARTS", "ScorePart", "run_score"]

# part → (points lost per unit, unit, cap). Units: % of the 30-day error budget spent; % of requests shed; 10 s
# of mean answer age beyond 30 s (the default TTL of 60 s gives 30 s); minutes with p99 over the latency
# target; 10 % of money beyond what the opening fleet costs over the run.
SCORE_PARTS: dict[str, tuple[float, str, float]] = {
    "errors": (4.0, "% of the error budget", 40.0),
    "turned_away": (3.0, "% of requests shed", 20.0),
    "stale": (1.0, "10 s of mean age over 30 s", 10.0),
    "slow": (0.5, "minute over the latency target", 15.0),
    "money": (1.0, "10 % over the opening fleet's cost", 15.0),
}
STALE_FREE_S = 30.0


class ScorePart(BaseModel):
    name: str
    amount: float  # how far the run went, in the part's unit
    lost: float  # points lost (at most the cap)
    cap: float


class RunScore(BaseModel):
    score: int
    parts: list[ScorePart]


def run_score(outcome: Outcome, opening_fleet_cost: float) -> RunScore:
    """The score of one run; ``opening_fleet_cost`` is what the opening fleet alone costs over the run."""
    over_cost = max(0.0, outcome.cost / opening_fleet_cost - 1.0) if opening_fleet_cost > 0 else 0.0
    amounts = {
        "errors": 100.0 * outcome.budget_spent,
        "turned_away": 100.0 * outcome.turned_away_share,
        "stale": max(0.0, outcome.mean_staleness_s - STALE_FREE_S) / 10.0,
        "slow": float(outcome.minutes_over_latency_target),
        "money": 10.0 * over_cost,
    }
    parts = []
    for name, (per_unit, _unit, cap) in SCORE_PARTS.items():
        parts.append(ScorePart(name=name, amount=amounts[name], lost=min(cap, per_unit * amounts[name]), cap=cap))
    return RunScore(score=max(0, round(100.0 - sum(p.lost for p in parts))), parts=parts)

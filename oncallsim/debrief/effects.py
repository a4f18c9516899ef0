"""What each decision did, measured against the run without it on the same draws (the debrief's "decisions and
their measured effect").

A before-and-after in time reads a rollback made while a bad build is still rolling out as if it made the errors
worse (they kept climbing for the five minutes the rollback takes). The honest comparison is with the same run,
at the same minutes, without the decision: the run is replayed from its file and, at each decision's minute,
forked (``Simulation.fork``) and played for the effect's window without that minute's inputs (the player's later
inputs within the window still apply, as they did). One replay of the run, and ten minutes per decision.

>>> from oncallsim import Simulation
>>> sim = Simulation("bad-deploy", seed=7, minutes=60)
>>> _ = sim.run(until=29)
>>> _ = sim.step([("rollback", None)])
>>> _ = sim.run()
>>> window = decision_windows(sim)[29]
>>> len(window), window[-1].bad_build_share > sim.timeline[38].bad_build_share
(10, True)
"""

from __future__ import annotations

from collections.abc import Sequence

from oncallsim.debrief.summary import EFFECT_AFTER_MIN
from oncallsim.model import MinuteRecord
from oncallsim.simulation import Action, Simulation

__all__ = ["MAX_MEASURED_DECISIONS", "decision_windows"]

# Decision minutes measured against their counterfactual; past these (a player who acted a hundred times), the
# table shows the run alone. Each costs EFFECT_AFTER_MIN minutes of the run's engine.
MAX_MEASURED_DECISIONS = 40


def decision_windows(sim: Simulation, limit: int = MAX_MEASURED_DECISIONS) -> dict[int, list[MinuteRecord]]:
    """Per decision minute (the first ``limit``), the records of the window the debrief measures its effect over,
    played from that minute without that minute's inputs, on the run's own draws."""
    by_minute: dict[int, list[Action]] = {}
    for a in sim.actions:
        if a.minute < sim.minute:
            by_minute.setdefault(a.minute, []).append(a)
    measured = sorted(by_minute)[:limit]
    if not measured:
        return {}
    replay = Simulation.from_run_file(sim.run_file().model_copy(update={"actions": [], "played": None}))
    out: dict[int, list[MinuteRecord]] = {}
    for minute in measured:
        while replay.minute < minute:
            replay.step(by_minute.get(replay.minute, ()))
        out[minute] = _without(replay.fork(), minute, by_minute, min(sim.minute, minute + EFFECT_AFTER_MIN))
    return out


def _without(fork: Simulation, minute: int, by_minute: dict[int, list[Action]], end: int) -> list[MinuteRecord]:
    """The fork played from ``minute`` to ``end`` without ``minute``'s inputs, the later ones as the player made
    them (one the fork cannot take, an instance it does not have then, is left out)."""
    records: list[MinuteRecord] = []
    while fork.minute < end:
        todo: Sequence[Action] = by_minute.get(fork.minute, ()) if fork.minute != minute else ()
        kept = []
        for action in todo:
            try:
                fork.engine.check_action(fork.state, action.control, action.value)
            except ValueError:
                continue
            kept.append(action)
        records.append(fork.step(kept))
    return records

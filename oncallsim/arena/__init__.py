"""The arena (docs/arena.md): people's paces, policies, opening controls and agents play the same scenarios on the
same held-out seeds, and one table ranks them by the debrief's score."""

from oncallsim.arena.contestants import KINDS, Contestant, Entry, Settings, parse_contestant, register_kind
from oncallsim.arena.play import ArenaPlan, aggregate, parse_seeds, plan_arena, play_run, run_arena

__all__ = [
    "KINDS",
    "ArenaPlan",
    "Contestant",
    "Entry",
    "Settings",
    "aggregate",
    "parse_contestant",
    "parse_seeds",
    "plan_arena",
    "play_run",
    "register_kind",
    "run_arena",
]

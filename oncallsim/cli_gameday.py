"""``oncallsim gameday export ROOM_FILE --markdown FILE``: a game day's postmortem draft, offline, from the room
file the facilitator (or, after the run, anyone in the room) exported: the run replayed bit for bit, its debrief
computed, the room's log interleaved, as the server writes it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from oncallsim.cli_common import err, guarded, notice_after, write_whole

__all__ = ["gameday"]

gameday = typer.Typer(help="Game days: a facilitator runs an incident for a team (rooms are hosted by serve).",
                      no_args_is_help=True)  # fmt: skip


@gameday.command("export")
@guarded
def export(
    room_file: Annotated[Path, typer.Argument(help="A room file exported from a game-day room (JSON).")],
    markdown: Annotated[Path, typer.Option(help="Write the blameless-postmortem draft (Markdown) here.")],
) -> None:
    """Write the postmortem draft of an exported game-day room: summary, impact, key intervals, the timeline
    with who did what, what went well and wrong, action items for the team."""
    from oncallsim.cli_debrief import make_debrief
    from oncallsim.gameday.postmortem import RoomFile, postmortem_markdown
    from oncallsim.store.runfiles import vet_run_file

    room = RoomFile.load(room_file)
    with notice_after(1.0, "replaying the run and its counterfactuals…"):
        sim = vet_run_file(room.run, f"{room_file}: run")
        report = make_debrief(sim)
    text = postmortem_markdown(room.title, sim, report, room.log, [(p.name, p.role) for p in room.players])
    write_whole(markdown, text)
    err.print(f"wrote {markdown} ({len(room.log)} log lines, {len(room.players)} players)")

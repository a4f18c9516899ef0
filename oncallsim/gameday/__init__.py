"""Game days: a facilitator runs an incident for a team in one shared live run (rooms, roles, tokens, the room's
messages, injected faults, and the timeline that becomes the postmortem)."""

from oncallsim.gameday.postmortem import RoomFile, postmortem_markdown, team_timeline
from oncallsim.gameday.room import Room, RoomManager, Seat

__all__ = ["Room", "RoomFile", "RoomManager", "Seat", "postmortem_markdown", "team_timeline"]

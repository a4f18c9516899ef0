"""Who is in a game-day room and what each may do: the facilitator runs the exercise; the team plays it."""

from __future__ import annotations

import re

from oncallsim.model import InvalidInput

__all__ = ["FACILITATOR", "PLAYER_ROLES", "ROLE_LABELS", "can", "check_name", "check_role"]

FACILITATOR = "facilitator"
# The team's roles (the SRE book's incident roles); an observer watches and cannot act.
PLAYER_ROLES = ("commander", "operations", "communications", "observer")
# Labels (gettext msgids: the pages translate them).
ROLE_LABELS = {
    "commander": "incident commander",
    "operations": "operations",
    "communications": "communications",
    "observer": "observer",
    "facilitator": "facilitator",
}
# What each role may do in the room (the facilitator may do everything but post status updates for the team).
RIGHTS = {
    "act": {"commander", "operations", "communications"},
    "message": {"commander", "operations", "communications", FACILITATOR},
    "status": {"communications"},
    "facilitate": {FACILITATOR},
}
NAME = re.compile(r"^[\w .\-']{1,40}$")


def check_role(role: object) -> str:
    if not isinstance(role, str) or role not in PLAYER_ROLES:
        raise InvalidInput("role", f"must be one of {', '.join(PLAYER_ROLES)}, got {str(role)[:40]!r}")
    return role


def check_name(name: object) -> str:
    """A display name: 1 to 40 letters, digits, spaces, dots, dashes, apostrophes or underscores."""
    if not isinstance(name, str) or not NAME.match(name.strip()):
        raise InvalidInput("name", "must be 1 to 40 letters, digits, spaces, dots, dashes or underscores")
    stripped = name.strip()
    if stripped.lower() == FACILITATOR:
        raise InvalidInput("name", "'facilitator' is the facilitator's; choose another name")
    return stripped


def can(role: str, right: str) -> bool:
    return role in RIGHTS[right]


def require(role: str, right: str) -> None:
    """Refuse, naming the role and who may, when ``role`` lacks ``right``."""
    if not can(role, right):
        labels = tuple(ROLE_LABELS[r] for r in (*PLAYER_ROLES, FACILITATOR) if r in RIGHTS[right])
        raise InvalidInput(
            "role",
            f"the {ROLE_LABELS.get(role, role)} cannot do this; allowed: {', '.join(labels)}",
            "role_cannot",
            role=ROLE_LABELS.get(role, role),
            roles=labels,
        )

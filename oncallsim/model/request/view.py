"""What an action's check reads of a request-engine world, as a small value (``WorldView``): the settings in
force and which instances are ejected, being replaced, in rotation.

A live run whose minutes are computed in a worker process (web/workers.py) keeps its world there; the server's
copy of the run holds this view instead, refreshed after every minute, so an action is checked where it is
logged against the state it will apply to (``Simulation.check_action``) without the world crossing processes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["WorldView"]


@dataclass(frozen=True)
class WorldView:
    settings: dict[str, Any]  # every setting the world holds, by name (settings.world_settings)
    ejected: tuple[bool, ...]  # per serving instance
    replacing: tuple[bool, ...]
    rotating: tuple[int, ...]  # the serving instances registered and not ejected

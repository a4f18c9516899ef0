"""The engines, prepared in the background when the console starts: the first use of an engine on a machine
compiles it (up to a minute), and the page says so (``GET /api/engines``) rather than look frozen."""

from __future__ import annotations

import logging
import threading
from typing import Any

from fastapi import APIRouter, Request

from oncallsim.model.engine import ENGINES, prepare

__all__ = ["EngineWarmer", "router"]

log = logging.getLogger("oncallsim.web")
router = APIRouter(prefix="/api")


class EngineWarmer:
    """Prepares every engine on a background thread each; ``ready`` says which are."""

    def __init__(self) -> None:
        self.ready = dict.fromkeys(ENGINES, False)
        self.failed: dict[str, str] = {}

    def start(self) -> None:
        for name in ENGINES:
            threading.Thread(target=self._prepare, args=(name,), name=f"prepare-{name}", daemon=True).start()

    def _prepare(self, name: str) -> None:
        try:
            prepare(ENGINES[name])
        except Exception as exc:  # a broken engine must not take the console down; it is logged and shown
            log.exception("preparing the %s engine failed", name)
            self.failed[name] = type(exc).__name__
            return
        self.ready[name] = True


@router.get("/engines")
async def engines(request: Request) -> list[dict[str, Any]]:
    warmer: EngineWarmer = request.app.state.engines
    return [{"name": name, "ready": warmer.ready[name], "failed": warmer.failed.get(name)} for name in ENGINES]

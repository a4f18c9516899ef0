"""The engines as the console sees them: loaded here, or being prepared by a preparer process (``readiness``).

The server never compiles an engine itself: compiling holds numba's compiler lock for as long as it takes, and
the live runs, pages and debriefs of this process would wait behind it. At start-up it starts a preparer for
what is not compiled yet, and a watcher thread loads each engine from the cache as soon as the preparer has
put it there (well under a second). Until then a run on that engine waits, and its page shows how far the
preparation is (``GET /api/engines``, and the ``preparing`` field of a run's state).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from fastapi import APIRouter, Request

from oncallsim.model.engine import PREPARED_PARTS, prepare_part
from oncallsim.readiness import RESPAWN_AFTER_S, Readiness, start_preparer, status

__all__ = ["EngineWarmer", "router"]

log = logging.getLogger("oncallsim.web")
router = APIRouter(prefix="/api")
WATCH_EVERY_S = 0.5
MAX_RESPAWNS = 2  # preparers that ended without a marker before the server compiles itself, as a last resort


class EngineWarmer:
    """Which engines this process has loaded; the others' preparation, read from the preparer's files."""

    def __init__(self) -> None:
        self.loaded = dict.fromkeys(PREPARED_PARTS, False)
        self.failed: dict[str, str] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._watch, name="engines", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def readiness(self, name: str) -> Readiness:
        """The engine's state for a page: ready only once this process has loaded it."""
        if self.loaded.get(name):
            return Readiness(name, "ready", 1.0, 0.0)
        if name in self.failed:
            return Readiness(name, "failed", message=self.failed[name])
        return status(name)  # compiled already: the watcher loads it, or the run's first minute does (< 1 s)

    def _watch(self) -> None:
        """Start a preparer for what is missing; load each engine once it is compiled (minute first). Where no
        preparer can start (no process may be spawned), or none can fill the cache, it compiles here, as a last
        resort, and says so in the log."""
        spawned = time.monotonic()
        respawns = 0
        here = not self._spawn(None)
        order = PREPARED_PARTS  # minute first: it is quick and most runs need it; a graph's chain last
        while not self._stop.is_set():
            pending = [name for name in order if not self.loaded[name] and name not in self.failed]
            if not pending:
                return
            for name in pending:
                now = status(name)
                if now.ready or here:
                    self._load(name)
                elif now.state == "failed":
                    log.error("preparing the %s engine failed: %s (oncallsim prepare tries again)", name, now.message)
                    self.failed[name] = now.message
                elif now.state == "missing" and time.monotonic() - spawned > RESPAWN_AFTER_S:
                    respawns += 1  # the preparer ended without finishing (killed, or it cannot write the cache)
                    here = respawns > MAX_RESPAWNS or not self._spawn(name)
                    spawned = time.monotonic()
                break  # one engine at a time, in order
            self._stop.wait(WATCH_EVERY_S)

    def _spawn(self, name: str | None) -> bool:
        try:
            start_preparer([name] if name else list(PREPARED_PARTS))
        except OSError as exc:
            log.warning("cannot start the engines' preparer (%s): compiling in the server instead", exc)
            return False
        return True

    def _load(self, name: str) -> None:
        try:
            prepare_part(name)  # from the cache: well under a second (compiled here only as a last resort)
        except Exception as exc:  # a broken engine must not take the console down: it is logged and shown
            log.exception("loading the %s engine failed", name)
            self.failed[name] = f"{type(exc).__name__}: {exc}"
            return
        self.loaded[name] = True


@router.get("/engines")
async def engines(request: Request) -> list[dict[str, Any]]:
    """Each engine (and the chain of services): ready, or how far its preparation is (share done, an estimate of
    the seconds left)."""
    warmer: EngineWarmer = request.app.state.engines
    return [warmer.readiness(name).to_dict() for name in PREPARED_PARTS]

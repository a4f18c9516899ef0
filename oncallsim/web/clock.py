"""The simulated clocks of the live runs: one ticker per speed steps every running run of that speed together
(one timer for hundreds of runs), and the background tasks the console keeps until they end. A run's failure
ends that run's minute and pauses it (its viewers told); the ticker and the other runs go on. A run a worker
process holds (a request-engine run, web/workers.py) is only asked for its minute here: the loop never waits
for it, and a run that cannot keep up misses ticks rather than holding the others."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from oncallsim.store import RunStore
from oncallsim.web.pacing import minute_seconds

if TYPE_CHECKING:
    from oncallsim.web.live import LiveRun

__all__ = ["Clock", "spawn"]

log = logging.getLogger("oncallsim.web")
_background: set[asyncio.Task[Any]] = set()


def spawn(coro: Coroutine[Any, Any, Any], name: str | None = None) -> asyncio.Task[Any]:
    """``create_task`` whose task is kept until it ends (the loop holds only a weak reference) and whose
    failure is logged instead of lost."""
    task = asyncio.get_running_loop().create_task(coro, name=name)
    _background.add(task)

    def done(t: asyncio.Task[Any]) -> None:
        _background.discard(t)
        if not t.cancelled() and t.exception() is not None:
            log.error("background task %s failed", t.get_name(), exc_info=t.exception())

    task.add_done_callback(done)
    return task


class Clock:
    """The simulated clocks of all live runs: one ticker per speed steps every running run of that speed in the
    same loop iteration (one timer for hundreds of runs instead of one each), writes their positions in one
    transaction, and records how late each minute was computed (``lateness``: (when, seconds) pairs)."""

    def __init__(self, store: RunStore) -> None:
        self.store = store
        self.groups: dict[int, dict[str, LiveRun]] = {}
        self.tickers: dict[int, asyncio.Task[None]] = {}
        self.lateness: deque[tuple[float, float]] = deque(maxlen=500_000)

    def update(self, run: LiveRun) -> None:
        """Put the run where its state says: ticking at its speed, or nowhere (paused, done)."""
        self.remove(run)
        if run.paused or run.done:
            return
        self.groups.setdefault(run.speed, {})[run.id] = run
        if run.speed not in self.tickers:
            self.tickers[run.speed] = spawn(self._tick(run.speed), name=f"clock-{run.speed}x")

    def remove(self, run: LiveRun) -> None:
        for group in self.groups.values():
            group.pop(run.id, None)

    async def stop(self) -> None:
        tickers, self.tickers = list(self.tickers.values()), {}
        for task in tickers:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _tick(self, speed: int) -> None:
        loop = asyncio.get_running_loop()
        interval = minute_seconds(speed)
        due = loop.time() + interval
        try:
            while self.groups.get(speed):
                delay = due - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                progress: list[tuple[str, int]] = []
                for run in list(self.groups.get(speed, {}).values()):
                    if run.paused or run.done or run.speed != speed:
                        continue
                    if run.remote is not None:  # its minute is computed by a worker process, never here
                        run.remote_tick(due)
                        continue
                    if run._writing.locked():  # an action is being written: this run steps right after it
                        spawn(run._advance_after_write(due), name=f"late-{run.id}")
                        continue
                    try:  # one run's failure is its own (``LiveRun.tick`` pauses it and says so), never the clock's
                        if run.tick(progress):
                            run._note_lateness(loop.time() - due)
                    except Exception:
                        log.exception("run %s: its minute failed", run.id)
                        self.remove(run)
                if progress:
                    spawn(self.store.write(self.store.set_progress_many, progress), name="progress")
                due += interval
                if loop.time() - due > 1.0:  # a second behind: start afresh rather than race to catch up
                    due = loop.time()
        finally:
            if self.tickers.get(speed) is asyncio.current_task():
                del self.tickers[speed]

"""Live runs: the server owns the simulated clock (the model knows none; this driver adds real time).

Every action is validated, written to the run's log in SQLite, and only then queued for the next minute.
A run with nobody watching pauses; a run not in memory is rebuilt by replaying its log.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from typing import Any

from oncallsim.debrief import Report
from oncallsim.model import InvalidInput
from oncallsim.model.controls import coerce_control_value
from oncallsim.policies import debrief
from oncallsim.simulation import Action, RunFile, Simulation, load_actions
from oncallsim.store import RunStore

__all__ = ["SPEEDS", "LiveRun", "RunManager"]

SPEEDS = (1, 2, 4, 8, 16)  # simulated minutes per wall second
# How often the position is written between pauses and actions. The action log is the truth (a replay goes at
# least to the last action's minute); a restart may resume a few quiet minutes earlier, never with a lost input.
PROGRESS_EVERY_MIN = 15


def check_speed(speed: Any) -> int:
    if isinstance(speed, bool) or speed not in SPEEDS:
        raise InvalidInput("speed", f"must be one of {', '.join(map(str, SPEEDS))} (minutes per second), got {speed!r}")
    return int(speed)


class LiveRun:
    def __init__(
        self,
        run_id: str,
        sim: Simulation,
        store: RunStore,
        speed: int,
        paused: bool,
        on_finish: Callable[[LiveRun], None] | None = None,
    ) -> None:
        self.id = run_id
        self.sim = sim
        self.store = store
        self.speed = speed
        self.paused = True
        # who holds the clock still: the operator ("user"), or nobody watching ("idle": resumes on connect)
        self.held_by = "user" if paused else "idle"
        self.pending: list[Action] = []
        self.subscribers: set[asyncio.Queue[str]] = set()
        self.report: Report | None = None
        self.max_lag_s = 0.0
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._on_finish = on_finish

    # --- what the browser sees ---------------------------------------------------------------------------

    @property
    def done(self) -> bool:
        return self.sim.done

    def state(self) -> dict[str, Any]:
        controls = self.sim.state.controls
        return {
            "type": "state",
            "paused": self.paused,
            "speed": self.speed,
            "done": self.done,
            "minute": self.sim.minute,
            "length": self.sim.length,
            "clock": self.sim.plan.clock(self.sim.minute),
            "controls": {
                "floor": controls.floor,
                "autoscaler": controls.autoscaler,
                "target_utilization": controls.target_utilization,
                "ttl_s": controls.ttl_s,
                "shed_share": controls.shed_share,
                "recommendations": controls.recommendations,
            },
            "pending": [a.to_dict() for a in self.pending],
        }

    def snapshot(self) -> dict[str, Any]:
        return {
            "type": "snapshot",
            "run": {
                "id": self.id,
                "scenario": self.sim.scenario.id,
                "title": self.sim.scenario.title,
                "seed": self.sim.seed,
                "start": self.sim.plan.clock(0),
            },
            "records": [r.to_dict() for r in self.sim.timeline],
            "actions": [a.to_dict() for a in self.sim.actions],
            "state": self.state(),
        }

    def broadcast(self, message: dict[str, Any]) -> None:
        """Serialized once, however many viewers."""
        if not self.subscribers:
            return
        text = json.dumps(message)
        for queue in list(self.subscribers):
            queue.put_nowait(text)

    def subscribe(self) -> asyncio.Queue[str]:
        """A new viewer; a run held only because nobody watched starts (again) now."""
        queue: asyncio.Queue[str] = asyncio.Queue()
        self.subscribers.add(queue)
        if self.paused and self.held_by == "idle" and not self.done:
            self.paused = False
            self._wake.set()
        return queue

    def unsubscribe(self, queue: asyncio.Queue[str]) -> None:
        self.subscribers.discard(queue)
        if not self.subscribers and not self.paused and not self.done:
            self.pause(held_by="idle")  # nobody watching: the clock stops where it is

    # --- the operator's inputs ---------------------------------------------------------------------------

    def act(self, control: Any, value: Any = None) -> Action:
        """Validate, log, then queue for the next minute; an invalid action raises and changes nothing."""
        if self.done:
            raise InvalidInput("run", "the run is over")
        if not isinstance(control, str):
            raise InvalidInput("control", f"must be a control name, got {control!r}")
        action = Action(self.sim.minute, control, coerce_control_value(control, value))
        self.store.append_actions(self.id, [action])
        self.pending.append(action)
        self.broadcast({"type": "ack", "action": action.to_dict()})
        return action

    def pause(self, held_by: str = "user") -> None:
        self.paused = True
        self.held_by = held_by
        self.store.set_progress(self.id, self.sim.minute, self.speed)
        if held_by == "user":
            self.store.set_held(self.id, True, self.sim.minute)
        self._changed()

    def resume(self) -> None:
        if self.done:
            raise InvalidInput("run", "the run is over")
        self.paused = False
        self.store.set_held(self.id, False, self.sim.minute)
        self._changed()

    def set_speed(self, speed: Any) -> None:
        self.speed = check_speed(speed)
        self.store.set_progress(self.id, self.sim.minute, self.speed)
        self._changed()

    def step_once(self) -> None:
        """Advance one minute (while paused)."""
        if self.done:
            raise InvalidInput("run", "the run is over")
        if not self.paused:
            raise InvalidInput("step", "pause the run first")
        self.advance()

    def _changed(self) -> None:
        self._wake.set()
        self.broadcast(self.state())

    # --- the clock -------------------------------------------------------------------------------------

    def start(self) -> None:
        if self._task is None and not self.done:
            self._task = asyncio.get_running_loop().create_task(self._tick(), name=f"run-{self.id}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _tick(self) -> None:
        loop = asyncio.get_running_loop()
        due = loop.time()
        while not self.done:
            if self.paused:
                self._wake.clear()
                await self._wake.wait()
                due = loop.time() + 1.0 / self.speed
                continue
            delay = due - loop.time()
            if delay > 0:
                self._wake.clear()
                try:
                    await asyncio.wait_for(self._wake.wait(), delay)
                    due = loop.time() + 1.0 / self.speed  # paused, resumed or re-timed: start a fresh interval
                    continue
                except TimeoutError:
                    pass
            self.max_lag_s = max(self.max_lag_s, loop.time() - due)
            self.advance()
            due += 1.0 / self.speed
        await self._finish()

    def advance(self) -> None:
        actions, self.pending = self.pending, []
        record = self.sim.step(actions)
        if self.sim.minute % PROGRESS_EVERY_MIN == 0:
            self.store.set_progress(self.id, self.sim.minute)
        self.broadcast({"type": "minute", "record": record.to_dict(), "state": self.state()})
        if self.done:
            if self._task is None:
                asyncio.get_running_loop().create_task(self._finish())
            else:
                self._wake.set()  # the ticker leaves its loop and finishes the run

    async def _finish(self) -> None:
        if self.report is not None:
            return
        self.report = await asyncio.to_thread(debrief, self.sim)
        self.store.finish(self.id, self.sim.minute, self.report.model_dump(mode="json"))
        self.broadcast({"type": "finished", "debrief_url": f"/runs/{self.id}/debrief", "state": self.state()})
        if self._on_finish is not None:
            self._on_finish(self)


class RunManager:
    """The live runs in memory, backed by the store; rebuilds any run from its log on demand."""

    def __init__(self, store: RunStore) -> None:
        self.store = store
        self.runs: dict[str, LiveRun] = {}

    async def create(self, sim: Simulation, speed: int, paused: bool = False) -> LiveRun:
        speed = check_speed(speed)
        run_id = self.store.create_run(sim.run_file(), speed=speed)
        if paused:
            self.store.set_held(run_id, True, 0)
        live = LiveRun(run_id, sim, self.store, speed, paused)
        self.runs[run_id] = live
        live.start()
        return live

    async def import_run(self, run: RunFile) -> str:
        """A run file uploaded for replay: stored as a finished run with its debrief."""
        sim = Simulation.replay(run)
        run_id = self.store.create_run(sim.run_file(), status="live")
        report = await asyncio.to_thread(debrief, sim)
        self.store.finish(run_id, sim.minute, report.model_dump(mode="json"))
        return run_id

    def get(self, run_id: str) -> LiveRun | None:
        live = self.runs.get(run_id)
        if live is not None:
            return live
        row = self.store.get(run_id)
        if row is None:
            return None
        run = row.run_file
        sim = Simulation.from_run_file(run)
        logged = load_actions(run.actions)
        sim.run(logged, until=run.played)
        # a run the operator paused stays paused; any other waits for someone to watch
        live = LiveRun(run_id, sim, self.store, row.speed, paused=row.held)
        live.pending = [a for a in logged if a.minute >= sim.minute]  # logged, not yet applied
        if row.status == "finished" and row.summary is not None:
            live.report = Report.model_validate(row.summary)
        self.runs[run_id] = live
        if not sim.done:
            live.start()
        elif live.report is None:
            asyncio.get_running_loop().create_task(live._finish())
        return live

    async def shutdown(self) -> None:
        for live in list(self.runs.values()):
            if not live.done:
                self.store.set_progress(live.id, live.sim.minute, live.speed)
            await live.stop()

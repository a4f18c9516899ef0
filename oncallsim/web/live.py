"""Live runs: the server owns the simulated clock (the model knows none; this driver adds real time).

Every action is validated, written to the run's log in SQLite (on the store's writer thread; the write is on
disk when it returns), and only then acknowledged and queued for the next minute. The clock waits for an
action being written, so the action applies to the minute it is stamped with. A run with nobody watching
pauses; a run not in memory is rebuilt by replaying its log (off the event loop).

CPU work (the debrief and its counterfactuals, a replay) runs in worker processes (web/workers.py) when the
manager has them, else on worker threads, once per run; its results are kept in the store. A request-engine
run's minutes are computed in a worker process too (``LiveRun.remote``): the clock asks, the run's mirror takes
the minute on when it comes, and a run its worker cannot keep at its speed plays slower and says so (``slowed``);
a game-day room's run (web/gameday.py ``RoomRun``) is held the same way (``LiveRun.hold``).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections import deque
from collections.abc import Awaitable, Callable
from functools import cache
from typing import Any

import orjson

from oncallsim.alerting.pagerduty import Pager
from oncallsim.cliff.point import trigger_ratio
from oncallsim.cliff.trigger import scenario_trigger
from oncallsim.cliff.zone import gauge as cliff_gauge
from oncallsim.debrief import Report, make_report
from oncallsim.debrief.charts import debrief_figure
from oncallsim.model import CONTROL_SPECS, MODEL_VERSION, MODEL_VERSIONS, SETTINGS, InvalidInput, MinuteRecord, RunPlan
from oncallsim.model.chain.controls import service_settings
from oncallsim.model.controls import WORLD_SETTINGS
from oncallsim.model.engine import parts_for
from oncallsim.model.events import Event
from oncallsim.policies import counterfactuals
from oncallsim.readiness import Readiness
from oncallsim.simulation import Action, RunFile, Simulation
from oncallsim.store import RunStore
from oncallsim.web.clock import Clock, spawn
from oncallsim.web.limits import Full, Gate, Limits
from oncallsim.web.pacing import (
    DEFAULT_DIFFICULTY,
    REALTIME,
    check_difficulty,
    check_speed_for,
    incident_kind,
    stop_for,
)
from oncallsim.web.workers import Held, Pacer, WorkerLost, Workers, job_call, job_debrief, job_import, job_rebuild

__all__ = ["EPOCH", "SPEEDS", "LiveRun", "RunManager"]

SPEEDS = (REALTIME, 1, 2, 4, 8, 16)  # simulated minutes per wall second, or a minute a minute (REALTIME)
# How often the position is written between pauses and actions. The action log is the truth (a replay goes at
# least to the last action's minute); a restart may resume a few quiet minutes earlier, never with a lost input.
PROGRESS_EVERY_MIN = 15
# At most this many actions per run in any 60 s of wall clock (an operator clicks a few a minute).
ACTIONS_PER_MINUTE = 120
# A viewer this many messages behind (a stalled tab, a client that never reads) is closed rather than buffered.
MAX_BACKLOG = 4096
# A run whose worker process ended, asked for anything meanwhile (``LiveRun.lost``; refusals.py, kind worker_lost)
WORKER_LOST = "its worker stopped; the run comes back from its log: try again"
# This server process: sent with every state, so a page that saw state 900 of the process before a restart
# follows state 3 of this one at once (the numbers start again from 1) instead of waiting for 901.
EPOCH = secrets.token_hex(6)

log = logging.getLogger("oncallsim.web")


def wire_record(
    record: MinuteRecord, plan: RunPlan, gauge: Callable[[MinuteRecord], dict[str, Any] | None] | None = None
) -> dict[str, Any]:
    """A record as the console receives it: the JSON form, its events structured (code, args, kind, text),
    its label on the time axes (``label``: the day shown on runs longer than one) and, on the request engine,
    the distance to the cliff (``cliff``: the gauge beside the burn rate)."""
    out = record.to_dict()
    if gauge is not None:
        out["cliff"] = gauge(record)
    out["label"] = plan.time_label(record.minute)
    out["events"] = [
        e.to_dict() if isinstance(e, Event) else {"code": "", "args": {}, "kind": "system", "text": e}
        for e in record.events
    ]
    return out


@cache
def _shown_controls(engine: str) -> tuple[str, ...]:
    """The settings a run of ``engine`` shows in its state message (every live minute's: looked up once)."""
    return tuple(name for name in (*SETTINGS, *WORLD_SETTINGS) if engine in CONTROL_SPECS[name].engines)


def debrief_with_figure(sim: Simulation, progress: Callable[[int, int], None] | None = None) -> tuple[Report, str]:
    """The debrief and its charts, the counterfactuals computed once for both (CPU work: call it in a thread);
    ``progress`` hears after each replay how many are done of how many."""
    others = counterfactuals(sim, progress)
    report = make_report(sim, others)
    figure = debrief_figure(
        sim.timeline,
        sim.params,
        sim.actions,
        report.latency_target_ms,
        {name: o.timeline for name, o in others.items()},
        sim.plan.graph.deadline_s * 1000.0 if sim.plan.graph is not None else None,
    )
    return report, figure.to_json().replace("</", "<\\/")


def check_speed(speed: Any) -> int:
    if isinstance(speed, bool) or speed not in SPEEDS:
        raise InvalidInput(
            "speed",
            f"must be one of {', '.join(map(str, SPEEDS))} (minutes per second; {REALTIME}: real time, a minute a "
            f"minute), got {speed!r}",
            "choice",
            allowed=SPEEDS,
            got=speed,
        )
    return int(speed)


class LiveRun:
    max_backlog = MAX_BACKLOG  # a viewer's queue beyond this is closed (a game-day room's seats too)
    held_as = "run:"  # its key in the workers (``hold``): a room's id is drawn apart from the runs' ids

    def __init__(
        self,
        run_id: str,
        sim: Simulation,
        store: RunStore,
        speed: int,
        paused: bool,
        on_finish: Callable[[LiveRun], None] | None = None,
        clock: Clock | None = None,
        difficulty: str = DEFAULT_DIFFICULTY,
        engine_state: Callable[[str], Readiness] | None = None,
        pager: Pager | None = None,
    ) -> None:
        self.id = run_id
        self.pager = pager  # the server's PagerDuty, if it was given one: the built-in page's trigger and resolve
        # whether the run's engine is loaded in this process (None: always); until it is, the clock waits and
        # the state says how far its preparation is (web/engines.py)
        self.engine_state = engine_state
        self.preparing: dict[str, Any] | None = None
        self._preparing_said = -1.0
        self.difficulty = check_difficulty(difficulty)
        self.incident = incident_kind(sim.plan)
        self.pause_reason: str | None = None  # why the clock stopped on its own (guided): "page", "incident"
        self.ended: str | None = None  # "ended" early (debriefed where it stands) or "abandoned" (no debrief)
        self.sim = sim
        self.store = store
        self.speed = speed
        self.paused = True
        # who holds the clock still: the operator ("user"), or nobody watching ("idle": resumes on connect)
        self.held_by = "user" if paused else "idle"
        self.pending: list[Action] = []
        self.subscribers: set[asyncio.Queue[str | None]] = set()
        self.report: Report | None = None
        self.figure_json: str | None = None
        self.model_version = MODEL_VERSION  # a stored run of another model version is flagged, not hidden
        self.max_lag_s = 0.0
        # each state message is numbered (within this process's ``EPOCH``): a browser never shows an older state
        # over a newer one
        self.seq = 0
        self._writing = asyncio.Lock()  # the clock does not advance while an action is being written
        self._recent_actions: deque[float] = deque()
        self._finishing: asyncio.Task[None] | None = None
        self.clock = clock or Clock(store)
        self._on_finish = on_finish
        # the distance to the cliff (request engine): a trigger like the scenario's own brownout, its capacity
        # measured once by a pilot run off the event loop, when the engine is loaded (cliff/point.py)
        request = sim.engine.name == "request"
        self.cliff_trigger = scenario_trigger(sim.scenario) if request else None
        self.cliff_ratio: float | None = None
        self._measuring: asyncio.Task[None] | None = None
        self.gauge = self._gauge if request else None
        self.client = ""  # who created it (the limits per client); "" for a run rebuilt from the store
        self.last_used = time.monotonic()  # last watched or asked for: what nobody uses leaves memory
        # a request-engine run held by a worker process (its minutes computed there; ``sim`` is its mirror),
        # and the server's workers for its debrief and pilot run (None: threads here)
        self.remote: Held | None = None
        self.workers: Workers | None = None
        self._stepping: asyncio.Task[None] | None = None
        self.pacer = Pacer()
        self._warm = False  # a minute computed by its worker already
        self.on_lost: Callable[[LiveRun], None] | None = None  # its worker process ended (RunManager._lost)
        # its worker process ended: this object is stale (the run comes back from its log as another one); a
        # frame a socket still reads meanwhile is refused, never written to the log behind the new one's back
        self.lost = False

    async def hold(self, workers: Workers | None, on_lost: Callable[[LiveRun], None]) -> bool:
        """Where the run's minutes are computed, for the console's runs and the game-day rooms alike: with the
        server's workers, a request-engine run that is not over goes to a live worker process (``remote``; its
        world stays there, ``sim`` becomes its mirror) and ``on_lost`` is called if that process ends; its
        debrief and pilot run go to the heavy workers. A minute-engine run's minutes stay here (a minute of the
        formulas is cheap: microseconds, on the clock's tick). Whether the run went to a worker."""
        self.workers, self.on_lost = workers, on_lost
        if workers is None or self.sim.engine.name != "request" or self.done or self.remote is not None:
            return False
        self.remote = await workers.hold(self.held_as + self.id, self.sim)
        self.sim = self.remote.mirror
        return True

    async def inject(self, event: dict[str, Any]) -> Any:
        """A scenario event added to the running run (a game day's fault, ``Simulation.inject``): checked and
        added here (a refusal changes nothing), then to the run its worker holds, so the next minute — computed
        there — has it; the caller holds ``_writing`` (no minute under way). A worker that fails to take it
        (ended) loses the run as a failed minute does (``on_lost``: it comes back from its log, without the
        fault, which was not written); the caller is told to try again."""
        added = self.sim.inject(event)
        if self.remote is not None:
            try:
                await self.remote.inject(event)
            except Exception as exc:
                log.error("run %s: its worker did not take the injected event", self.id, exc_info=exc)
                self.lost = True  # refuses everything from now on; the viewers are told and disconnected just after
                if self.on_lost is not None:  # this refusal, so the one who injected reads it before the reconnect
                    asyncio.get_running_loop().call_soon(self.on_lost, self)
                raise InvalidInput("run", WORKER_LOST, "worker_lost") from exc
        return added

    def _gauge(self, record: MinuteRecord) -> dict[str, Any] | None:
        minutes = self.cliff_trigger.minutes if self.cliff_trigger is not None else 0
        return cliff_gauge(record, self.sim.params, self.cliff_ratio, minutes)

    def _measure_trigger(self) -> None:
        """Start measuring the trigger's capacity (once; the engine is loaded: no compile waits on it)."""
        if self.cliff_trigger is None or self._measuring is not None:
            return
        trigger = self.cliff_trigger

        async def measure() -> None:
            args = (self.sim.scenario, self.sim.overrides, trigger)
            try:
                if self.workers is not None:
                    self.cliff_ratio = await self.workers.call(job_call, trigger_ratio, *args)
                else:
                    self.cliff_ratio = await asyncio.to_thread(trigger_ratio, *args)
            except Exception:  # the gauge then says nothing of the trigger; the run goes on
                log.exception("run %s: the cliff gauge's trigger could not be measured", self.id)

        self._measuring = spawn(measure(), name=f"cliff-{self.id}")

    # --- what the browser sees ---------------------------------------------------------------------------

    @property
    def done(self) -> bool:
        """Over: played to its end, ended early by the player (debriefed), or abandoned (not debriefed)."""
        return self.sim.done or self.ended is not None

    def state(self) -> dict[str, Any]:
        controls = self.sim.state.controls
        self.seq += 1
        return {
            "type": "state",
            "epoch": EPOCH,
            "seq": self.seq,
            "paused": self.paused,
            "pause_reason": self.pause_reason,
            "difficulty": self.difficulty,
            "incident": self.incident,
            "speed": self.speed,
            "done": self.done,
            "ended": self.ended,
            "minute": self.sim.minute,
            "length": self.sim.length,
            "clock": self.sim.plan.clock(self.sim.minute),
            "controls": {name: getattr(controls, name) for name in _shown_controls(self.sim.engine.name)},
            # a chain's services: their settings in force (as declared, then as the log changed them)
            "services": None
            if self.sim.plan.graph is None
            else service_settings(self.sim.plan.graph, ((a.control, a.value) for a in self.sim.actions)),
            "pending": [a.to_dict() for a in self.pending],
            "preparing": self.preparing,
            # the speed it actually plays at when the server cannot keep it at its own (web/workers.py)
            "slowed": self.pacer.slowed,
        }

    async def snapshot_text(self) -> str:
        """The snapshot as JSON, serialized off the event loop (a 7-day run is 10,080 records): the lists are
        copied here, at this minute, and the records (immutable) encoded on a worker thread."""
        timeline, actions, state = list(self.sim.timeline), list(self.sim.actions), self.state()

        def encode() -> str:
            return orjson.dumps(self.snapshot(timeline, actions, state)).decode()

        return await asyncio.to_thread(encode)

    def snapshot(
        self,
        timeline: list[Any] | None = None,
        actions: list[Action] | None = None,
        state: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        timeline = self.sim.timeline if timeline is None else timeline
        actions = self.sim.actions if actions is None else actions
        return {
            "type": "snapshot",
            "run": {
                "id": self.id,
                "scenario": self.sim.scenario.id,
                "title": self.sim.scenario.title,
                "seed": self.sim.seed,
                "start": self.sim.plan.clock(0),
                "model_version": self.model_version,
                "current_model": self.model_version in MODEL_VERSIONS,  # replayed by its own version's rules
            },
            "records": [wire_record(r, self.sim.plan, self.gauge) for r in timeline],
            "actions": [a.to_dict() for a in actions],
            "state": self.state() if state is None else state,
        }

    def broadcast(self, message: dict[str, Any]) -> None:
        """Serialized once, however many viewers."""
        if not self.subscribers:
            return
        text = orjson.dumps(message).decode()  # ~15x json.dumps: a third of a live minute's cost was encoding
        for queue in list(self.subscribers):
            if queue.qsize() >= self.max_backlog:  # a viewer that does not read: dropped (a reconnect gets a snapshot)
                self.subscribers.discard(queue)
                queue.put_nowait(None)
                continue
            queue.put_nowait(text)

    def subscribe(self) -> asyncio.Queue[str | None]:
        """A new viewer; a run held only because nobody watched starts (again) now."""
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        self.subscribers.add(queue)
        if self.paused and self.held_by == "idle" and not self.done:
            self.paused = False
            self.clock.update(self)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[str | None]) -> None:
        self.subscribers.discard(queue)
        if not self.subscribers and not self.paused and not self.done:
            # nobody watching: the clock stops where it is
            self.paused = True
            self.held_by = "idle"
            self._changed()
            self.background_write(self.store.set_progress, self.id, self.sim.minute, self.speed)

    # --- the operator's inputs ---------------------------------------------------------------------------

    def _check_rate(self) -> None:
        now = time.monotonic()
        while self._recent_actions and now - self._recent_actions[0] > 60.0:
            self._recent_actions.popleft()
        if len(self._recent_actions) >= ACTIONS_PER_MINUTE:
            raise InvalidInput(
                "action",
                f"at most {ACTIONS_PER_MINUTE} actions per run per minute; wait a moment",
                "rate",
                n=ACTIONS_PER_MINUTE,
            )
        self._recent_actions.append(now)

    async def act(self, control: Any, value: Any = None) -> Action:
        """Validate, log (on disk), then acknowledge and queue for the next minute; an invalid action raises
        and changes nothing."""

        async def write(action: Action) -> None:
            await self.store.write(self.store.append_actions, self.id, [action])

        action = await self.take(control, value, write)
        self.broadcast({"type": "ack", "action": action.to_dict()})
        return action

    async def take(self, control: Any, value: Any, write: Callable[[Action], Awaitable[Any]]) -> Action:
        """Every surface's way in (the console's ``act``, a game-day room's): the action checked by
        ``Simulation.check_action`` against the run's state, the rate limit, then — the clock held — checked
        again against the state it will apply to, written by ``write`` (on disk) and queued for the next
        minute. Nothing refused is written or queued, so nothing refused reaches the clock."""
        self._open()
        self.sim.check_action(control, value)  # refused at once, before the rate limit counts it
        self._check_rate()
        async with self._writing:
            self._open()
            action = self.sim.check_action(control, value)  # a minute may have passed while this waited
            await write(action)
            self.pending.append(action)
        return action

    def _open(self) -> None:
        if self.lost:
            raise InvalidInput("run", WORKER_LOST, "worker_lost")
        if self.done:
            raise InvalidInput("run", "the run is over", "run_over")

    async def pause(self, held_by: str = "user") -> None:
        self._open()  # an over run's clock is still: nothing to pause, nothing to write over its end
        self.paused = True
        self.held_by = held_by
        self._changed()
        await self.store.write(self.store.set_progress, self.id, self.sim.minute, self.speed)
        if held_by == "user":
            await self.store.write(self.store.set_held, self.id, True, self.sim.minute)

    async def resume(self) -> None:
        self._open()
        self.paused = False
        self.pause_reason = None
        self._changed()
        await self.store.write(self.store.set_held, self.id, False, self.sim.minute)

    async def set_speed(self, speed: Any) -> None:
        self._open()
        check_speed_for(self.difficulty, check_speed(speed))
        self.speed = speed
        self.pacer.reset()
        self._changed()
        await self.store.write(self.store.set_progress, self.id, self.sim.minute, self.speed)

    async def end(self, how: str = "ended") -> None:
        """The player ends the run where it stands: "ended" is debriefed on the minutes played (the
        counterfactuals stop there too); "abandoned" is kept and listed without a debrief."""
        if self.done:
            raise InvalidInput("run", "the run is over", "run_over")
        async with self._writing:
            self.ended = how
            self.paused = True
            self.clock.remove(self)
            if self.remote is not None:
                self.remote.release()  # nothing steps it again: the world leaves its worker
            if how == "abandoned":
                await self.store.write(self.store.abandon, self.id, self.sim.minute)
                self.broadcast({"type": "finished", "debrief_url": None, "state": self.state()})
            else:
                await self.store.write(self.store.set_progress, self.id, self.sim.minute)
                self.broadcast(self.state())
                self._over()

    async def step_once(self) -> None:
        """Advance one minute (while paused)."""
        if self.lost:
            raise InvalidInput("run", WORKER_LOST, "worker_lost")
        if self.done:
            raise InvalidInput("run", "the run is over", "run_over")
        if not self.paused:
            raise InvalidInput("step", "pause the run first", "pause_first")
        if self.remote is not None:
            await self._remote_minute(None, paused_too=True)
            return
        async with self._writing:
            self.tick()

    def _changed(self) -> None:
        self.clock.update(self)
        self.broadcast(self.state())

    # --- the clock -------------------------------------------------------------------------------------

    def start(self) -> None:
        """Join the clock of this run's speed (when it is running); see ``Clock``."""
        self.clock.update(self)

    async def stop(self) -> None:
        """Off the clock for good (the server stops, the run is deleted, a room leaves memory): the world it
        held in a worker process leaves it too (a room rebuilt later is held afresh)."""
        self.clock.remove(self)
        if self.remote is not None:
            self.remote.release()

    def _note_lateness(self, late_s: float) -> None:
        self.max_lag_s = max(self.max_lag_s, late_s)
        self.clock.lateness.append((time.monotonic(), late_s))

    async def _advance_after_write(self, due: float) -> None:
        async with self._writing:
            if not (self.paused or self.done):
                self.tick()
                self._note_lateness(asyncio.get_running_loop().time() - due)

    def tick(self, progress: list[tuple[str, int]] | None = None) -> bool:
        """``advance``, its failure this run's alone: logged, the run paused where it stands, and its viewers
        told; the clock (and every other run on it) goes on. Whether the minute was computed."""
        try:
            self.advance(progress)
        except Exception as exc:
            self._failed(exc)
            return False
        return True

    def _failed(self, exc: Exception) -> None:
        log.error("run %s stopped at minute %d", self.id, self.sim.minute, exc_info=exc)
        self.paused, self.held_by = True, "user"
        self.clock.remove(self)
        self.background_write(self.store.set_held, self.id, True, self.sim.minute)
        reason = str(exc) if isinstance(exc, InvalidInput) else "internal error (in the server's log)"
        clock = self.sim.plan.clock(self.sim.minute)
        self.broadcast({"type": "error", "field": "run",
                        "message": f"run: stopped at {clock}: {reason}; paused (resume to go on)"})  # fmt: skip
        self.broadcast(self.state())

    def advance(self, progress: list[tuple[str, int]] | None = None) -> None:
        """Compute the next minute with the pending actions; the position is written every few minutes (into
        ``progress`` when the clock writes many runs' positions at once)."""
        if self.engine_state is not None and self._waits_for_engine():
            return
        self._measure_trigger()
        actions, self.pending = self.pending, []
        record = self.sim.step(actions)
        self._after_minute(record, progress)

    def remote_tick(self, due: float) -> None:
        """The clock's tick for a run a worker holds: its next minute asked for, unless the last is still being
        computed (the run misses this tick: it is slowed, and its state says so)."""
        started = self._stepping is None or self._stepping.done()
        # the first minute in a fresh worker loads the engine (a second or so): not a sign of a busy machine
        if self._warm and self.pacer.tick(started, self.speed):
            self.broadcast(self.state())
        if started:
            self._stepping = spawn(self._remote_minute(due), name=f"minute-{self.id}")

    async def _remote_minute(self, due: float | None, paused_too: bool = False) -> None:
        """One minute computed by the run's worker, the actions held meanwhile (an action is checked against the
        state it applies to); a failure is this run's alone (``_failed``)."""
        assert self.remote is not None
        async with self._writing:
            if self.done or (self.paused and not paused_too):
                return
            if self.engine_state is not None and self._waits_for_engine():
                return
            self._measure_trigger()
            actions, self.pending = self.pending, []
            try:
                record = await self.remote.step(actions)
            except WorkerLost:
                if self.on_lost is None:
                    raise
                self.lost = True
                self.on_lost(self)  # the run leaves memory; its log brings it back (every action in it)
                return
            except Exception as exc:
                self._failed(exc)
                return
            self._warm = True
            if due is not None and self.pacer.slowed is None:
                self._note_lateness(asyncio.get_running_loop().time() - due)
            self._after_minute(record, None)

    def _after_minute(self, record: MinuteRecord, progress: list[tuple[str, int]] | None) -> None:
        """What follows a computed minute: the page, the pacing, the position, the viewers, the end."""
        if self.pager is not None:
            self.pager.minute(self.id, self.sim.scenario.title, self.sim.timeline, self.sim.plan.clock)
        self._pace(record)
        if self.sim.minute % PROGRESS_EVERY_MIN == 0:
            if progress is not None:
                progress.append((self.id, self.sim.minute))
            else:
                self.background_write(self.store.set_progress, self.id, self.sim.minute)
        self.broadcast(
            {"type": "minute", "record": wire_record(record, self.sim.plan, self.gauge), "state": self.state()}
        )
        if self.done:
            self.clock.remove(self)
            if self.remote is not None:
                self.remote.release()  # the world leaves the worker; the mirror keeps what the debrief reads
            self._over()

    def _waits_for_engine(self) -> bool:
        """True while the run's engine (and, for a graph, its chain) is being prepared: the minute waits, and
        viewers are told how far the preparation is (at most once a second)."""
        assert self.engine_state is not None
        parts = parts_for(self.sim.engine.name, self.sim.plan.graph is not None)
        now = next((state for state in map(self.engine_state, parts) if not state.ready), None)
        if now is None:
            if self.preparing is not None:
                self.preparing = None
                self.broadcast(self.state())
            return False
        self.preparing = now.to_dict()
        clock = time.monotonic()
        if clock - self._preparing_said >= 1.0:
            self._preparing_said = clock
            self.broadcast(self.state())
        return True

    def _pace(self, record: MinuteRecord) -> None:
        """The difficulty's pacing after a minute (web/pacing.py): guided stops the clock at the incident and the
        page, normal stops it at the page and goes on at 1×, hard lets it run. The minute's own state message then
        says so."""
        if self.done or self.paused:
            return
        reason = stop_for(self.difficulty, self.sim.plan, record, bool(self.sim.scenario.incident_hint.strip()))
        if reason is None:
            return
        self.paused, self.held_by, self.pause_reason = True, "user", reason
        if self.difficulty == "normal" and self.speed > 1:
            self.speed = 1
            self.background_write(self.store.set_progress, self.id, self.sim.minute, 1)
        self.clock.update(self)
        self.background_write(self.store.set_held, self.id, True, self.sim.minute)

    def run_file(self) -> RunFile:
        """The run file, with the difficulty it was played at."""
        return self.sim.run_file().model_copy(update={"difficulty": self.difficulty})

    def background_write(self, fn: Callable[..., Any], *args: Any) -> None:
        """A write nobody waits for (the position between actions): queued on the writer thread, kept, logged."""
        spawn(self.store.write(fn, *args), name=f"write-{self.id}")

    def _over(self) -> None:
        """Over (played to the end, or ended): said at once (``over``), the debrief computed in the background
        and announced when it is ready (``finished``, with its link; 30 s and more on the request engine)."""
        self.broadcast({"type": "over", "debrief": "computing", "state": self.state()})
        self.finish_soon()

    def finish_soon(self) -> None:
        if self._finishing is None:
            self._finishing = spawn(self._finish(), name=f"finish-{self.id}")

    async def _finish(self) -> None:
        if self.report is not None:
            return
        loop = asyncio.get_running_loop()

        def progress(done: int, total: int) -> None:  # from the worker thread: the loop sends it
            message = {"type": "debrief_progress", "done": done, "total": total}
            loop.call_soon_threadsafe(self.broadcast, message)

        if self.workers is not None:
            report, self.figure_json = await self.workers.call(job_debrief, self.sim, progress=self.broadcast_progress)
        else:
            report, self.figure_json = await asyncio.to_thread(debrief_with_figure, self.sim, progress)
        self.report = report
        await self.store.write(
            self.store.finish, self.id, self.sim.minute, report.model_dump(mode="json"), self.figure_json
        )
        self.broadcast({"type": "finished", "debrief_url": f"/runs/{self.id}/debrief", "state": self.state()})
        if self._on_finish is not None:
            self._on_finish(self)

    def broadcast_progress(self, done: int, total: int) -> None:
        self.broadcast({"type": "debrief_progress", "done": done, "total": total})

    async def debrief_ready(self) -> bool:
        """Whether the debrief exists, waiting for it when the run is over and it is being computed."""
        if self.report is None and self.done and self.ended != "abandoned":
            self.finish_soon()
            assert self._finishing is not None
            await asyncio.shield(self._finishing)
        return self.report is not None

    async def figure(self) -> str:
        """The debrief's charts: computed once, off the event loop, and kept in the store."""
        if self.figure_json is None:
            if self.workers is not None:
                self.figure_json = (await self.workers.call(job_debrief, self.sim))[1]
            else:
                self.figure_json = (await asyncio.to_thread(debrief_with_figure, self.sim))[1]
            await self.store.write(self.store.set_figure, self.id, self.figure_json)
        return self.figure_json


class RunManager:
    """The live runs in memory, backed by the store; rebuilds any run from its log on demand."""

    def __init__(
        self,
        store: RunStore,
        engine_state: Callable[[str], Readiness] | None = None,
        pager: Pager | None = None,
        limits: Limits | None = None,
        workers: Workers | None = None,
    ) -> None:
        self.store = store
        self.workers = workers  # worker processes for request-engine minutes and heavy work (None: threads here)
        self.runs: dict[str, LiveRun] = {}
        self.clock = Clock(store)
        self.engine_state = engine_state  # which engines are loaded here (web/engines.py); None: all
        self.pager = pager  # where the runs' pages go (PagerDuty), if anywhere
        self.limits = limits or Limits()
        self.gate = Gate(self.limits.new_runs_per_minute, "new_runs_per_minute")
        self.evicted = 0  # runs that left memory (they stay in the store): /api/stats says how many

    def admit(self, client: str, engine: str) -> None:
        """Refuse (``Full``, a 429) a new run past a limit (web/limits.py), before anything is built for it."""
        live = [r for r in self.runs.values() if not r.done]
        limits = self.limits
        if len(live) >= limits.runs:
            raise Full("runs", 60.0, max=limits.runs)
        if engine == "request" and sum(r.sim.engine.name == "request" for r in live) >= limits.request_runs:
            raise Full("request_runs", 60.0, max=limits.request_runs)
        if client and sum(r.client == client for r in live) >= limits.runs_per_client:
            raise Full("runs_per_client", 60.0, max=limits.runs_per_client)
        self.gate.check(client)

    def _evictable(self, live: LiveRun, now: float) -> bool:
        """Nobody watches it, nothing is being written or computed for it, and it is still (paused or over)
        and untouched for the idle time of its kind."""
        if live.subscribers:
            live.last_used = now
            return False
        tasks = (live._finishing, live._stepping)  # a debrief, a worker's minute under way
        if live._writing.locked() or any(t is not None and not t.done() for t in tasks):
            return False
        if live.done:
            return live.report is not None or live.ended == "abandoned"
        return live.paused and now - live.last_used >= self.limits.idle_s

    async def evict(self, live: LiveRun) -> bool:
        """Out of memory, kept in the store (its position written first): ``get`` rebuilds it from its log
        on demand, as after a restart. False when someone came for it meanwhile."""
        if not live.done:
            await self.store.write(self.store.set_progress, live.id, live.sim.minute, live.speed)
        # someone may have come for it while the position was written
        if self.runs.get(live.id) is not live or live.subscribers or live._writing.locked():
            return False
        if not (live.done or live.paused):
            return False
        del self.runs[live.id]
        live.clock.remove(live)
        if live.remote is not None:
            live.remote.release()  # its world leaves its worker process too
        self.evicted += 1
        return True

    async def sweep(self) -> int:
        """Evict what nobody used for its idle time (finished: ``finished_s``; unfinished and paused:
        ``idle_s``), then the least recently used past ``resident``; returns how many left."""
        now = time.monotonic()
        gone = 0
        for live in list(self.runs.values()):
            wait = self.limits.finished_s if live.done else self.limits.idle_s
            if now - live.last_used >= wait and self._evictable(live, now):
                gone += await self.evict(live)
        extra = len(self.runs) - self.limits.resident
        if extra > 0:
            oldest = sorted(
                (r for r in self.runs.values() if r.done and self._evictable(r, now)), key=lambda r: r.last_used
            )
            for live in oldest[:extra]:
                gone += await self.evict(live)
        self.gate.forget_old()
        return gone

    async def create(
        self,
        sim: Simulation,
        speed: int,
        paused: bool = False,
        difficulty: str = DEFAULT_DIFFICULTY,
        player: str | None = None,
        client: str = "",
    ) -> LiveRun:
        speed = check_speed(speed)
        check_speed_for(check_difficulty(difficulty), speed)
        run_file = sim.run_file().model_copy(update={"difficulty": difficulty})
        run_id = await self.store.write(self.store.create_run, run_file, speed, "live", False, player)
        if paused:
            await self.store.write(self.store.set_held, run_id, True, 0)
        live = LiveRun(
            run_id, sim, self.store, speed, paused, clock=self.clock,
            difficulty=difficulty, engine_state=self.engine_state, pager=self.pager,
        )  # fmt: skip
        await live.hold(self.workers, self._lost)
        live.client = client
        self.gate.count(client)
        self.runs[run_id] = live
        live.start()
        return live

    async def import_run(self, sim: Simulation, difficulty: str = DEFAULT_DIFFICULTY) -> str:
        """A run file uploaded for replay (vetted and replayed by the caller, off the loop): stored as a
        finished run with its debrief, marked imported."""
        report, figure = await asyncio.to_thread(debrief_with_figure, sim)
        run_file = sim.run_file().model_copy(update={"difficulty": difficulty})
        return await self._store_import(run_file, sim.minute, report, figure)

    async def import_in_worker(self, run: RunFile, name: str) -> str:
        """A run file uploaded for replay, vetted, replayed and debriefed in a worker process (``Busy`` when
        too many wait already: nothing is stored then), then stored as ``import_run`` stores it."""
        assert self.workers is not None
        replayed, minute, report, figure = await self.workers.call(job_import, run, name, bounded=True)
        run_file = replayed.model_copy(update={"difficulty": run.difficulty})
        return await self._store_import(run_file, minute, report, figure)

    async def _store_import(self, run_file: RunFile, minute: int, report: Report, figure: str) -> str:
        run_id = await self.store.write(self.store.create_run, run_file, 1, "live", True)
        await self.store.write(self.store.finish, run_id, minute, report.model_dump(mode="json"), figure)
        return run_id

    async def get(self, run_id: str) -> LiveRun | None:
        live = self.runs.get(run_id)
        if live is not None:
            live.last_used = time.monotonic()
            return live
        if not (len(run_id) == 12 and all(c in "0123456789abcdef" for c in run_id)):
            return None
        row = await self.store.read(self.store.get, run_id)
        if row is None:
            return None
        run = row.run_file

        def rebuild() -> tuple[Simulation, list[Action]]:
            sim = Simulation.from_run_file(run)
            pending, skipped = sim.replay_log(run.actions, run.played or 0)
            for line in skipped:  # an older server logged it unchecked: the run comes back without it
                log.warning("run %s: a logged action skipped on restore: %s", run_id, line)
            return sim, pending

        if self.workers is not None:  # replayed in a worker process; a request-engine run then held by one
            over = row.status in ("finished", "abandoned")
            sim, pending, skipped = await self.workers.call(job_rebuild, run, over)
            for line in skipped:
                log.warning("run %s: a logged action skipped on restore: %s", run_id, line)
        else:
            sim, pending = await asyncio.to_thread(rebuild)
        live = self.runs.get(run_id)  # another request rebuilt it meanwhile
        if live is not None:
            return live
        # a run the operator paused stays paused; any other waits for someone to watch
        live = LiveRun(
            run_id, sim, self.store, row.speed, paused=row.held, clock=self.clock, difficulty=run.difficulty,
            engine_state=self.engine_state, pager=self.pager,
        )  # fmt: skip
        live.model_version = row.model_version
        live.pending = pending  # logged, not yet applied
        if row.status in ("finished", "abandoned") and not sim.done:
            live.ended = "ended" if row.status == "finished" else "abandoned"
        if row.status == "finished" and row.summary is not None:
            live.report = Report.model_validate(row.summary)
            live.figure_json = row.debrief_figure
        if await live.hold(self.workers, self._lost):  # an over run is not held (``done``)
            other = self.runs.get(run_id)  # another request rebuilt it while this one was sent
            if other is not None:
                assert live.remote is not None
                live.remote.release()
                return other
        self.runs[run_id] = live
        if len(self.runs) > self.limits.resident:  # many old runs asked for at once: the oldest leave
            spawn(self.sweep(), name="sweep-runs")
        if not live.done:
            live.start()
        elif live.report is None and live.ended != "abandoned":
            live.finish_soon()
        return live

    def _lost(self, live: LiveRun) -> None:
        """The worker process holding a run ended (killed, out of memory): the run leaves memory as after a
        restart, and its viewers are told and disconnected; the console reconnects and the run comes back from
        its log, every acknowledged action in it (a few quiet minutes earlier at most)."""
        log.error("run %s: its worker process ended; it comes back from its log", live.id)
        if self.runs.get(live.id) is live:
            del self.runs[live.id]
        live.clock.remove(live)
        live.broadcast({"type": "error", "field": "run", "message": "run: its worker stopped; reconnecting"})
        for queue in list(live.subscribers):
            queue.put_nowait(None)
        live.subscribers.clear()

    async def delete(self, run_id: str) -> bool:
        """A run gone for good: out of memory (its clock stopped, its viewers told) and out of the store."""
        live = self.runs.pop(run_id, None)
        if live is not None:
            await live.stop()
            if live.remote is not None:
                live.remote.release()
            live.broadcast({"type": "error", "field": "run", "message": "run: deleted"})
        return await self.store.write(self.store.delete_run, run_id)

    async def shutdown(self) -> None:
        for live in list(self.runs.values()):
            if not live.done:
                await self.store.write(self.store.set_progress, live.id, live.sim.minute, live.speed)
            await live.stop()
        await self.clock.stop()

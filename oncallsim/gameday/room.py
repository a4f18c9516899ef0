"""A game-day room: one live run shared by a facilitator and a team, its players, and its log.

The run is an ordinary live run (the web console's ``LiveRun``, made by the ``RunFactory`` the web layer passes
in: the server's clock, actions logged before they apply) whose messages go through the room: each person gets
what their role may see (a hidden fault's own events are masked from the players; its symptoms are not). Every
change is written to the store first, then applied and sent to everyone in the order it was applied. A refusal
goes to the one who sent it, and nothing changes.

Where a room's minutes are computed is the web layer's (``RunFactory.hold``): a request-engine room's in a worker
process, as a console run's; a minute-engine room's in the server's process (the formulas: microseconds a minute).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from oncallsim.debrief import Report
from oncallsim.debrief.origins import origin_parts
from oncallsim.debrief.summary import describe
from oncallsim.gameday import faults, roles, tokens
from oncallsim.gameday.postmortem import RoomFile, intervals, postmortem_markdown, team_timeline
from oncallsim.gameday.protocol import check_text
from oncallsim.model import InvalidInput
from oncallsim.scenarios.spec import Scenario
from oncallsim.simulation import Action, RunFile, Simulation
from oncallsim.store.rooms import LogEntry, RoomRow, RoomStore
from oncallsim.store.sqlite import RunStore

__all__ = ["Room", "RoomManager", "RunFactory", "Seat", "SharedRun"]

log = logging.getLogger("oncallsim.web")
_tasks: set[asyncio.Task[Any]] = set()


def _spawn(coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
    """A background task kept until it ends (the loop holds only a weak reference), its failure logged."""
    task = asyncio.get_running_loop().create_task(coro, name=name)
    _tasks.add(task)

    def done(t: asyncio.Task[Any]) -> None:
        _tasks.discard(t)
        if not t.cancelled() and t.exception() is not None:
            log.error("background task %s failed", t.get_name(), exc_info=t.exception())

    task.add_done_callback(done)
    return task


DIFFICULTY = "hard"  # no automatic pauses: the facilitator paces the exercise
MESSAGES_PER_MINUTE = 30  # a person's lines in any 60 s
LINK_MESSAGES_PER_MINUTE = 60  # everyone's who came in by one link (names are free: a link is not)
PLAYERS_PER_LINK = 8
PLAYERS_PER_ROOM = 40
# why a room back in memory is paused (its state's ``pause_reason``; the page says it in its language)
RESTORED = "restored"  # the server restarted (or the reason it had was forgotten)
WORKER_LOST = "worker_lost"  # the worker process holding its run ended (killed, out of memory): the server did not
MAX_RETURNING = 10_000  # rooms out of memory whose reason is remembered
PLAYER_KINDS = {"action", "message", "status", "join", "control", "reveal", "close"}


@dataclass(frozen=True)
class Seat:
    """Who is at the other end of a socket."""

    name: str
    role: str  # a player role or "facilitator"
    link: str = ""  # which link (token) they came in by: the facilitator's or the players'

    @property
    def facilitator(self) -> bool:
        return self.role == roles.FACILITATOR


class SharedRun(Protocol):
    """What a room needs of its live run (the web console's ``LiveRun``, whose ``broadcast`` goes to the room)."""

    id: str
    sim: Simulation
    speed: int
    pending: list[Action]
    ended: str | None
    pause_reason: str | None
    lost: bool  # its worker process ended: the room comes back from its log as another object
    report: Report | None
    figure_json: str | None
    room: Any
    max_backlog: int  # a seat this many messages behind is closed, not buffered (it reconnects to a snapshot)
    subscribers: set[asyncio.Queue[str | None]]
    _writing: asyncio.Lock

    @property
    def done(self) -> bool: ...
    async def take(self, control: Any, value: Any, write: Callable[[Action], Awaitable[Any]]) -> Action: ...
    def state(self) -> dict[str, Any]: ...
    def subscribe(self) -> asyncio.Queue[str | None]: ...
    def unsubscribe(self, queue: asyncio.Queue[str | None]) -> None: ...
    async def pause(self, held_by: str = "user") -> None: ...
    async def resume(self) -> None: ...
    async def set_speed(self, speed: Any) -> None: ...
    async def step_once(self) -> None: ...
    async def end(self, how: str = "ended") -> None: ...
    async def inject(self, event: dict[str, Any]) -> Any: ...
    async def debrief_ready(self) -> bool: ...
    def run_file(self) -> Any: ...
    def start(self) -> None: ...
    async def stop(self) -> None: ...


class RunFactory(Protocol):
    """How the web layer makes a room's live run, where its minutes are computed, how it replays a room's run
    after a restart, and how it shows a minute (its wire form)."""

    def new(self, room_id: str, sim: Simulation, store: RoomStore, speed: int, paused: bool) -> SharedRun: ...
    async def hold(self, live: SharedRun, on_lost: Callable[[], None]) -> None:
        """Hand the run's minutes to a worker process when they are heavy (the request engine); ``on_lost`` when
        that process ends. A run whose minutes are cheap stays where it is."""
        ...

    async def replay(self, run: RunFile, over: bool) -> tuple[Simulation, list[Action], list[str]]:
        """``Simulation.from_run_file`` and ``replay_log`` off the event loop: the run, the actions logged for
        the minute it stops at, the logged actions skipped."""
        ...

    def wire(self, record: Any, sim: Simulation) -> dict[str, Any]: ...
    async def stop(self) -> None: ...


class Room:
    def __init__(
        self,
        room_id: str,
        title: str,
        live: SharedRun,
        store: RoomStore,
        facilitator_hash: str,
        player_token: str,
        wire: Any,
    ) -> None:
        self.id = room_id
        self.title = title
        self.live = live
        self.wire = wire  # record → its wire form (RunFactory.wire)
        self.store = store
        self.facilitator_hash = facilitator_hash
        self.player_token = player_token
        self.players: dict[str, str] = {}  # name → role
        self.links: dict[str, str] = {}  # name → the link they joined by (the players' link, for the restored)
        self.log: list[LogEntry] = []
        self.seats: dict[asyncio.Queue[str | None], Seat] = {}
        self.masks: dict[int, set[tuple[int, str]]] = {}  # hidden fault's seq → its masked (minute, code)
        self.waiting: dict[int, tuple[int, set[str]]] = {}  # hidden fault's seq → (minute, codes not yet seen)
        self.debrief: dict[str, Any] | None = None
        self._debriefing: asyncio.Task[None] | None = None
        self._said: dict[str, deque[float]] = {}  # name, and link, → when they last wrote (the rate limits)
        live.room = self

    # --- who may enter ------------------------------------------------------------------------------------

    def authenticate(self, token: object) -> str:
        """ "facilitator" or "player" for a right token (constant time); else refused."""
        if tokens.matches(tokens.digest(token) if isinstance(token, str) else None, self.facilitator_hash):
            return "facilitator"
        if tokens.matches(token, self.player_token):
            return "player"
        raise InvalidInput("token", "wrong or missing token: use the link the facilitator shared")

    async def join(self, token: object, name: object, role: object) -> Seat:
        if self.authenticate(token) == "facilitator":
            return Seat(roles.FACILITATOR, roles.FACILITATOR, "facilitator")
        link = "player"  # one players' link a room (the bounds below are per link, and per room)
        checked_name, checked_role = roles.check_name(name), roles.check_role(role)
        taken = self.players.get(checked_name)
        if taken is not None and taken != checked_role:
            raise InvalidInput(
                "name", f"{checked_name!r} is taken by the {roles.ROLE_LABELS[taken]}; choose another name or role"
            )
        if taken is None:
            if len(self.players) >= PLAYERS_PER_ROOM:
                raise InvalidInput("name", f"the room is full: at most {PLAYERS_PER_ROOM} players")
            if sum(1 for n in self.players if self.links.get(n, "player") == link) >= PLAYERS_PER_LINK:
                raise InvalidInput(
                    "name",
                    f"this link has its {PLAYERS_PER_LINK} players already: rejoin under your name, "
                    "or ask the facilitator",
                )
            await self.store.write(self.store.add_player, self.id, checked_name, checked_role)
            self.players[checked_name] = checked_role
            self.links[checked_name] = link
            await self._log("join", checked_name, checked_role, {})
            self.relay({"type": "players", "players": self.player_list()})
        return Seat(checked_name, checked_role, self.links.get(checked_name, link))

    def player_list(self) -> list[dict[str, str]]:
        online = {s.name for s in self.seats.values()}
        return [{"name": n, "role": r, "online": "yes" if n in online else "no"} for n, r in self.players.items()]

    # --- what each seat sees ------------------------------------------------------------------------------

    def visible(self, entry: LogEntry, seat: Seat) -> bool:
        if seat.facilitator or self.live.done:
            return True
        if entry.kind == "inject":
            return not entry.data.get("hidden") or entry.seq not in self.masks
        return entry.kind in PLAYER_KINDS

    def mask_record(self, record: dict[str, Any]) -> dict[str, Any]:
        """A minute as the players see it: a hidden fault's own events left out."""
        hide = {code for masked in self.masks.values() for (m, code) in masked if m == record["minute"]}
        if not hide:
            return record
        return {**record, "events": [e for e in record["events"] if e.get("code") not in hide]}

    def _note_minute(self, record: dict[str, Any]) -> None:
        """The first of each of a hidden fault's events at or after its minute is masked from then on."""
        for seq, (minute, codes) in list(self.waiting.items()):
            if record["minute"] < minute:
                continue
            for e in record["events"]:
                if e.get("code") in codes:
                    codes.discard(e["code"])
                    self.masks.setdefault(seq, set()).add((record["minute"], e["code"]))
            if not codes:
                del self.waiting[seq]

    def relay(self, message: dict[str, Any]) -> None:
        """A message of the run or the room to every seat, as each may see it (serialized once per audience)."""
        kind = message.get("type")
        if kind == "ack":  # the room sends the action's log line (with who) instead
            return
        if kind == "minute":
            self._note_minute(message["record"])
        if kind == "finished":
            message = {**message, "debrief_url": None}
            self.debrief_soon()
        texts: dict[str, str] = {}
        for queue, seat in list(self.seats.items()):
            if queue.qsize() >= self.live.max_backlog:  # a stalled tab, a client that never reads: closed
                self.seats.pop(queue, None)
                self.live.subscribers.discard(queue)
                queue.put_nowait(None)  # its socket ends (and unsubscribes); a reconnect gets a snapshot
                continue
            audience = "facilitator" if seat.facilitator or self.live.done else "player"
            if kind == "log" and not self.visible(_entry(message["entry"]), seat):
                continue
            if audience not in texts:
                shown = message
                if kind == "minute" and audience == "player":
                    shown = {**message, "record": self.mask_record(message["record"])}
                texts[audience] = orjson.dumps(shown).decode()
            queue.put_nowait(texts[audience])

    def snapshot(self, seat: Seat) -> dict[str, Any]:
        live = self.live
        full = seat.facilitator or live.done
        records = [self.wire(r, live.sim) for r in live.sim.timeline]
        if not full:
            records = [self.mask_record(r) for r in records]
        out: dict[str, Any] = {
            "type": "snapshot",
            "room": {
                "id": self.id,
                "title": self.title,
                "scenario": live.sim.scenario.title,
                "engine": live.sim.engine.name,
                "start": live.sim.plan.clock(0),
            },
            "you": {"name": seat.name, "role": seat.role},
            "records": records,
            "log": [e.to_dict() for e in self.log if self.visible(e, seat)],
            "players": self.player_list(),
            "state": live.state(),
            "debrief": self.debrief,
        }
        if seat.facilitator:
            out["faults"] = faults.fault_menu(live.sim.engine.name, _services(live.sim))
            out["player_token"] = self.player_token
        return out

    def subscribe(self, seat: Seat) -> asyncio.Queue[str | None]:
        queue = self.live.subscribe()
        self.seats[queue] = seat
        self.relay({"type": "players", "players": self.player_list()})
        return queue

    def unsubscribe(self, queue: asyncio.Queue[str | None]) -> None:
        self.seats.pop(queue, None)
        self.live.unsubscribe(queue)
        self.relay({"type": "players", "players": self.player_list()})

    # --- what people do -----------------------------------------------------------------------------------

    async def _log(self, kind: str, name: str, role: str, data: dict[str, Any], minute: int | None = None) -> LogEntry:
        at = self.live.sim.minute if minute is None else minute
        seq = await self.store.write(self.store.append_log, self.id, at, kind, name, role, data)
        entry = LogEntry(seq, at, kind, name, role, data)
        self.log.append(entry)
        self.relay({"type": "log", "entry": entry.to_dict()})
        return entry

    def _open(self) -> None:
        if self.live.lost:  # a stale room (``RoomManager._lost``): a frame its sockets still read is not logged
            raise InvalidInput("run", "its worker stopped; the run comes back from its log: try again", "worker_lost")
        if self.live.done:
            raise InvalidInput("room", "the run is over: the room is closed", "room_closed")

    async def act(self, seat: Seat, control: str, value: Any) -> Action:
        """A player's action: checked as the console's are (``LiveRun.take``: the run's engine and its state),
        written with who took it (on disk), then queued for the next minute."""
        roles.require(seat.role, "act")
        self._open()

        async def write(action: Action) -> None:
            data: dict[str, Any] = {"control": action.control, "text": describe(action)}
            if action.value is not None:
                data["value"] = action.value
            await self._log("action", seat.name, seat.role, data, action.minute)

        return await self.live.take(control, value, write)

    async def say(self, seat: Seat, kind: str, text: str) -> None:
        """A line in the channel (players and the facilitator), a status update (communications), a note
        (the facilitator: shown to the team in the debrief)."""
        roles.require(seat.role, {"message": "message", "status": "status", "note": "facilitate"}[kind])
        self._open()
        checked = check_text(text)  # a refused line does not count against the rate
        self._check_chat_rate(seat)
        await self._log(
            kind, seat.name, seat.role, {"text": checked, "clock": self.live.sim.plan.clock(self.live.sim.minute)}
        )

    def _check_chat_rate(self, seat: Seat) -> None:
        """At most ``MESSAGES_PER_MINUTE`` lines a person and ``LINK_MESSAGES_PER_MINUTE`` a link in any 60 s
        (a channel, not a flood: a name is free to choose, the link is not)."""
        now = time.monotonic()
        keyed = ((f"name:{seat.name}", MESSAGES_PER_MINUTE, "a person"),
                 (f"link:{seat.link}", LINK_MESSAGES_PER_MINUTE, "a link"))  # fmt: skip
        windows = []
        for key, limit, who in keyed:
            recent = self._said.setdefault(key, deque())
            while recent and now - recent[0] > 60.0:
                recent.popleft()
            if len(recent) >= limit:
                raise InvalidInput(
                    "text",
                    f"at most {limit} messages a minute for {who}; wait a moment",
                    "text_rate_person" if key.startswith("name:") else "text_rate_link",
                    n=limit,
                )
            windows.append(recent)
        for recent in windows:
            recent.append(now)

    async def inject(self, seat: Seat, kind: str, at: str, values: dict[str, Any], hidden: bool) -> LogEntry:
        """A fault from the menu: validated by the scenario schema, added to the run's scenario (so the run file
        replays it), written to the log, and (hidden or not) announced to whom may see it."""
        roles.require(seat.role, "facilitate")
        self._open()
        live = self.live
        async with live._writing:
            self._open()
            # empty: the next minute to come (never minute 0, which the run's plan holds already: a fresh room's
            # "next minute" is 08:01, not its first, 08:00, which ``Simulation.inject`` refuses)
            when = at.strip() or live.sim.plan.clock(max(live.sim.minute, 1))
            event = faults.build_event(kind, when, values, live.sim.engine.name, _services(live.sim))
            before = live.sim.scenario
            # refuses past minutes, draws, a second surge: nothing changed then; on the request engine the run
            # its worker holds takes it too, before its next minute (``LiveRun.inject``)
            await live.inject(event)
            minute = _event_minute(live.sim, before)
            data = {"kind": kind, "at": live.sim.plan.clock(minute), "at_minute": minute, "values": values,
                    "hidden": hidden, "event": event}  # fmt: skip
            seq = await self.store.write(self.store.inject, self.id, live.run_file(), live.sim.minute, data)
            entry = LogEntry(seq, live.sim.minute, "inject", seat.name, seat.role, data)
            self.log.append(entry)
            if hidden:
                self.waiting[seq] = (minute, set(faults.hidden_codes(kind, event)))
                self.masks.setdefault(seq, set())
            self.relay({"type": "log", "entry": entry.to_dict()})
        return entry

    async def reveal(self, seat: Seat, seq: int) -> None:
        roles.require(seat.role, "facilitate")
        self._open()  # nothing is logged after the close (everything is shown then), nor in a stale room
        if seq not in self.masks:
            raise InvalidInput("seq", f"no hidden fault with log line {seq}")
        await self._log("reveal", seat.name, seat.role, {"seq": seq})
        self.masks.pop(seq, None)
        self.waiting.pop(seq, None)
        fault = next(e for e in self.log if e.seq == seq)
        self.relay({"type": "log", "entry": fault.to_dict()})
        for queue, s in list(self.seats.items()):  # the minutes shown again with the fault's events
            queue.put_nowait(orjson.dumps(self.snapshot(s)).decode())

    async def control(self, seat: Seat, kind: str, value: Any = None) -> None:
        """Pause, resume, step one minute, speed (for everyone) and close: the facilitator's; refused once the
        room is closed (nothing is logged after its close)."""
        roles.require(seat.role, "facilitate")
        self._open()
        live = self.live
        if kind == "speed":
            await live.set_speed(value)
        elif kind == "pause":
            await live.pause()
        elif kind == "resume":
            await live.resume()
        elif kind == "step":
            await live.step_once()
            return
        elif kind == "close":
            await self._log("close", seat.name, seat.role, {})
            await live.end("ended")
            return
        await self._log(
            "control", seat.name, seat.role, {"what": kind, **({"value": value} if value is not None else {})}
        )

    # --- the end ----------------------------------------------------------------------------------------

    def debrief_soon(self) -> None:
        if self._debriefing is None and self.debrief is None:
            self._debriefing = _spawn(self._make_debrief(), name=f"debrief-room-{self.id}")

    async def _make_debrief(self) -> None:
        ready = await self.live.debrief_ready()
        if not ready or self.live.report is None:
            return
        self.debrief = await asyncio.to_thread(self.team_debrief, self.live.report)
        self.relay({"type": "debrief", "debrief": self.debrief})
        for queue, s in list(self.seats.items()):  # the hidden faults and notes, revealed
            queue.put_nowait(orjson.dumps(self.snapshot(s)).decode())

    def team_debrief(self, report: Report) -> dict[str, Any]:
        sim = self.live.sim
        return {
            "score": report.score,
            "passed": report.passed,
            "budget_spent": report.budget_spent,
            "budget_left": report.budget_left,
            "turned_away_share": report.turned_away_share,
            "objectives": [{"name": o.name, "passed": o.passed} for o in report.objectives],
            "causes": report.budget_spent_by_cause,
            "timeline": [r.model_dump() for r in team_timeline(report, self.log, sim.plan.clock)],
            "intervals": intervals(sim, report, self.log).model_dump(),
            "origins": _origins(report),
            "markdown": self.markdown(report),
        }

    def markdown(self, report: Report) -> str:
        return postmortem_markdown(self.title, self.live.sim, report, self.log, list(self.players.items()))

    def room_file(self, created_at: str) -> RoomFile:
        return RoomFile.model_validate(
            {
                "id": self.id,
                "title": self.title,
                "created_at": created_at,
                "players": [{"name": n, "role": r} for n, r in self.players.items()],
                "log": [e.to_dict() for e in self.log],
                "run": self.live.run_file(),
            }
        )


def _origins(report: Report) -> dict[str, Any] | None:
    """A chain's "Where the failures began", as the console's debrief shows it: the headline sentence, each
    service's failed requests begun there and seen there, the graph's contradictions (templates and arguments:
    each page translates them). None for one service."""
    origins = report.failure_origins
    if origins is None:
        return None
    return {
        **origins.model_dump(mode="json"),
        "contradictions": [{"template": t, "args": a} for t, a in origins.contradictions],
        "headline": [{"template": t, "args": a} for t, a in origin_parts(origins)],
    }


def _services(sim: Simulation) -> tuple[str, ...]:
    """The chain's services in declaration order (none: the room plays one service)."""
    return () if sim.plan.graph is None else tuple(sim.plan.graph.names)


def _event_minute(sim: Simulation, before: Scenario) -> int:
    """The minute the just-injected event takes effect (its earliest clock)."""
    added = sim.scenario.events[len(before.events)].model_dump(mode="json")
    clocks = [v for v in _walk(added) if isinstance(v, str) and len(v) == 5 and v[2] == ":"]
    start = sim.plan.clock_start_min
    return min((int(c[:2]) * 60 + int(c[3:]) - start) % 1440 for c in clocks)


def _walk(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [x for v in value.values() for x in _walk(v)]
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _walk(v)]
    return [value]


def _entry(data: dict[str, Any]) -> LogEntry:
    return LogEntry(data["seq"], data["minute"], data["kind"], data["name"], data["role"], data["data"])


class RoomManager:
    """The rooms in memory, backed by the store; a room not in memory is rebuilt from its log (off the loop)."""

    def __init__(self, store: RunStore, runs: RunFactory) -> None:
        self.store = RoomStore(store)
        self.runs = runs
        self.rooms: dict[str, Room] = {}
        self.created: dict[str, str] = {}
        self._lock = asyncio.Lock()
        self.owners: dict[str, str] = {}  # room → the client that created it (the limits per client)
        self.used: dict[str, float] = {}  # room → when someone was last in it or asked for it
        self.evicted = 0
        # room → why it will be paused when it comes back (``get``): "worker_lost" (its worker process ended), or
        # the reason it had when it left memory idle (``sweep``); a room absent here came back from a restart
        self.returning: dict[str, str | None] = {}

    async def create(self, sim: Simulation, title: str, speed: int, client: str = "") -> tuple[Room, str]:
        """A new room, paused at its first minute (the facilitator starts it); returns it and the facilitator's
        token (kept only as its hash)."""
        facilitator, player = tokens.new_token(), tokens.new_token()
        run = sim.run_file().model_copy(update={"difficulty": DIFFICULTY})
        room_id = await self.store.write(self.store.create_room, title, run, speed, tokens.digest(facilitator), player)
        live = self.runs.new(room_id, sim, self.store, speed, True)
        room = Room(room_id, title, live, self.store, tokens.digest(facilitator), player, self.runs.wire)
        await self.runs.hold(live, lambda: self._lost(room))
        self.rooms[room_id] = room
        self.owners[room_id], self.used[room_id] = client, time.monotonic()
        live.start()
        return room, facilitator

    async def get(self, room_id: str) -> Room | None:
        room = self.rooms.get(room_id)
        if room is not None:
            self.used[room_id] = time.monotonic()
            return room
        if not (len(room_id) == 12 and all(c in "0123456789abcdef" for c in room_id)):
            return None
        async with self._lock:
            room = self.rooms.get(room_id)
            if room is None:
                row = await self.store.read(self.store.get_room, room_id)
                if row is None:
                    return None
                closed = any(e.kind == "close" for e in row.log)  # the log is the truth (not the debrief)
                over = closed or row.status in ("finished", "closed")
                replayed = await self.runs.replay(row.run_file, over)
                room = await asyncio.to_thread(self._rebuild, row, *replayed)
                reason = self.returning.pop(room_id, RESTORED)
                if not room.live.done:
                    room.live.pause_reason = reason
                    await self.runs.hold(room.live, lambda: self._lost(room))
                self.rooms[room_id] = room
                self.used[room_id] = time.monotonic()
                if not room.live.done:
                    room.live.start()
                else:  # the debrief as kept, or computed now (the server went away before it was written)
                    room.debrief_soon()
        return room

    def _rebuild(self, row: RoomRow, sim: Simulation, pending: list[Action], skipped: list[str]) -> Room:
        """The room as it was: the run replayed from its run file (the injected faults in its scenario) and
        the log's actions (``RunFactory.replay``: ``sim``, ``pending``, ``skipped``), the players, the log, the
        hidden faults' masks."""
        for line in skipped:  # an older server logged it unchecked: the room comes back without it
            log.warning("room %s: a logged action skipped on restore: %s", row.id, line)
        # back paused, whoever held it: the facilitator resumes (a player's reconnect does not start it)
        live = self.runs.new(row.id, sim, self.store, row.speed, True)
        live.pending = pending
        closed = any(e.kind == "close" for e in row.log)  # the log is the truth (the debrief may not be written)
        if (closed or row.status in ("finished", "closed")) and not sim.done:
            live.ended = "ended"
        if not live.done:
            live.pause_reason = RESTORED  # ``get`` says why, when it knows better (a lost worker, an idle room)
        if row.summary is not None:
            live.report = Report.model_validate(row.summary)
            live.figure_json = row.debrief_figure
        room = Room(row.id, row.title, live, self.store, row.facilitator_hash, row.player_token, self.runs.wire)
        room.players = dict(row.players)
        room.log = list(row.log)
        revealed = {e.data.get("seq") for e in row.log if e.kind == "reveal"}
        for e in row.log:
            if e.kind == "inject" and e.data.get("hidden") and e.seq not in revealed:
                codes = faults.hidden_codes(str(e.data["kind"]), e.data.get("event"))
                room.waiting[e.seq] = (int(e.data["at_minute"]), set(codes))
                room.masks[e.seq] = set()
        for r in sim.timeline:
            room._note_minute(self.runs.wire(r, sim))
        self.created[row.id] = row.created_at
        return room

    def _lost(self, room: Room) -> None:
        """The worker process holding a room's run ended (killed, out of memory): the room leaves memory, its
        seats are told why (the facilitator reads it on the page) and disconnected; the page reconnects and the
        room comes back from the store as after a restart, every logged action and fault in it, paused for its
        facilitator. The clock goes on for the other rooms (``Clock``: one run's failure is its own)."""
        log.error("room %s: the worker process holding its run ended; it comes back from its log", room.id)
        if self.rooms.get(room.id) is room:
            del self.rooms[room.id]
            for table in (self.used, self.owners, self.created):
                table.pop(room.id, None)
            self._returning(room.id, WORKER_LOST)  # not "the server restarted": this room's worker alone ended
        live = room.live
        _spawn(live.stop(), name=f"lost-room-{room.id}")
        # ``code``: what the page says in its language (the message is the API's English, as before)
        room.relay({"type": "error", "field": "run", "code": WORKER_LOST,
                    "message": "run: the room's worker process stopped; the room comes back paused from its log "
                    "(reconnecting)"})  # fmt: skip
        for queue in list(room.seats):
            queue.put_nowait(None)
        room.seats.clear()
        live.subscribers.clear()

    def _returning(self, room_id: str, reason: str | None) -> None:
        """Remember why a room leaving memory will be paused when it comes back; bounded (the oldest forgotten:
        such a room comes back saying "restored", the text for a room whose server restarted)."""
        self.returning.pop(room_id, None)
        self.returning[room_id] = reason
        while len(self.returning) > MAX_RETURNING:
            del self.returning[next(iter(self.returning))]

    async def created_at(self, room_id: str) -> str:
        if room_id not in self.created:
            row = await self.store.read(self.store.get_room, room_id)
            self.created[room_id] = row.created_at if row is not None else ""
        return self.created[room_id]

    def open_rooms(self, client: str | None = None) -> int:
        """Rooms in memory whose run is not over (``client``'s only, when given): what the limits count."""
        return sum(
            not room.live.done and (client is None or self.owners.get(room_id) == client)
            for room_id, room in self.rooms.items()
        )

    def _idle(self, room: Room, now: float, idle_s: float) -> bool:
        """Nobody in it, nothing being written or computed, its clock still, untouched for ``idle_s``."""
        if room.seats:
            self.used[room.id] = now
            return False
        live = room.live
        tasks = (room._debriefing, getattr(live, "_finishing", None))
        busy = live._writing.locked() or any(t is not None and not t.done() for t in tasks)
        still = live.done or getattr(live, "paused", True)
        return not busy and still and now - self.used.get(room.id, 0.0) >= idle_s

    async def sweep(self, idle_s: float) -> int:
        """Rooms nobody was in for ``idle_s`` leave memory (their position written first; the store keeps
        everything): ``get`` rebuilds one on demand, back paused for its facilitator, as after a restart."""
        gone = 0
        for room in list(self.rooms.values()):
            if not self._idle(room, time.monotonic(), idle_s):
                continue
            live = room.live
            if not live.done:
                await self.store.write(self.store.set_progress, live.id, live.sim.minute, live.speed)
            async with self._lock:  # not while ``get`` rebuilds; someone may have come in meanwhile
                if self.rooms.get(room.id) is not room or not self._idle(room, time.monotonic(), idle_s):
                    continue
                del self.rooms[room.id]
                for table in (self.used, self.owners, self.created):
                    table.pop(room.id, None)
                if not live.done:  # back as it left: paused by its facilitator (or still a restored one)
                    self._returning(room.id, live.pause_reason)
            await live.stop()
            self.evicted += 1
            gone += 1
        return gone

    async def shutdown(self) -> None:
        for room in list(self.rooms.values()):
            live = room.live
            if not live.done:
                await self.store.write(self.store.set_progress, live.id, live.sim.minute, live.speed)
            await live.stop()
        await self.runs.stop()

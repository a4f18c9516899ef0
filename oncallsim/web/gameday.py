"""Game-day rooms on the web: the page that creates a room, the room's page (one for everyone: the token in the
link's fragment says who you are, and never reaches a server log), its WebSocket, and its exports.

The room's id is not enough: the socket's first message carries the player or the facilitator token, and the
exports ask for one too (the facilitator's during the run; either once the run is over)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any, Literal

import orjson
from fastapi import APIRouter, Request, WebSocket
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from oncallsim.alerting.pagerduty import Pager
from oncallsim.debrief.origins import ORIGIN_TEXTS
from oncallsim.gameday import Room, RoomManager, Seat
from oncallsim.gameday.protocol import MAX_TEXT, Act, Inject, Join, Pace, Reveal, Say, Speed, parse_frame
from oncallsim.gameday.roles import PLAYER_ROLES, ROLE_LABELS
from oncallsim.gameday.room import DIFFICULTY, SharedRun
from oncallsim.model import CONTROL_SPECS, InvalidInput, MinuteRecord
from oncallsim.model.chain.controls import graph_view
from oncallsim.model.chain.engine import CHAIN_CONTROLS
from oncallsim.model.engine import DEFAULT_ENGINE, ENGINES, get_engine
from oncallsim.model.plan import MAX_RUN_MINUTES
from oncallsim.readiness import Readiness
from oncallsim.scenarios import builtin_scenarios, graph_scenarios
from oncallsim.scenarios.graph import CONTRADICTION_TEXTS
from oncallsim.simulation import MAX_SEED, Action, RunFile, Simulation
from oncallsim.store.rooms import RoomStore
from oncallsim.web.api import NewRun, random_seed
from oncallsim.web.clock import Clock
from oncallsim.web.labels import resilience_controls
from oncallsim.web.limits import Full, Limits, client_of
from oncallsim.web.live import PROGRESS_EVERY_MIN, SPEEDS, LiveRun, check_speed, wire_record
from oncallsim.web.pages import render
from oncallsim.web.sockets import serve_socket
from oncallsim.web.workers import Workers, job_rebuild

__all__ = ["router"]

router = APIRouter()
log = logging.getLogger("oncallsim.web")
JOIN_TIMEOUT_S = 60.0  # a socket that never says who it is
# a chain room's debrief says where the failures began in the page's language: the sentences' templates (msgids,
# in the catalog with the console's debrief), translated by the page and filled by gameday.js
ORIGIN_SENTENCES = (*ORIGIN_TEXTS.values(), *CONTRADICTION_TEXTS.values())


class RoomRun(LiveRun):
    """A live run whose messages go to its room (which filters them per seat) instead of straight out."""

    room: Any = None
    held_as = "room:"

    def broadcast(self, message: dict[str, Any]) -> None:
        if self.room is not None:
            self.room.relay(message)

    def _after_minute(self, record: MinuteRecord, progress: list[tuple[str, int]] | None) -> None:
        """A minute (computed here or by the room's worker), its position written every minute (a room is a
        handful of people for an hour or two: a restart resumes at the minute everyone saw, not a few minutes
        before)."""
        super()._after_minute(record, progress)
        if self.sim.minute % PROGRESS_EVERY_MIN != 0:
            self.background_write(self.store.set_progress, self.id, self.sim.minute)


class RoomRuns:
    """The rooms' live runs: one clock for all of them (on the rooms' store), the console's wire form; a run
    waits while its engine is being prepared (``engine_state``: the server's, web/engines.py).

    With the server's ``workers``, a room on the request engine is held and stepped by a live worker process as
    a console run is (``LiveRun.hold``: the same jobs, the same pacing), its replay after a restart done by a
    heavy worker; a minute-engine room's minutes stay in this process (microseconds each: the formulas), its
    replay on a thread."""

    def __init__(
        self,
        engine_state: Callable[[str], Readiness] | None = None,
        pager: Pager | None = None,
        workers: Workers | None = None,
    ) -> None:
        self.clock: Clock | None = None
        self.engine_state = engine_state
        self.pager = pager
        self.workers = workers

    async def hold(self, live: SharedRun, on_lost: Callable[[], None]) -> None:
        assert isinstance(live, RoomRun)
        await live.hold(self.workers, lambda _run: on_lost())

    async def replay(self, run: RunFile, over: bool) -> tuple[Simulation, list[Action], list[str]]:
        """A room's run rebuilt from its run file and log (``job_rebuild``): a request-engine one in a heavy
        worker (seconds of CPU, never the server's), a minute-engine one on a thread."""
        engine = get_engine(run.engine).name
        if self.workers is not None and engine == "request":
            result: tuple[Simulation, list[Action], list[str]] = await self.workers.call(job_rebuild, run, over)
            return result
        return await asyncio.to_thread(job_rebuild, _no_progress, run, over)

    def new(self, room_id: str, sim: Simulation, store: RoomStore, speed: int, paused: bool) -> RoomRun:
        check_speed(speed)
        if self.clock is None:
            self.clock = Clock(store)
        return RoomRun(
            room_id, sim, store, speed, paused, clock=self.clock, difficulty=DIFFICULTY,
            engine_state=self.engine_state, pager=self.pager,
        )  # fmt: skip

    def wire(self, record: MinuteRecord, sim: Simulation) -> dict[str, Any]:
        return wire_record(record, sim.plan)

    async def stop(self) -> None:
        if self.clock is not None:
            await self.clock.stop()


def _no_progress(done: int, total: int) -> None:
    pass


def rooms_of(request: Request | WebSocket) -> RoomManager:
    """The app's rooms, made on first use (they share the run store: one SQLite file, one writer)."""
    state = request.app.state
    manager = getattr(state, "rooms", None)
    if manager is None:
        warmer = getattr(state, "engines", None)
        manager = getattr(state, "manager", None)
        workers = manager.workers if manager is not None else None  # the console's: one set of processes
        runs = RoomRuns(warmer.readiness if warmer is not None else None, getattr(state, "pager", None), workers)
        manager = state.rooms = RoomManager(state.store, runs)
    return manager  # type: ignore[no-any-return]


class NewRoom(BaseModel):
    """A room for a built-in scenario (by id) or one sent as TOML text, on either engine."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)
    title: StrictStr = Field(default="", max_length=120, description="the exercise's name (the scenario's title)")
    scenario: StrictStr = Field(max_length=200)
    scenario_toml: StrictStr | None = Field(default=None, max_length=64 * 1024)
    seed: StrictInt | None = Field(default=None, ge=0, le=MAX_SEED)
    engine: StrictStr | None = Field(default=None, max_length=40)
    speed: StrictInt = Field(default=1)
    clock: StrictStr | None = Field(default=None, max_length=5)
    minutes: StrictInt | None = Field(default=None, ge=1, le=MAX_RUN_MINUTES)


class ExportBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    token: StrictStr = Field(max_length=200)
    what: Literal["room", "run", "markdown"]


def admit_room(request: Request, manager: RoomManager, client: str) -> None:
    """Refuse (``Full``, a 429) a new room past a limit (web/limits.py), before its run is built."""
    limits: Limits = request.app.state.limits
    if manager.open_rooms() >= limits.rooms:
        raise Full("rooms", 60.0, max=limits.rooms)
    if manager.open_rooms(client) >= limits.rooms_per_client:
        raise Full("rooms_per_client", 60.0, max=limits.rooms_per_client)
    request.app.state.room_gate.check(client)


async def get_room(request: Request | WebSocket, room_id: str) -> Room:
    room = await rooms_of(request).get(room_id[:40])
    if room is None:
        raise InvalidInput("room", f"no room {room_id[:40]!r}")
    return room


@router.get("/gameday", response_class=HTMLResponse, include_in_schema=False)
async def gameday_home(request: Request) -> HTMLResponse:
    return render(
        request,
        "gameday.html",
        scenarios=list(builtin_scenarios().values()),
        chains=list(graph_scenarios().values()),  # chains of services: a group of their own, as on the console
        engines_list=list(ENGINES),
        default_engine=DEFAULT_ENGINE,
        speeds=SPEEDS,
        seed=random_seed(),
    )


@router.post("/api/gameday/rooms", status_code=201)
async def create_room(request: Request, new: NewRoom) -> dict[str, Any]:
    """A room paused at its first minute; the answer's links carry the tokens (shown once)."""
    # a chain of services too (a shipped lesson, or a file with a [graph]): it plays on the request engine
    scenario = NewRun(scenario=new.scenario, scenario_toml=new.scenario_toml).resolve()
    engine = get_engine(new.engine or scenario.engine or DEFAULT_ENGINE).name
    seed = random_seed() if new.seed is None else new.seed

    def build() -> Simulation:
        return Simulation(scenario, seed=seed, clock=new.clock or None, minutes=new.minutes, engine=engine)

    check_speed(new.speed)
    manager, client = rooms_of(request), client_of(request)
    admit_room(request, manager, client)
    sim = await asyncio.to_thread(build)
    title = new.title.strip() or scenario.title
    room, facilitator = await manager.create(sim, title, new.speed, client)
    request.app.state.room_gate.count(client)
    return {
        "id": room.id,
        "title": title,
        "seed": seed,
        "engine": engine,
        "player_url": f"/gameday/{room.id}#key={room.player_token}",
        "facilitator_url": f"/gameday/{room.id}#key={facilitator}",
    }


@router.get("/gameday/{room_id}", response_class=HTMLResponse, include_in_schema=False)
async def room_page(request: Request, room_id: str) -> HTMLResponse:
    try:
        room = await get_room(request, room_id)
    except InvalidInput as exc:
        return render(request, "error.html", status=404, message=str(exc))
    engine = room.live.sim.engine.name
    layout = room.live.sim.plan.graph
    grouped = set(resilience_controls(engine))  # folded under "Resilience", as on the console
    # a chain's: the one service's controls that reach it (not its cache and build), and its services' (services.js)
    shown = CONTROL_SPECS if layout is None else {name: CONTROL_SPECS[name] for name in CHAIN_CONTROLS}
    controls = [
        {"name": name, "kind": s.kind, "label": s.label, "min": s.min, "max": s.max, "step": s.step, "unit": s.unit,
         "danger": s.danger, "choices": list(s.offered), "group": "resilience" if name in grouped else ""}
        for name, s in shown.items()
        if engine in getattr(s, "engines", (engine,))
    ]  # fmt: skip
    return render(
        request,
        "gameday_room.html",
        room_id=room.id,
        title=room.title,
        roles=PLAYER_ROLES,
        role_labels=ROLE_LABELS,
        controls=controls,
        # a chain of services: the diagram and the services' panel, drawn by the console's own services.js
        graph=None if layout is None else graph_view(layout),
        origin_sentences=ORIGIN_SENTENCES,
        speeds=SPEEDS,
        max_text=MAX_TEXT,
    )


@router.post("/api/gameday/rooms/{room_id}/export")
async def export(request: Request, room_id: str, body: ExportBody) -> Response:
    """The room file, the run file or the postmortem draft: the facilitator's during the run, anyone's in the
    room once it is over."""
    room = await get_room(request, room_id)
    who = room.authenticate(body.token)
    if who != "facilitator" and not room.live.done:
        raise InvalidInput("token", "the exports open to the players when the run is over")
    name = f"gameday-{room.id}"
    if body.what == "run":
        content = json.loads(room.live.run_file().model_dump_json())
        return JSONResponse(content, headers={"Content-Disposition": f'attachment; filename="{name}-run.json"'})
    if body.what == "room":
        created = await rooms_of(request).created_at(room.id)
        content = json.loads(room.room_file(created).model_dump_json())
        return JSONResponse(content, headers={"Content-Disposition": f'attachment; filename="{name}.json"'})
    if not await room.live.debrief_ready() or room.live.report is None:
        raise InvalidInput("room", "the postmortem comes when the run is over")
    text = await asyncio.to_thread(room.markdown, room.live.report)
    return Response(
        text,
        media_type="text/markdown; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{name}-postmortem.md"'},
    )


async def dispatch(room: Room, seat: Seat, message: Any) -> None:
    if isinstance(message, Act):
        await room.act(seat, message.control, message.value)
    elif isinstance(message, Say):
        await room.say(seat, message.type, message.text)
    elif isinstance(message, Inject):
        await room.inject(seat, message.kind, message.at, dict(message.values), message.hidden)
    elif isinstance(message, Reveal):
        await room.reveal(seat, message.seq)
    elif isinstance(message, Speed):
        await room.control(seat, "speed", message.value)
    elif isinstance(message, Pace):
        await room.control(seat, message.type)
    elif isinstance(message, Join):
        raise InvalidInput("message", "already joined")


async def _join(websocket: WebSocket, room: Room) -> Seat | None:
    """Wait for the join message; a refusal is said, and the socket closed (4401)."""
    try:
        raw = await asyncio.wait_for(websocket.receive(), JOIN_TIMEOUT_S)
        if raw["type"] == "websocket.disconnect":
            return None
        message = parse_frame(raw)
        if not isinstance(message, Join):
            raise InvalidInput("message", "join first: {type: join, token, name, role}")
        return await room.join(message.token, message.name, message.role)
    except (InvalidInput, TimeoutError) as exc:
        field, text = (exc.field, str(exc)) if isinstance(exc, InvalidInput) else ("join", "join: too slow")
        await websocket.send_json({"type": "refused", "field": field, "message": text})
        await websocket.close(code=4401)
        return None


@router.websocket("/gameday/{room_id}/ws")
async def room_socket(websocket: WebSocket, room_id: str) -> None:
    await websocket.accept()
    room = await rooms_of(websocket).get(room_id[:40])
    if room is None:
        await websocket.send_json({"type": "refused", "field": "room", "message": f"room: no room {room_id[:40]!r}"})
        await websocket.close(code=4404)
        return
    seat = await _join(websocket, room)
    if seat is None:
        return
    queue = room.subscribe(seat)
    snapshot = room.snapshot(seat)  # at the same minute as the subscription: nothing missed, nothing twice
    await websocket.send_text(await asyncio.to_thread(lambda: orjson.dumps(snapshot).decode()))

    await serve_socket(
        websocket,
        queue,
        lambda raw: dispatch(room, seat, parse_frame(raw)),
        lambda: room.unsubscribe(queue),
        f"game-day room {room.id}",
    )

"""The JSON API and the WebSocket of a live run. Every input is validated (typed pydantic bodies: strict types,
finite numbers, then the model's own ranges) before anything is written; an invalid input gets
``{"error", "field"}`` (HTTP 4xx) or ``{"type": "error", …}`` (WebSocket, which stays open) and changes nothing."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import secrets
import time
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request, UploadFile, WebSocket
from fastapi.responses import JSONResponse, Response
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    TypeAdapter,
    ValidationError,
    model_validator,
)

from oncallsim.model import CONTROL_SPECS, DEFAULT_PARAMS, InvalidInput, param_info
from oncallsim.model.controls import text_refused
from oncallsim.model.engine import DEFAULT_ENGINE, get_engine
from oncallsim.model.plan import MAX_RUN_MINUTES
from oncallsim.scenarios import registered_scenarios
from oncallsim.scenarios.registry import registered_scenario, scenario_from_text
from oncallsim.scenarios.spec import Scenario
from oncallsim.simulation import MAX_SEED, RunFile, Simulation
from oncallsim.store.runfiles import vet_run_file
from oncallsim.validation import MAX_FILE_BYTES, invalid_input
from oncallsim.web.limits import client_of
from oncallsim.web.live import SPEEDS, LiveRun, RunManager, check_speed
from oncallsim.web.sockets import serve_socket

__all__ = ["InvalidInput", "NewRun", "router"]

router = APIRouter(prefix="/api")
log = logging.getLogger("oncallsim.web")

# A number at the edge: a JSON integer or float (``true`` and ``"16"`` are not numbers). Its range is the
# control's or the parameter's, judged by the core as it judges the CLI's and a run file's: 10**400, 1e309 and
# NaN get the same one line naming the field and its range everywhere.
Number = StrictInt | Annotated[StrictFloat, Field(allow_inf_nan=True)]
Name = Annotated[str, Field(max_length=64)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class NewRun(_Body):
    """A new live run of a registered scenario (by id) or of a scenario sent as TOML text (never a path)."""

    scenario: StrictStr = Field(max_length=200, description="a registered scenario id (GET /api/scenarios)")
    scenario_toml: StrictStr | None = Field(
        default=None, max_length=64 * 1024, description="a scenario file's content; then `scenario` is its id"
    )
    seed: StrictInt | None = Field(default=None, ge=0, le=MAX_SEED, description="random when omitted")
    speed: StrictInt = Field(default=4, description="simulated minutes per second: 1, 2, 4, 8 or 16")
    clock: StrictStr | None = Field(default=None, max_length=5, description="start at HH:MM")
    minutes: StrictInt | None = Field(default=None, ge=1, le=MAX_RUN_MINUTES)
    overrides: dict[
        Annotated[str, Field(max_length=64)], Number | StrictBool | Annotated[str, Field(max_length=64)]
    ] = Field(default_factory=dict, max_length=64, description="parameters and opening controls, NAME: VALUE")
    paused: StrictBool = False
    player: StrictStr | None = Field(
        default=None, max_length=40, description="a name for the leaderboard (optional; letters, digits, spaces, . _ -)"
    )
    engine: StrictStr | None = Field(
        default=None, max_length=40, description="an engine of GET /api/engines; the scenario's own by default"
    )
    # A program has nobody to wait for: its runs play through (hard) unless it asks for a person's pacing. The
    # console's form sends the player's choice (guided by default).
    difficulty: Literal["guided", "normal", "hard"] = Field(
        default="hard",
        description="hard (the default: nothing waits), normal (stops at the page, then 1×), guided (stops at the "
        "incident and the page, with hints; 1–2×)",
    )

    def resolve(self) -> Scenario:
        """The scenario to play: sent as content, or a registered one (a chain of services too: it plays on the
        request engine, which the scenario names)."""
        if self.scenario_toml is not None:
            scenario = scenario_from_text(self.scenario_toml, "scenario_toml")
            if scenario.id != self.scenario:
                raise InvalidInput("scenario", f"must be the sent scenario's id {scenario.id!r}")
        else:
            scenario = registered_scenario(self.scenario)
        return scenario


class ActionBody(_Body):
    control: StrictStr = Field(max_length=64)
    # a choice's value is its name ("codel"); every other control's is a number or a switch, never text
    value: StrictBool | Number | Annotated[StrictStr, Field(max_length=64)] | None = None

    @model_validator(mode="after")
    def _text_only_for_a_choice(self) -> ActionBody:
        refused = text_refused(self.control, self.value)
        if refused:
            raise ValueError(refused)
        return self


class ActionMessage(ActionBody):
    type: Literal["action"]


class PauseMessage(_Body):
    type: Literal["pause", "resume", "step", "end", "abandon"]


class SpeedMessage(_Body):
    type: Literal["speed"]
    value: StrictInt


ClientMessage = TypeAdapter(Annotated[ActionMessage | PauseMessage | SpeedMessage, Field(discriminator="type")])
ControlBody = Annotated[PauseMessage | SpeedMessage, Field(discriminator="type")]


PLAYER = re.compile(r"^[\w .\-]{1,40}$")


def check_player(name: str | None) -> str | None:
    """A leaderboard name: optional; letters, digits, spaces, dots, dashes and underscores, at most 40."""
    if name is None or not name.strip():
        return None
    if not PLAYER.match(name.strip()):
        raise InvalidInput("player", "at most 40 letters, digits, spaces, dots, dashes or underscores")
    return name.strip()


def manager_of(request: Request | WebSocket) -> RunManager:
    return request.app.state.manager  # type: ignore[no-any-return]


def random_seed() -> int:
    return secrets.randbelow(MAX_SEED + 1)


async def start_run(manager: RunManager, new: NewRun, client: str = "") -> LiveRun:
    """Build the simulation first (it validates everything), then store and start it; past a limit (web/limits.py)
    ``client``'s run is refused (``Busy``: 429) before anything is built."""
    check_speed(new.speed)
    scenario = new.resolve()
    seed = random_seed() if new.seed is None else new.seed
    engine = get_engine(new.engine or scenario.engine or DEFAULT_ENGINE).name
    manager.admit(client, engine)
    sim = await asyncio.to_thread(  # a request-engine run lays out its world here: off the event loop
        Simulation, scenario, seed=seed, overrides=new.overrides, clock=new.clock or None, minutes=new.minutes,
        engine=engine,
    )  # fmt: skip
    player = check_player(new.player)
    return await manager.create(
        sim, new.speed, paused=new.paused, difficulty=new.difficulty, player=player, client=client
    )


async def get_live(request: Request | WebSocket, run_id: str) -> LiveRun:
    live = await manager_of(request).get(run_id)
    if live is None:
        raise InvalidInput("run", f"no run {run_id[:40]!r}")
    return live


async def import_file(manager: RunManager, file: UploadFile) -> str:
    """A run file upload: content only (never a path), size-capped, vetted and replayed off the event loop."""
    data = await file.read(MAX_FILE_BYTES + 1)
    name = (file.filename or "run file")[:100]
    run = RunFile.parse_bytes(data, name)
    if manager.workers is not None:  # vetted, replayed and debriefed in a worker process, never on the loop
        return await manager.import_in_worker(run, name)
    sim = await asyncio.to_thread(vet_run_file, run, name)
    return await manager.import_run(sim, run.difficulty)


@router.get("/scenarios")
async def scenarios() -> list[dict[str, Any]]:
    return [s.model_dump(mode="json") for s in registered_scenarios().values()]


@router.get("/controls")
async def controls() -> dict[str, Any]:
    return {
        "controls": {name: {**s.to_dict(), "help": s.help_text(DEFAULT_PARAMS)} for name, s in CONTROL_SPECS.items()},
        "speeds": list(SPEEDS),
        "params": [p.__dict__ for p in param_info()],
    }


def _held(live: Any) -> bool:
    """A run (or a room's run) whose minutes a worker process computes now."""
    return live.remote is not None and not live.remote.released


@router.get("/stats")
async def stats(request: Request, window_s: float = Query(default=5.0, gt=0.0, le=600.0)) -> dict[str, Any]:
    """How the clock keeps up: live runs in memory, how many tick, and how late minutes were computed (the
    worst ever, and the median, p99 and share over 250 ms of the minutes of the last ``window_s`` seconds)."""
    manager = manager_of(request)
    runs = list(manager.runs.values())
    since = time.monotonic() - window_s
    recent = sorted(late for when, late in manager.clock.lateness if when >= since)

    def quantile(q: float) -> float:
        return recent[min(len(recent) - 1, int(q * len(recent)))] * 1000.0 if recent else 0.0

    rooms = getattr(request.app.state, "rooms", None)
    in_rooms = list(rooms.rooms.values()) if rooms is not None else []
    return {
        "runs_in_memory": len(runs),
        "runs_evicted": manager.evicted,
        "rooms_in_memory": len(rooms.rooms) if rooms is not None else 0,
        "rooms_evicted": rooms.evicted if rooms is not None else 0,
        "ticking": sum(not r.paused and not r.done for r in runs),
        "viewers": sum(len(r.subscribers) for r in runs),
        # request-engine runs whose minutes a worker process computes, and those it cannot keep at their speed
        "in_workers": sum(_held(r) for r in runs),
        "slowed": sum(r.pacer.slowed is not None for r in runs),
        # the same for the game-day rooms' runs (a request-engine room is held by a worker as a run is)
        "rooms_in_workers": sum(_held(room.live) for room in in_rooms),
        "rooms_slowed": sum(room.live.pacer.slowed is not None for room in in_rooms),
        "workers": manager.workers.status() if manager.workers is not None else [],
        "max_lag_ms": max((r.max_lag_s for r in runs), default=0.0) * 1000.0,
        "minutes_in_window": len(recent),
        "lateness_p50_ms": quantile(0.5),
        "lateness_p99_ms": quantile(0.99),
        "late_over_250ms_share": sum(late > 0.25 for late in recent) / len(recent) if recent else 0.0,
    }


@router.post("/runs", status_code=201)
async def create_run(request: Request, new: NewRun) -> dict[str, Any]:
    live = await start_run(manager_of(request), new, client_of(request))
    return {"id": live.id, "url": f"/runs/{live.id}", "seed": live.sim.seed}


@router.get("/runs")
async def list_runs(request: Request) -> list[dict[str, Any]]:
    store = manager_of(request).store
    return [
        {
            "id": r.id,
            "created_at": r.created_at,
            "scenario": r.scenario,
            "seed": r.seed,
            "played": r.played,
            "status": r.status,
            "difficulty": r.difficulty,
            "imported": r.imported,
            "score": None if r.summary is None else r.summary.get("score"),
            "passed": None if r.summary is None else r.summary.get("passed"),
            "model_version": r.model_version,
        }
        for r in await store.read(store.recent)
    ]


@router.get("/runs/{run_id}")
async def get_run(request: Request, run_id: str) -> Response:
    """A snapshot: the run, its records so far, its action log, its state."""
    live = await get_live(request, run_id)
    return Response(await live.snapshot_text(), media_type="application/json")


@router.post("/runs/{run_id}/actions")
async def post_action(request: Request, run_id: str, body: ActionBody) -> dict[str, Any]:
    live = await get_live(request, run_id)
    return {"accepted": (await live.act(body.control, body.value)).to_dict()}


@router.post("/runs/{run_id}/control")
async def post_control(request: Request, run_id: str, body: ControlBody) -> dict[str, Any]:
    live = await get_live(request, run_id)
    await handle(live, body)
    return live.state()


@router.delete("/runs/{run_id}")
async def delete_run(request: Request, run_id: str) -> dict[str, Any]:
    if not await manager_of(request).delete(run_id[:40]):
        raise InvalidInput("run", f"no run {run_id[:40]!r}")
    return {"deleted": run_id}


@router.get("/runs/{run_id}/runfile")
async def run_file(request: Request, run_id: str) -> JSONResponse:
    live = await get_live(request, run_id)
    return JSONResponse(
        json.loads(live.run_file().model_dump_json()),
        headers={"Content-Disposition": f'attachment; filename="oncallsim-{live.sim.scenario.id}-{live.id}.json"'},
    )


@router.get("/runs/{run_id}/debrief")
async def debrief_json(request: Request, run_id: str) -> dict[str, Any]:
    live = await get_live(request, run_id)
    if not await live.debrief_ready() or live.report is None:
        raise InvalidInput("run", "the run is not over yet: its debrief comes at the end")
    return live.report.model_dump(mode="json")


@router.post("/runs/import", status_code=201)
async def import_run(request: Request, file: UploadFile) -> dict[str, Any]:
    run_id = await import_file(manager_of(request), file)
    return {"id": run_id, "url": f"/runs/{run_id}/debrief"}


async def handle(live: LiveRun, message: ActionMessage | PauseMessage | SpeedMessage) -> None:
    """One client message: an action, pause/resume/step, or a speed change."""
    if isinstance(message, ActionMessage):
        await live.act(message.control, message.value)
    elif isinstance(message, SpeedMessage):
        await live.set_speed(message.value)
    elif message.type == "pause":
        await live.pause()
    elif message.type == "resume":
        await live.resume()
    elif message.type == "end":
        await live.end("ended")
    elif message.type == "abandon":
        await live.end("abandoned")
    else:
        await live.step_once()


def parse_message(raw: Mapping[str, Any]) -> ActionMessage | PauseMessage | SpeedMessage:
    """A WebSocket frame → a typed message; anything else → InvalidInput naming the field."""
    if raw.get("bytes") is not None:
        raise InvalidInput("message", "binary frames are not accepted; send JSON text")
    text = raw.get("text")
    if not isinstance(text, str):
        raise InvalidInput("message", "an empty frame")
    if len(text) > 4096:
        raise InvalidInput("message", f"at most 4096 characters, got {len(text)}")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise InvalidInput("message", "not valid JSON") from None
    try:
        return ClientMessage.validate_python(data)
    except ValidationError as exc:
        raise invalid_input(exc, "message") from None


@router.websocket("/runs/{run_id}/ws")
async def run_socket(websocket: WebSocket, run_id: str) -> None:
    await websocket.accept()
    live = await manager_of(websocket).get(run_id)
    if live is None:
        await websocket.send_json({"type": "error", "field": "run", "message": f"run: no run {run_id[:40]!r}"})
        await websocket.close(code=4404)
        return
    queue = live.subscribe()
    await websocket.send_text(await live.snapshot_text())  # the minutes after it arrive through the queue

    await serve_socket(
        websocket,
        queue,
        lambda raw: handle(live, parse_message(raw)),
        lambda: live.unsubscribe(queue),
        f"the socket of run {live.id}",
    )

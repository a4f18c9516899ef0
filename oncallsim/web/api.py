"""The JSON API and the WebSocket of a live run. Every input is validated (pydantic, then the model's own
ranges) before anything is written; an invalid message gets an error and changes nothing."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Request, UploadFile, WebSocket, WebSocketDisconnect
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from oncallsim.model import CONTROL_SPECS, InvalidInput, param_info
from oncallsim.scenarios import builtin_scenarios
from oncallsim.simulation import MAX_SEED, RunFile, Simulation
from oncallsim.validation import invalid_input
from oncallsim.web.live import SPEEDS, LiveRun, RunManager, check_speed

__all__ = ["InvalidInput", "NewRun", "router"]

router = APIRouter(prefix="/api")


class NewRun(BaseModel):
    model_config = ConfigDict(extra="forbid")

    scenario: str
    seed: int | None = Field(default=None, ge=0, le=MAX_SEED, description="random when omitted")
    speed: int = 4
    clock: str | None = None
    minutes: int | None = None
    overrides: dict[str, float | int | bool | str] = Field(default_factory=dict)
    paused: bool = False


class ActionMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["action"]
    control: str
    value: bool | int | float | None = None


class PauseMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["pause", "resume", "step"]


class SpeedMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["speed"]
    value: int


ClientMessage = TypeAdapter(Annotated[ActionMessage | PauseMessage | SpeedMessage, Field(discriminator="type")])


def manager_of(request: Request | WebSocket) -> RunManager:
    return request.app.state.manager  # type: ignore[no-any-return]


def random_seed() -> int:
    return secrets.randbelow(MAX_SEED + 1)


async def start_run(manager: RunManager, new: NewRun) -> LiveRun:
    """Build the simulation first (it validates everything), then store and start it."""
    check_speed(new.speed)
    seed = random_seed() if new.seed is None else new.seed
    sim = Simulation(new.scenario, seed=seed, overrides=new.overrides, clock=new.clock or None, minutes=new.minutes)
    return await manager.create(sim, new.speed, paused=new.paused)


def parse(model: type[BaseModel], data: Any, source: str) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise invalid_input(exc, source) from None


def get_live(request: Request | WebSocket, run_id: str) -> LiveRun:
    live = manager_of(request).get(run_id)
    if live is None:
        raise InvalidInput("run", f"no run {run_id!r}")
    return live


@router.get("/scenarios")
async def scenarios() -> list[dict[str, Any]]:
    return [s.model_dump(mode="json") for s in builtin_scenarios().values()]


@router.get("/controls")
async def controls() -> dict[str, Any]:
    return {
        "controls": {
            name: {"kind": s.kind, "default": s.default, "min": s.min, "max": s.max, "unit": s.unit}
            for name, s in CONTROL_SPECS.items()
        },
        "speeds": list(SPEEDS),
        "params": [p.__dict__ for p in param_info()],
    }


@router.get("/stats")
async def stats(request: Request) -> dict[str, Any]:
    """How the clock keeps up: live runs in memory, how many tick, and the worst lateness of a minute."""
    runs = list(manager_of(request).runs.values())
    return {
        "runs_in_memory": len(runs),
        "ticking": sum(not r.paused and not r.done for r in runs),
        "viewers": sum(len(r.subscribers) for r in runs),
        "max_lag_ms": max((r.max_lag_s for r in runs), default=0.0) * 1000.0,
    }


@router.post("/runs", status_code=201)
async def create_run(request: Request) -> dict[str, Any]:
    new = parse(NewRun, await request.json(), "run")
    live = await start_run(manager_of(request), new)
    return {"id": live.id, "url": f"/runs/{live.id}", "seed": live.sim.seed}


@router.get("/runs")
async def list_runs(request: Request) -> list[dict[str, Any]]:
    return [
        {
            "id": r.id,
            "created_at": r.created_at,
            "scenario": r.scenario,
            "seed": r.seed,
            "played": r.played,
            "status": r.status,
            "passed": None if r.summary is None else r.summary.get("passed"),
        }
        for r in manager_of(request).store.recent()
    ]


@router.get("/runs/{run_id}")
async def get_run(request: Request, run_id: str) -> dict[str, Any]:
    return get_live(request, run_id).snapshot()


@router.post("/runs/{run_id}/actions")
async def post_action(request: Request, run_id: str) -> dict[str, Any]:
    live = get_live(request, run_id)
    body = await request.json()
    message = parse(ActionMessage, {"type": "action", **body} if isinstance(body, dict) else body, "action")
    return {"accepted": live.act(message.control, message.value).to_dict()}


@router.post("/runs/{run_id}/control")
async def post_control(request: Request, run_id: str) -> dict[str, Any]:
    live = get_live(request, run_id)
    handle(live, await request.json())
    return live.state()


@router.get("/runs/{run_id}/runfile")
async def run_file(request: Request, run_id: str) -> JSONResponse:
    live = get_live(request, run_id)
    return JSONResponse(
        json.loads(live.sim.run_file().model_dump_json()),
        headers={"Content-Disposition": f'attachment; filename="oncallsim-{live.sim.scenario.id}-{run_id}.json"'},
    )


@router.get("/runs/{run_id}/debrief")
async def debrief_json(request: Request, run_id: str) -> dict[str, Any]:
    live = get_live(request, run_id)
    if live.report is None:
        raise InvalidInput("run", "the run is not over yet: its debrief comes at the end")
    return live.report.model_dump(mode="json")


@router.post("/runs/import", status_code=201)
async def import_run(request: Request, file: UploadFile) -> dict[str, Any]:
    text = (await file.read()).decode("utf-8", errors="replace")
    run = RunFile.parse(text, file.filename or "run file")
    run_id = await manager_of(request).import_run(run)
    return {"id": run_id, "url": f"/runs/{run_id}/debrief"}


def handle(live: LiveRun, data: Any) -> None:
    """One client message: an action, pause/resume/step, or a speed change."""
    try:
        message = ClientMessage.validate_python(data)
    except ValidationError as exc:
        raise invalid_input(exc, "message") from None
    if isinstance(message, ActionMessage):
        live.act(message.control, message.value)
    elif isinstance(message, SpeedMessage):
        live.set_speed(message.value)
    elif message.type == "pause":
        live.pause()
    elif message.type == "resume":
        live.resume()
    else:
        live.step_once()


@router.websocket("/runs/{run_id}/ws")
async def run_socket(websocket: WebSocket, run_id: str) -> None:
    await websocket.accept()
    live = manager_of(websocket).get(run_id)
    if live is None:
        await websocket.send_json({"type": "error", "field": "run", "message": f"run: no run {run_id!r}"})
        await websocket.close(code=4404)
        return
    queue = live.subscribe()
    await websocket.send_json(live.snapshot())

    async def sender() -> None:
        while True:
            await websocket.send_text(await queue.get())

    sending = asyncio.create_task(sender())
    try:
        while True:
            try:
                data = json.loads(await websocket.receive_text())
                handle(live, data)
            except (InvalidInput, json.JSONDecodeError) as exc:
                field = getattr(exc, "field", "message")
                error = {"type": "error", "field": field, "message": str(exc)}
                queue.put_nowait(json.dumps(error))  # one writer: the sender
    except WebSocketDisconnect:
        pass
    finally:
        sending.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sending
        live.unsubscribe(queue)

"""The MCP server (``oncallsim mcp``): an AI agent plays the seeded incidents through the Model Context Protocol,
with the official Python SDK (the ``mcp`` extra), over stdio or streamable HTTP.

Tools: ``list_scenarios``, ``start_run``, ``observe``, ``act``, ``advance``, ``end``, ``debrief``. Resources: the
model reference (``oncallsim://model``) and each built-in scenario's briefing
(``oncallsim://scenarios/ID/briefing``). Everything the tools say comes from ``agents/play.py``, which knows no
protocol; this module only carries it. A refusal (``InvalidInput``) becomes a tool error of one line naming the
field and what is allowed, which the model reads and can correct (an error result: ``is_error`` set).

The computing (a minute, a debrief's replays) runs on worker threads, never on the event loop; an engine that is
not prepared on this machine is prepared by the preparer process (``readiness``: this process never compiles),
``start_run`` waiting for it at most ``PREPARE_WAIT_S`` with progress notifications, then asking to be called
again. Over HTTP the app is wrapped in the web console's own guard (``web/security.py``): the Host allow-list
against DNS rebinding, the Origin checks, the sizes, and the access token required beyond loopback
(docs/web.md, "Security"; docs/agents.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resources import FunctionResource
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import CallToolResult, TextContent
from pydantic import WithJsonSchema

from oncallsim.agents.play import (
    Runs,
    briefing_text,
    controls_text,
    model_reference,
    scenario_list_text,
)
from oncallsim.model import InvalidInput
from oncallsim.model.engine import ENGINES, prepare
from oncallsim.readiness import Readiness, start_preparer, status
from oncallsim.scenarios import builtin_scenarios
from oncallsim.simulation import MAX_SEED
from oncallsim.web.security import Guard, SecurityConfig

__all__ = ["MCP_PATH", "PREPARE_WAIT_S", "build_server", "http_app", "serve_http", "serve_stdio"]

MCP_PATH = "/mcp"
# How long start_run waits for an engine's preparation before asking to be called again: under the minute most
# clients wait for a tool's answer. The preparer goes on meanwhile (a process of its own).
PREPARE_WAIT_S = 45.0
PREPARE_POLL_S = 0.5
# A preparer just started writes its first progress within seconds; "missing" before then means "starting".
PREPARER_START_S = 10.0

# The arguments' schemas say their types to the client; the values are checked here, by the same checks as every
# other surface, so that a wrong type is refused in one line naming the field (the SDK's own validation would
# answer a multi-line pydantic report).
Text = Annotated[Any, WithJsonSchema({"type": "string"})]
OptionalText = Annotated[Any, WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "null"}]})]
Seed = Annotated[Any, WithJsonSchema({"type": "integer", "minimum": 0, "maximum": MAX_SEED})]
Minutes = Annotated[Any, WithJsonSchema({"type": "integer", "minimum": 1})]
Value = Annotated[Any, WithJsonSchema({"type": ["string", "number", "integer", "boolean", "null"]})]

INSTRUCTIONS = (
    "oncallsim: an on-call simulator. Start a run of a scenario (start_run), read its briefing, then play it as "
    "the on-call engineer: observe the console, act on a control (it applies from the next minute), advance the "
    "clock, and call debrief when the run is over (played to its end, or ended with end). You see what a person "
    "sees in the console, nothing of the future. The model reference is the resource oncallsim://model."
)


def refusal(exc: InvalidInput) -> CallToolResult:
    """A refusal as the tool's error result: the one line ``field: what is allowed``, as the CLI and the API say
    it (the model reads it and corrects; the SDK's ``ToolError`` would put its own prefix before it)."""
    return CallToolResult(content=[TextContent(type="text", text=str(exc))], is_error=True)


async def answer(fn: Callable[..., str], *args: Any) -> str | CallToolResult:
    """``fn(*args)`` on a worker thread (a minute, a debrief: never on the event loop), a refusal as its error."""
    try:
        return await anyio.to_thread.run_sync(fn, *args)
    except InvalidInput as exc:
        return refusal(exc)


async def prepared(engine: str, ctx: Context | None) -> float:
    """Wait until ``engine`` is loaded in this process: prepared by the preparer process if it is not (never
    compiled here), its progress sent as notifications; loaded from the cache on a worker thread. The seconds
    waited. Past ``PREPARE_WAIT_S`` an ``InvalidInput`` says how far it is and to try again."""
    began = time.monotonic()
    now = status(engine)
    if not now.ready:
        start_preparer([engine])
    while not now.ready:
        waited = time.monotonic() - began
        if now.state == "missing" and waited <= PREPARER_START_S:
            now = Readiness(engine, "preparing")  # the preparer is starting
        if now.state == "failed":
            raise InvalidInput("engine", now.line())
        if now.state == "missing":  # the preparer ended without a marker (killed): another one
            start_preparer([engine])
        if waited > PREPARE_WAIT_S:
            raise InvalidInput("engine", f"{now.line()}; call start_run again in a minute (it goes on meanwhile)")
        if ctx is not None:
            await ctx.report_progress(round(100 * now.share), 100, now.line())
        await anyio.sleep(PREPARE_POLL_S)
        now = status(engine)
    await anyio.to_thread.run_sync(prepare, ENGINES[engine])  # from the cache: well under a second
    return time.monotonic() - began


def build_server(runs: Runs | None = None) -> MCPServer:
    """The server with its tools and resources, over ``runs`` (a new registry by default)."""
    runs = runs if runs is not None else Runs()
    server: MCPServer = MCPServer(name="oncallsim", instructions=INSTRUCTIONS, log_level="WARNING")

    tool = server.tool(structured_output=False)  # text for the model to read; a refusal is an error result

    @tool
    def list_scenarios() -> str:
        """The built-in scenarios: id, title, start, length, engine and a one-line summary each."""
        return scenario_list_text()

    @tool
    async def start_run(
        scenario: Text,
        seed: Seed = 0,
        difficulty: Text = "normal",
        engine: OptionalText = None,
        ctx: Context | None = None,
    ) -> str | CallToolResult:
        """Start a run of a built-in scenario. seed: 0 to 4294967295 (the same seed and actions give the same run).
        difficulty: guided (the clock stops at the incident and the page, with hints), normal (it stops at the
        page) or hard (never stops). engine: minute (formulas, fast) or request (every request; slower), default
        the scenario's. Returns the run id, the briefing and the controls. Nothing moves until you advance."""
        try:
            sim = await anyio.to_thread.run_sync(runs.new_run, scenario, seed, difficulty, engine)
            waited = await prepared(sim.engine.name, ctx)
            run = runs.keep(sim, difficulty)
        except InvalidInput as exc:
            return refusal(exc)
        said = f" (the {sim.engine.name} engine was prepared first: {waited:.0f} s)" if waited >= 1 else ""
        return (
            f"Started run {run.id}{said}: {sim.scenario.id}, seed {sim.seed}, {sim.engine.name} engine, "
            f"{run.difficulty} difficulty, {sim.length} minutes from {sim.plan.clock(0)}.\n\n"
            f"{briefing_text(sim.scenario)}\n{controls_text(sim)}"
        )

    @tool
    def observe(run_id: Text) -> str | CallToolResult:
        """The console now: the time, the page, the status table of the last minute (in the console's units), the
        settings, the actions queued, the recent events, the fleet view (request engine), and on guided the hint."""
        try:
            return runs.observe(run_id)  # a sync tool: the SDK calls it on a worker thread
        except InvalidInput as exc:
            return refusal(exc)

    @tool
    async def act(run_id: Text, control: Text, value: Value = None) -> str | CallToolResult:
        """Queue an action for the next minute: a control (a setting, a button such as rollback, an instance action
        such as eject) and its value (none for a button; an instance by its number or id, e.g. 3 or "i-03"). Checked
        as the console checks it; refused with the field and its allowed values."""
        return await answer(runs.act, run_id, control, value)

    @tool
    async def advance(run_id: Text, minutes: Minutes = 1) -> str | CallToolResult:
        """Compute the next minutes (1 to what is left of the run, at most a day); the actions queued apply to the
        first. Stops early where the console's clock stops for a person (normal: the page; guided: also the
        incident's start). Returns what changed and the console after it."""
        return await answer(runs.advance, run_id, minutes)

    @tool
    async def end(run_id: Text) -> str | CallToolResult:
        """End the run where it stands: its debrief covers the minutes played."""
        return await answer(runs.end, run_id)

    @tool
    async def debrief(run_id: Text) -> str | CallToolResult:
        """The debrief of a run that is over (Markdown): score, objectives, what it cost, the timeline, and the
        same run played by hands-off and by the playbook on the same draws."""
        return await answer(runs.debrief, run_id)

    server.add_resource(
        FunctionResource.from_function(
            model_reference,
            "oncallsim://model",
            name="model",
            title="The model reference",
            description="Every formula with its defaults, the parameters and the controls (the console's /model).",
            mime_type="text/markdown",
        )
    )
    for sc in builtin_scenarios().values():
        server.add_resource(
            FunctionResource.from_function(
                lambda sc=sc: briefing_text(sc),
                f"oncallsim://scenarios/{sc.id}/briefing",
                name=f"briefing-{sc.id}",
                title=f"Briefing: {sc.title}",
                description=sc.summary,
                mime_type="text/markdown",
            )
        )
    return server


def serve_stdio(runs: Runs | None = None) -> None:
    """Serve one client on this process's stdin and stdout (a desktop client spawns it)."""
    build_server(runs).run("stdio")


def http_app(host: str, token: str | None, allow_hosts: Iterable[str] = (), runs: Runs | None = None) -> Any:
    """The streamable-HTTP app behind the console's guard (``web/security.py``): the SDK's own Host check is off,
    since the guard's is the one rule for every surface (loopback names, the bind address, ``--allow-host``)."""
    app = build_server(runs).streamable_http_app(
        streamable_http_path=MCP_PATH,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        host=host,
    )
    return Guard(app, SecurityConfig.for_bind(host, allow_hosts, token))


def serve_http(host: str, port: int, token: str | None, allow_hosts: Iterable[str] = ()) -> None:
    import uvicorn

    uvicorn.run(http_app(host, token, allow_hosts), host=host, port=port, log_level="warning")

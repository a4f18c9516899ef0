"""The MCP server (``oncallsim mcp``, docs/agents.md): a client session of the official SDK plays bad-deploy to its
debrief over stdio and over streamable HTTP (real servers, in processes of their own); bad arguments are refused
in one line naming the field; the debrief the agent reads is the one ``Simulation`` gives for the same scenario,
seed and actions (a run's numbers never depend on the surface that played it)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

import anyio
import httpx2
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from oncallsim.agents.mcp_server import MCP_PATH, build_server
from oncallsim.agents.play import Runs
from oncallsim.debrief import make_report
from oncallsim.debrief.markdown import render_markdown
from oncallsim.policies import counterfactuals
from oncallsim.simulation import Action, Simulation
from tests.server import free_port

ROOT = Path(__file__).resolve().parent.parent
SEED = 7
TOKEN = "a-test-token-of-24-chars"
TOOLS = {"list_scenarios", "start_run", "observe", "act", "advance", "end", "debrief"}


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


async def call(session: Any, tool: str, **arguments: Any) -> str:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, text_of(result)
    return text_of(result)


async def play_bad_deploy(session: Any) -> tuple[str, int]:
    """An agent's game: read the briefing, advance until the clock stops at the page, roll back, play to the end,
    read the debrief. Returns the debrief and the minute the rollback applied to."""
    assert {tool.name for tool in (await session.list_tools()).tools} == TOOLS
    assert "bad-deploy: Bad deploy" in await call(session, "list_scenarios")
    resources = {str(r.uri) for r in (await session.list_resources()).resources}
    assert {"oncallsim://model", "oncallsim://scenarios/bad-deploy/briefing"} <= resources
    briefing = await session.read_resource("oncallsim://scenarios/bad-deploy/briefing")
    assert "Protect the budget" in briefing.contents[0].text
    started = await call(session, "start_run", scenario="bad-deploy", seed=SEED, engine="minute")
    match = re.search(r"Started run ([0-9a-f]+)", started)
    assert match is not None, started
    run_id = match.group(1)
    assert "rollback (Roll back)" in started  # the controls, with what each takes
    opening = await call(session, "observe", run_id=run_id)
    assert "Nothing computed yet" in opening and "Events: none yet." in opening  # nothing of the future
    paged = await call(session, "advance", run_id=run_id, minutes=120)
    assert "stopped early: the page fired" in paged and "PAGE FIRING since" in paged
    assert "Error rate" in paged and "Traffic on the bad build" in paged  # the console's status table
    now = re.search(r"minute (\d+) of 120", paged)
    assert now is not None, paged
    minute = int(now.group(1))
    assert "(the next minute): Roll back." in await call(session, "act", run_id=run_id, control="rollback")
    rest = await call(session, "advance", run_id=run_id, minutes=120 - minute)
    assert "Over: played to its end" in rest and "rollback started" in rest
    return await call(session, "debrief", run_id=run_id), minute


def expected_debrief(rollback_minute: int) -> str:
    """The same scenario, seed, engine and action, played by ``Simulation`` directly."""
    sim = Simulation("bad-deploy", seed=SEED, engine="minute")
    sim.run([Action(rollback_minute, "rollback")])
    return render_markdown(make_report(sim, counterfactuals(sim)))


def server_env() -> dict[str, str]:
    env = {"PYTHONPATH": str(ROOT)}
    if "NUMBA_CACHE_DIR" in os.environ:
        env["NUMBA_CACHE_DIR"] = os.environ["NUMBA_CACHE_DIR"]
    return env


def test_an_agent_plays_bad_deploy_over_stdio() -> None:
    params = StdioServerParameters(command=sys.executable, args=["-m", "oncallsim", "mcp"], env=server_env())

    async def main() -> tuple[str, int]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await play_bad_deploy(session)

    debrief, minute = anyio.run(main)
    assert debrief.startswith("# Postmortem — Bad deploy (seed 7)")
    assert debrief == expected_debrief(minute)


@contextmanager
def http_server(extra: list[str], log_path: Path) -> Iterator[str]:
    """``oncallsim mcp --transport http`` on a free loopback port, waited for until it answers (any HTTP status:
    the guard answers before the SDK), stopped after. Its output goes to a file (a full pipe would stall it)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = log_path.open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "oncallsim", "mcp", "--transport", "http", "--port", str(port), *extra],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, **server_env()},
        text=True,
    )
    deadline = time.monotonic() + 120
    try:
        while True:  # wait for the condition "it answers", bounded by a deadline
            if process.poll() is not None:
                raise RuntimeError(f"the server exited: {log_path.read_text()}")
            try:
                urllib.request.urlopen(base + MCP_PATH, timeout=1).close()
                break
            except urllib.error.HTTPError:
                break  # an answer (401: no token) is a server up
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def status_of(url: str, headers: dict[str, str]) -> int:
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def test_an_agent_plays_bad_deploy_over_streamable_http_behind_the_consoles_guard(tmp_path: Path) -> None:
    with http_server(["--token", TOKEN], tmp_path / "server.log") as base:
        url = base + MCP_PATH
        # the console's rules (web/security.py): a token when one is set, a loopback Host against DNS rebinding
        assert status_of(url, {}) == 401
        assert status_of(url, {"Authorization": f"Bearer {TOKEN}", "Host": "rebind.example.com"}) == 400

        async def main() -> tuple[str, int]:
            async with (
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}) as http,
                streamable_http_client(url, http_client=http) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return await play_bad_deploy(session)

        debrief, minute = anyio.run(main)
    assert debrief == expected_debrief(minute)


def refusals(runs: Runs, calls: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """Each call's answer from the server (in memory), every one of them an error."""

    async def main() -> list[str]:
        out = []
        async with Client(build_server(runs)) as client:
            for tool, arguments in calls:
                result = await client.call_tool(tool, arguments)
                assert result.is_error, (tool, arguments, text_of(result))
                out.append(text_of(result))
        return out

    return anyio.run(main)


def test_bad_arguments_are_refused_in_one_line_naming_the_field() -> None:
    runs = Runs()
    run = runs.keep(Simulation("bad-deploy", seed=1, engine="minute"))
    said = refusals(
        runs,
        [
            ("start_run", {"scenario": "no-such-scenario"}),
            ("start_run", {"scenario": "/etc/passwd"}),
            ("start_run", {"scenario": "bad-deploy", "seed": 2**32}),
            ("start_run", {"scenario": "bad-deploy", "seed": "seven"}),
            ("start_run", {"scenario": "bad-deploy", "difficulty": "easy"}),
            ("start_run", {"scenario": "bad-deploy", "engine": "quantum"}),
            ("act", {"run_id": run.id, "control": "reboot_everything"}),
            ("act", {"run_id": run.id, "control": "floor", "value": 41}),
            ("act", {"run_id": run.id, "control": "balancer", "value": "p2c"}),  # the request engine's only
            ("observe", {"run_id": "feedface"}),
            ("advance", {"run_id": run.id, "minutes": 121}),
            ("advance", {"run_id": run.id, "minutes": 0}),
            ("debrief", {"run_id": run.id}),
            ("end", {"run_id": run.id}),
        ],
    )
    fields = [
        "scenario",
        "scenario",
        "seed",
        "seed",
        "difficulty",
        "engine",
        "control",
        "floor",
        "balancer",
        "run_id",
        "minutes",
        "minutes",
        "run_id",
        "run_id",
    ]
    for line, name in zip(said, fields, strict=True):
        assert "\n" not in line and line.startswith(f"{name}: "), line
    assert "4294967295" in said[2] and "1 to 40" in said[7] and "ends at 11:00" in said[10]
    assert run.sim.minute == 0 and not run.pending  # a refusal changes nothing


def test_live_runs_are_bounded_with_a_clear_error() -> None:
    runs = Runs(max_live=1)
    runs.keep(Simulation("bad-deploy", seed=1, engine="minute"))
    (said,) = refusals(runs, [("start_run", {"scenario": "bad-deploy", "engine": "minute"})])
    assert said == "run: at most 1 live runs at once in this server; end one first (end with its run_id)"


def test_the_python_example_of_docs_agents_md_runs(capsys: pytest.CaptureFixture[str]) -> None:
    text = (ROOT / "docs" / "agents.md").read_text()
    section = text.split("## MCP server", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(code, "docs/agents.md", "exec"), {"__name__": "docs_agents"})
    assert capsys.readouterr().out == "# Postmortem — Bad deploy (seed 7)\n"


def test_a_start_on_an_unprepared_engine_waits_for_the_preparer_and_says_how_far(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The server never compiles: it starts the preparer process and reads its progress (``readiness.status``),
    sent as MCP progress notifications; past the wait it asks to be called again. The preparer's states are
    played here by a script of readings, not by a compile."""
    import oncallsim.agents.mcp_server as server
    from oncallsim.readiness import Readiness

    readings = iter([Readiness("minute", "missing"), Readiness("minute", "preparing", 0.5, 30.0)])
    started: list[list[str]] = []
    monkeypatch.setattr(server, "status", lambda engine: next(readings, Readiness(engine, "ready", 1.0, 0.0)))
    monkeypatch.setattr(server, "start_preparer", lambda engines: started.append(list(engines)))
    monkeypatch.setattr(server, "PREPARE_POLL_S", 0.0)
    heard: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        heard.append((done, total, message))

    async def main() -> tuple[str, str]:
        async with Client(build_server()) as client:
            arguments = {"scenario": "bad-deploy", "engine": "minute"}
            started_run = await client.call_tool("start_run", arguments, progress_callback=progress)
            monkeypatch.setattr(server, "status", lambda engine: Readiness(engine, "preparing", 0.25, 60.0))
            monkeypatch.setattr(server, "PREPARE_WAIT_S", -1.0)  # past the wait at once
            waited = await client.call_tool("start_run", arguments)
            assert waited.is_error
            return text_of(started_run), text_of(waited)

    started_run, waited = anyio.run(main)
    assert started_run.startswith("Started run ")
    assert started == [["minute"], ["minute"]]  # one preparer a start (it declines when one is at work)
    halfway = "preparing the minute engine (compiled once on this machine): 50%, about 30 s of CPU left"
    assert (50, 100, halfway) in heard
    assert waited == (
        "engine: preparing the minute engine (compiled once on this machine): 25%, about 60 s of CPU left; "
        "call start_run again in a minute (it goes on meanwhile)"
    )


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--transport", "http", "--port", "0"], "--port"),
        (["--transport", "http", "--port", "70000"], "--port"),
        (["--transport", "http", "--token", "short"], "--token"),
        (["--port", "8765"], "--port"),  # stdio has no port
        (["--transport", "carrier-pigeon"], "--transport"),
    ],
)
def test_the_command_refuses_bad_options_in_one_line(args: list[str], field: str) -> None:
    from typer.testing import CliRunner

    from oncallsim.cli import app

    result = CliRunner().invoke(app, ["mcp", *args])
    assert result.exit_code == 2 and field in result.output and "Traceback" not in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1

"""An MCP agent contestant, ``mcp:COMMAND`` (docs/arena.md, "MCP agents"): the agent plays the arena's run through
the MCP server's own tools (``agents/mcp_server.py``), as it would play any run of ``oncallsim mcp``.

For each run the arena makes the run itself — its scenario, seed, engine, opening controls and difficulty — and
keeps it in a play registry of its own (``ArenaRuns``: that run and no other live one, so ``start_run`` is
refused and the agent cannot pick another scenario or seed). It serves that registry over streamable HTTP on
127.0.0.1, on a port the system gives, behind the console's guard with a fresh token, then starts ``COMMAND``
(split as a shell would, run without one) with three variables in its environment:

- ``ONCALLSIM_MCP_URL`` — the server's endpoint, ``http://127.0.0.1:PORT/mcp``;
- ``ONCALLSIM_MCP_TOKEN`` — the bearer token (``Authorization: Bearer …``);
- ``ONCALLSIM_RUN_ID`` — the run to play (``observe``, ``act``, ``advance``, ``end``, ``debrief``).

The server times the agent (its side sees every call, whatever the agent's language): a *decision* is the
wall-clock from the agent's start, or from the answer to its previous ``advance``/``end``, to its next
``advance``/``end`` — the thinking between two moves of the clock; a call being computed (an advance, a debrief's
replays) stops that clock. A decision over ``--time-limit``, or the whole game over ``time_limit × (minutes + 1)``
(which bounds an agent that keeps the clock alive without playing), stops the agent; so does lingering past the
time limit once the run is over. Its process group is ended, the run is played to its end hands off, and the row's
``failure`` says why and at which minute, as for the ``agent:`` kind. An agent that exits before the run is over
leaves the rest to hands-off too (not a failure, unless it exited with a status other than 0). The arena then scores
the run as every other contestant's (``arena/play.py``: the same debrief).
"""

from __future__ import annotations

import importlib.util
import os
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from oncallsim.agents.play import Runs
from oncallsim.arena.contestants import Entry, Settings
from oncallsim.model import InvalidInput
from oncallsim.simulation import Simulation

__all__ = ["ENV_RUN_ID", "ENV_TOKEN", "ENV_URL", "ArenaRuns", "McpAgent", "check_mcp", "mcp_entry"]

ENV_URL = "ONCALLSIM_MCP_URL"
ENV_TOKEN = "ONCALLSIM_MCP_TOKEN"
ENV_RUN_ID = "ONCALLSIM_RUN_ID"
POLL_S = 0.02  # how often the arena looks at its agent (an exit is seen at once: it waits on the process)
STOP_GRACE_S = 2.0  # an agent asked to stop (SIGTERM) is killed this long after
SERVER_START_S = 30.0


class ArenaRuns(Runs):
    """The play registry of one arena run: the run the arena made and no other live one (``max_live=1``), each
    move of the clock timed from the server's side, the refused actions counted."""

    def __init__(self) -> None:
        super().__init__(max_live=1, max_kept=1)
        self.times: list[float] = []
        self.refused = 0
        self.busy = 0
        self.idle_since = time.monotonic()
        self.guard = threading.Lock()

    def start_clock(self) -> None:
        with self.guard:
            self.idle_since = time.monotonic()

    def idle(self) -> float:
        """Seconds since the agent last moved the clock (0 while a call is being computed)."""
        with self.guard:
            return 0.0 if self.busy else time.monotonic() - self.idle_since

    def _work(self, fn: Callable[..., str], *args: Any, decision: bool) -> str:
        with self.guard:
            thought = time.monotonic() - self.idle_since
            self.busy += 1
        try:
            said = fn(*args)
            if decision:
                with self.guard:
                    self.times.append(thought)
            return said
        finally:
            with self.guard:
                self.busy -= 1
                self.idle_since = time.monotonic()

    def advance(self, run_id: Any, minutes: Any = 1) -> str:
        return self._work(super().advance, run_id, minutes, decision=True)

    def end(self, run_id: Any) -> str:
        return self._work(super().end, run_id, decision=True)

    def debrief(self, run_id: Any) -> str:
        return self._work(super().debrief, run_id, decision=False)

    def act(self, run_id: Any, control: Any, value: Any = None) -> str:
        try:
            return super().act(run_id, control, value)
        except InvalidInput:
            with self.guard:
                self.refused += 1
            raise


class _Server:
    """The MCP server over streamable HTTP in this process: a uvicorn server on a thread, on a socket bound here to
    a port the system gives (no race for a free port), behind the console's guard with ``token``."""

    def __init__(self, runs: Runs, token: str) -> None:
        import uvicorn

        from oncallsim.agents.mcp_server import MCP_PATH, http_app

        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}{MCP_PATH}"
        config = uvicorn.Config(http_app("127.0.0.1", token, runs=runs), log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + SERVER_START_S
        while not self.server.started:  # wait for the condition, bounded
            if not self.thread.is_alive() or time.monotonic() > deadline:
                self.sock.close()
                raise RuntimeError("the arena's MCP server did not start")
            time.sleep(POLL_S)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10.0)
        self.sock.close()


def _stop(process: subprocess.Popen[bytes]) -> None:
    """End the agent's process group (it was started in a session of its own): SIGTERM, then SIGKILL."""
    for sig, wait in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, None)):
        try:
            os.killpg(process.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


class McpAgent:
    """Plays one arena run with an MCP agent's command; ``failure`` says why it was stopped (None: it was not)."""

    def __init__(self, command: Sequence[str], settings: Settings) -> None:
        self.command = list(command)
        self.settings = settings
        self.failure: str | None = None

    def drive(self, sim: Simulation) -> tuple[list[float], int]:
        """Let the agent play ``sim`` through the server until it exits or is stopped; the decisions' wall-clock
        (s) and the actions refused. ``sim`` is left where the agent left it (the arena plays the rest)."""
        runs = ArenaRuns()
        run = runs.keep(sim, self.settings.difficulty)
        token = secrets.token_urlsafe(24)
        server = _Server(runs, token)
        server.start()
        try:
            env = {**os.environ, ENV_URL: server.url, ENV_TOKEN: token, ENV_RUN_ID: run.id}
            try:
                # stdout to the arena's stderr: the arena's stdout is its table
                process = subprocess.Popen(
                    self.command, stdin=subprocess.DEVNULL, stdout=2, env=env, start_new_session=True
                )
            except OSError as exc:
                self.failure = f"could not start {self.command[0]!r}: {exc.strerror or exc}"
                return [], 0
            runs.start_clock()
            began = time.monotonic()
            limit = self.settings.time_limit_s
            overall = limit * (sim.length + 1)
            try:
                while True:
                    try:
                        code = process.wait(timeout=POLL_S)
                    except subprocess.TimeoutExpired:
                        code = None
                    if code is not None:
                        if code != 0:
                            self.failure = f"minute {sim.minute}: the agent exited with status {code}"
                        break
                    idle = runs.idle()
                    if idle > limit:
                        if run.over:
                            self.failure = f"minute {sim.minute}: still running {limit:g} s after the run was over"
                        else:
                            with runs.guard:  # the decision it did not make, counted as the agent: kind does
                                runs.times.append(idle)
                            self.failure = f"minute {sim.minute}: no advance within {limit:g} s"
                        break
                    if time.monotonic() - began > overall:
                        self.failure = f"minute {sim.minute}: over the whole game's limit of {overall:g} s"
                        break
            finally:
                _stop(process)
        finally:
            with run.lock:  # an advance being computed ends first; none starts after
                run.ended = True
            server.stop()
        return list(runs.times), runs.refused


def check_mcp(arg: str) -> list[str]:
    """``mcp:COMMAND`` → the command's words; refused in one line: no command, a command not found, no SDK."""
    try:
        words = shlex.split(arg)
    except ValueError as exc:
        raise InvalidInput("--contestant", f"mcp: cannot read the command: {exc}") from None
    if not words:
        raise InvalidInput("--contestant", "mcp: needs a command, e.g. mcp:'python my_agent.py'")
    if shutil.which(words[0]) is None:
        raise InvalidInput("--contestant", f"mcp: command not found: {words[0][:120]!r}")
    if importlib.util.find_spec("mcp") is None or importlib.util.find_spec("uvicorn") is None:
        raise InvalidInput("--contestant", "mcp: needs the MCP server's extra: pip install 'oncallsim[mcp]'")
    return words


def mcp_entry(arg: str, settings: Settings) -> Entry:
    agent = McpAgent(shlex.split(arg), settings)
    return Entry(drive=agent.drive, failure=lambda: agent.failure)

"""An agent contestant: a program that plays over JSON lines on its stdin and stdout (docs/arena.md, "Agents").

The arena starts the program once per run and writes one JSON object a line to its stdin:

- ``{"type": "start", "scenario", "title", "briefing", "seed", "engine", "difficulty", "minutes",
  "time_limit_s"}`` — no reply;
- ``{"type": "observe", "minute", "clock", "last", "controls", "refused"}`` before each minute — ``last`` is the
  minute just computed as ``oncallsim run --format jsonl`` writes it (null before the first), ``controls`` the
  settings in force, ``refused`` the agent's actions of the previous minute the run would not take, one line
  each. The agent answers one line, ``{"actions": [{"control": NAME, "value": V}, …]}`` (``value`` left out
  for a button), within the time limit;
- ``{"type": "end"}`` — then its stdin closes.

It sees what a policy's ``Observation`` holds (the console), never the scenario's draws. An agent that answers
late, answers what is not JSON, or exits has its process stopped and plays the rest of the run hands off; the
run's row says why. The MCP server's agents play through their own kind, ``mcp:COMMAND`` (``arena/mcp_agent.py``).
"""

from __future__ import annotations

import json
import math
import queue
import subprocess
import threading
from collections.abc import Iterable, Sequence
from typing import IO, Any

from oncallsim.arena.contestants import Settings
from oncallsim.model import SETTINGS
from oncallsim.simulation import Observation

__all__ = ["MAX_LINE_BYTES", "AgentPolicy", "plain"]

MAX_LINE_BYTES = 1 << 20  # a reply longer than this is not an answer
MAX_ACTIONS = 64  # a minute's actions at most


def plain(value: Any) -> Any:
    """A value JSON can carry: NaN and infinities as null, tuples as lists, anything odd as its text."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    try:
        return plain(value.item())  # a numpy scalar
    except AttributeError:
        return str(value)


class AgentPolicy:
    """A ``Policy`` whose decisions come from a program; ``failure`` says why it stopped playing (None: it did
    not). The arena's loop tells it which actions the run refused (``refused``)."""

    name = "agent"

    def __init__(self, command: Sequence[str], settings: Settings) -> None:
        self.command = list(command)
        self.settings = settings
        self.process: subprocess.Popen[bytes] | None = None
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.failure: str | None = None
        self.refused: list[str] = []
        self.engine, self.minutes = "", 0

    def reset(self, seed: int) -> None:
        self.seed = seed

    def begin(self, engine: str, minutes: int) -> None:
        """The arena's loop says, before the first minute, what the run is (the start line carries it)."""
        self.engine, self.minutes = engine, minutes

    def tell_refused(self, lines: list[str]) -> None:
        """The actions of the minute just played that the run refused, one line each (the next observation's)."""
        self.refused.extend(lines)

    def start(self, observation: Observation) -> None:
        try:
            self.process = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        except OSError as exc:
            self.failure = f"could not start {self.command[0]!r}: {exc.strerror or exc}"
            return
        threading.Thread(target=_read_lines, args=(self.process.stdout, self.lines), daemon=True).start()
        scenario = observation.scenario
        self._send(
            {
                "type": "start",
                "scenario": scenario.id,
                "title": scenario.title,
                "briefing": scenario.briefing,
                "seed": self.seed,
                "engine": self.engine,
                "difficulty": self.settings.difficulty,
                "minutes": self.minutes,
                "time_limit_s": self.settings.time_limit_s,
            }
        )

    def decide(self, observation: Observation) -> Iterable[tuple[str, Any]]:
        if self.failure is not None:
            return []
        if self.process is None:
            self.start(observation)
            if self.failure is not None:
                return []
        controls = observation.controls
        self._send(
            {
                "type": "observe",
                "minute": observation.minute,
                "clock": observation.clock,
                "last": observation.last.to_dict() if observation.last is not None else None,
                "controls": {**{n: getattr(controls, n) for n in SETTINGS}, **controls.world_settings()},
                "refused": self.refused,
            }
        )
        self.refused = []
        if self.failure is not None:
            return []
        try:
            line = self.lines.get(timeout=self.settings.time_limit_s)
        except queue.Empty:
            return self._fail(f"minute {observation.minute}: no answer within {self.settings.time_limit_s:g} s")
        if line is None:
            return self._fail(f"minute {observation.minute}: the agent's process ended")
        return self._actions(line, observation.minute)

    def _actions(self, line: bytes, minute: int) -> list[tuple[str, Any]]:
        if len(line) > MAX_LINE_BYTES:
            return self._fail(f"minute {minute}: an answer over {MAX_LINE_BYTES} bytes")
        try:
            answer = json.loads(line)
        except (ValueError, RecursionError):
            return self._fail(f"minute {minute}: an answer that is not JSON: {line[:80]!r}")
        items = answer.get("actions") if isinstance(answer, dict) else None
        if not isinstance(items, list) or len(items) > MAX_ACTIONS:
            return self._fail(
                f'minute {minute}: expected {{"actions": [...]}} (at most {MAX_ACTIONS}), got {line[:80]!r}'
            )
        out: list[tuple[str, Any]] = []
        for item in items:
            if not isinstance(item, dict) or not isinstance(item.get("control"), str):
                self.refused.append(f"{str(item)[:80]}: an action is {{'control': NAME, 'value': V}}")
                continue
            out.append((item["control"], item.get("value")))
        return out

    def _fail(self, why: str) -> list[tuple[str, Any]]:
        self.failure = why
        self.close()
        return []

    def _send(self, message: dict[str, Any]) -> None:
        if self.process is None or self.process.stdin is None:
            return
        try:
            self.process.stdin.write(json.dumps(plain(message)).encode() + b"\n")
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            self.failure = self.failure or "the agent's process ended"

    def close(self) -> None:
        """Say the run is over, close its stdin, give it a moment, then end it."""
        process, self.process = self.process, None
        if process is None:
            return
        try:
            if process.stdin is not None and self.failure is None:
                process.stdin.write(b'{"type": "end"}\n')
                process.stdin.flush()
        except (BrokenPipeError, OSError):
            pass
        try:
            if process.stdin is not None:
                process.stdin.close()
        except OSError:
            pass
        try:
            process.wait(timeout=2.0 if self.failure is None else 0.0)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _read_lines(stream: IO[bytes] | None, lines: queue.Queue[bytes | None]) -> None:
    """The agent's stdout, line by line, into ``lines``; None once it closes."""
    if stream is not None:
        while True:
            line = stream.readline(MAX_LINE_BYTES + 1)
            if not line:
                break
            lines.put(line)
    lines.put(None)

"""The arena's contestants: who plays, as ``NAME=SPEC`` on the command line (docs/arena.md).

A contestant is a *kind* and its argument, ``KIND:ARG``. Each kind turns its argument into an ``Entry``: the
opening controls it plays with and a fresh player (a ``Policy``) for each run. Kinds are registered in ``KINDS``,
so a new way to play joins without touching the arena's loop:

- ``policy:NAME`` — a built-in policy (``hands-off``, ``textbook``) or ``module:attr`` (``policies/base.py``);
- ``person[:SECONDS[@SPEED]]`` — the playbook at a person's pace (``policies/person.py``);
- ``controls:NAME=VALUE,…`` — opening controls, then hands off (a limiter, and the request engine's plug-in
  controllers once they exist: ``controls:controller=gradient2``);
- ``agent:COMMAND`` — a program speaking JSON lines over stdin/stdout (``arena/agent.py``), each decision
  within the arena's time limit;
- ``mcp:COMMAND`` — an MCP agent: the arena serves its run over the MCP server's tools and starts the command as
  a client of it (``arena/mcp_agent.py``), each move of the clock within the time limit.

A kind whose contestant plays the run itself rather than a minute at a time (the MCP agents) gives its ``Entry`` a
``drive``; the loop (``arena/play.py``) calls it, then plays what is left of the run hands off.

The bare names ``hands-off``, ``textbook`` (also ``playbook``) and ``person`` are shorthands for their kinds;
``bbr``, ``gradient2`` and ``pid-shedder`` for ``controls:`` with that limiter or controller (request engine).
Parsing is pure and cheap (the CLI checks every contestant before a run starts); an ``Entry`` is made in the
process that plays, since a policy or an agent's process does not travel between processes.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from oncallsim.model import InvalidInput
from oncallsim.policies.base import BUILTIN_POLICIES, load_policy
from oncallsim.policies.person import Person, reaction_minutes
from oncallsim.simulation import Policy, Simulation, split_overrides

__all__ = [
    "KINDS",
    "MAX_CONTESTANTS",
    "SHORTHANDS",
    "Contestant",
    "Entry",
    "EntryFactory",
    "Settings",
    "parse_contestant",
    "register_kind",
]

MAX_CONTESTANTS = 32
MAX_PERSON_SECONDS = 3600.0
MAX_PERSON_SPEED = 16.0  # the console's fastest clock (web/pacing.py MAX_SPEED)


@dataclass(frozen=True)
class Settings:
    """What every contestant of one arena shares: the console's difficulty and an agent's time per decision."""

    difficulty: str = "normal"
    time_limit_s: float = 30.0


@dataclass
class Entry:
    """One contestant, ready for one run: its opening controls, its player (None: hands off) and what to call
    when the run is over (an agent's process is stopped there)."""

    overrides: dict[str, Any] = field(default_factory=dict)
    policy: Policy | None = None
    close: Callable[[], None] = lambda: None
    # an agent that broke the rules (over the time limit, a line that is not JSON, its process gone) says why
    # here; the loop then plays the rest of the run hands off
    failure: Callable[[], str | None] = lambda: None
    # a contestant that plays the run itself (an MCP agent, through the server's tools) instead of ``policy``:
    # called with the run, it returns its decisions' wall-clock (s) and the actions refused; the loop then plays
    # the rest of the run hands off
    drive: Callable[[Simulation], tuple[list[float], int]] | None = None


EntryFactory = Callable[[str, Settings], Entry]


@dataclass(frozen=True)
class Contestant:
    """``NAME=KIND:ARG`` as parsed: plain data, so that it travels to a worker process or a Dask worker."""

    name: str
    kind: str
    arg: str

    @property
    def spec(self) -> str:
        return f"{self.kind}:{self.arg}" if self.arg else self.kind

    def entry(self, settings: Settings) -> Entry:
        return KINDS[self.kind][0](self.arg, settings)


def _policy_entry(arg: str, settings: Settings) -> Entry:
    return Entry(policy=load_policy(arg))


def _policy_check(arg: str) -> None:
    if not arg:
        raise InvalidInput("--contestant", "policy: needs a name: policy:textbook, or policy:module:attr")
    if ":" not in arg and arg not in BUILTIN_POLICIES:
        raise InvalidInput(
            "--contestant", f"unknown policy {arg[:80]!r}; built-in: {', '.join(BUILTIN_POLICIES)}, or module:attr"
        )
    load_policy(arg)  # an import that fails, or something that is not a policy: refused now, in one line


def person_pace(arg: str) -> tuple[float, float]:
    """``SECONDS[@SPEED]`` → (seconds, speed): the person's reaction in real seconds, and the clock's speed in
    simulated minutes a second while it runs (1: the console's 1×)."""
    seconds_text, _, speed_text = (arg or "0").partition("@")
    try:
        seconds = float(seconds_text)
        speed = float(speed_text) if speed_text else 1.0
    except ValueError:
        raise InvalidInput("--contestant", f"person: expects SECONDS[@SPEED], got {arg[:80]!r}") from None
    if not 0.0 <= seconds <= MAX_PERSON_SECONDS:
        raise InvalidInput("--contestant", f"person: seconds must be from 0 to {MAX_PERSON_SECONDS:g}, got {arg!r}")
    if not 0.0 < speed <= MAX_PERSON_SPEED:
        raise InvalidInput(
            "--contestant", f"person: speed must be above 0 and at most {MAX_PERSON_SPEED:g}, got {arg!r}"
        )
    return seconds, speed


def _person_entry(arg: str, settings: Settings) -> Entry:
    """The playbook once the console has told the person (the page; on guided difficulty the clock's first stop),
    ``SECONDS`` of reading and reaching the control later, which pass at ``SPEED`` simulated minutes a second.
    The console stops the clock at that moment on guided and normal difficulty: a person who acts while it is
    stopped is ``person:0`` there."""
    seconds, speed = person_pace(arg)
    minutes = reaction_minutes(seconds, speed)
    return Entry(policy=Person(minutes, "stop") if settings.difficulty == "guided" else Person(minutes, "page"))


def parse_controls(arg: str) -> dict[str, Any]:
    """``NAME=VALUE,…`` → opening controls (parameters too: whatever ``--set`` takes), names checked now."""
    out: dict[str, Any] = {}
    for pair in (p for p in arg.split(",") if p.strip()):
        name, sep, value = pair.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise InvalidInput("--contestant", f"controls: expects NAME=VALUE,…, got {pair[:80]!r}")
        out[name.strip()] = value.strip()
    if not out:
        raise InvalidInput("--contestant", "controls: expects NAME=VALUE,… (e.g. controls:limiter=bbr)")
    try:
        split_overrides(out)
    except InvalidInput as exc:
        raise InvalidInput("--contestant", f"controls: {exc.field}: {exc.reason}"[:300]) from None
    return out


def _controls_entry(arg: str, settings: Settings) -> Entry:
    return Entry(overrides=parse_controls(arg))


def _agent_entry(arg: str, settings: Settings) -> Entry:
    from oncallsim.arena.agent import AgentPolicy

    agent = AgentPolicy(shlex.split(arg), settings)
    return Entry(policy=agent, close=agent.close, failure=lambda: agent.failure)


def _agent_check(arg: str) -> None:
    try:
        words = shlex.split(arg)
    except ValueError as exc:
        raise InvalidInput("--contestant", f"agent: cannot read the command: {exc}") from None
    if not words:
        raise InvalidInput("--contestant", "agent: needs a command, e.g. agent:'python my_agent.py'")


def _mcp_entry(arg: str, settings: Settings) -> Entry:
    from oncallsim.arena.mcp_agent import mcp_entry  # the MCP SDK is an extra: imported only when one plays

    return mcp_entry(arg, settings)


def _mcp_check(arg: str) -> None:
    from oncallsim.arena.mcp_agent import check_mcp

    check_mcp(arg)


# kind → (make an entry in the playing process, check the argument at parse time)
KINDS: dict[str, tuple[EntryFactory, Callable[[str], Any]]] = {
    "policy": (_policy_entry, _policy_check),
    "person": (_person_entry, person_pace),
    "controls": (_controls_entry, parse_controls),
    "agent": (_agent_entry, _agent_check),
    "mcp": (_mcp_entry, _mcp_check),
}
# bare names: the built-in contestants
SHORTHANDS: Mapping[str, tuple[str, str]] = {
    "hands-off": ("policy", "hands-off"),
    "textbook": ("policy", "textbook"),
    "playbook": ("policy", "textbook"),
    "person": ("person", "0"),
    # the overload controllers, each on its own from the opening (the request engine): Kratos's BBR limiter, and
    # the plug-in controllers (model/request/controllers.py; docs/agents.md "Controllers")
    "bbr": ("controls", "limiter=bbr"),
    "gradient2": ("controls", "controller=gradient2"),
    "pid-shedder": ("controls", "controller=pid-shedder"),
}


def register_kind(kind: str, make: EntryFactory, check: Callable[[str], Any] = lambda arg: None) -> None:
    """Add a kind of contestant: ``make(arg, settings)`` gives an ``Entry`` for a run,
    ``check(arg)`` refuses a bad argument with ``InvalidInput`` before anything runs."""
    KINDS[kind] = (make, check)


def parse_contestant(text: str) -> Contestant:
    """``NAME=SPEC`` → a checked ``Contestant``; bad input is one line naming ``--contestant``."""
    name, sep, spec = text.partition("=")
    name, spec = name.strip(), spec.strip()
    if not sep or not name or not spec:
        raise InvalidInput("--contestant", f"expects NAME=SPEC (e.g. playbook=textbook), got {text[:80]!r}")
    if len(name) > 40 or not all(c.isalnum() or c in "-_.+" for c in name):
        raise InvalidInput("--contestant", f"a name is 1 to 40 letters, digits or -_.+, got {name[:80]!r}")
    if spec in SHORTHANDS:
        kind, arg = SHORTHANDS[spec]
    else:
        kind, colon, arg = spec.partition(":")
        if not colon and kind not in KINDS:
            known = ", ".join([*KINDS, *SHORTHANDS])
            raise InvalidInput("--contestant", f"unknown contestant {spec[:80]!r}; KIND:ARG with a kind of {known}")
    if kind not in KINDS:
        raise InvalidInput(
            "--contestant", f"unknown kind {kind[:40]!r}; kinds: {', '.join(KINDS)} (or {', '.join(SHORTHANDS)})"
        )
    KINDS[kind][1](arg)
    return Contestant(name, kind, arg)

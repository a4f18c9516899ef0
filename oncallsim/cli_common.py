"""What every command of the CLI shares: the consoles, one-line errors, ``--set`` parsing, whole-file writes."""

from __future__ import annotations

import difflib
import functools
import io
import json
import os
import re
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar, cast

import typer
from pydantic import ValidationError
from rich.console import Console, RenderableType
from rich.markup import escape
from typer._click import exceptions as click_errors  # typer's own click (0.29 vendors it)
from typer.core import TyperGroup

from oncallsim.model.errors import InvalidInput
from oncallsim.validation import decode_text, invalid_input, read_bounded

if TYPE_CHECKING:  # the model, the scenarios and runs are imported where a command uses them (a fast --help)
    from oncallsim.model import RunPlan
    from oncallsim.model.engine import Engine
    from oncallsim.simulation import Action, RunFile

__all__ = [
    "OneLineErrors",
    "check_choices",
    "check_override_names",
    "checked_bind",
    "clear_errors",
    "did_you_mean",
    "err",
    "fail",
    "guarded",
    "load_run_file",
    "notice_after",
    "parse_sets",
    "prepare_engine",
    "print_trimmed",
    "read_actions",
    "scenario_arg",
    "stdout_console",
    "trimmed_console",
    "write_whole",
]

err = Console(stderr=True, highlight=False)


def stdout_console() -> Console:
    """A console for stdout, wide when piped so that tables stay one line a row."""
    return Console(highlight=False, width=None if sys.stdout.isatty() else 160)


T = TypeVar("T")


def fail(message: str, code: int = 2) -> typer.Exit:
    err.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True)  # the message's own [brackets] as written
    return typer.Exit(code)


@contextmanager
def clear_errors() -> Iterator[None]:
    """Bad input ends in one line naming the field and the allowed values; never a traceback."""
    try:
        yield
    except InvalidInput as exc:
        raise fail(str(exc)) from None
    except BrokenPipeError:  # `oncallsim run … | head`: the reader has what it wanted; leave quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's final flush goes nowhere
        raise typer.Exit(0) from None
    except ValidationError as exc:
        raise fail(str(invalid_input(exc, "input"))) from None
    except OSError as exc:
        raise fail(f"{exc.filename or 'file'}: {exc.strerror or exc}") from None
    except (RecursionError, MemoryError, OverflowError, ValueError) as exc:
        raise fail(
            f"input: cannot be used ({type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''})"
        ) from None


def guarded(fn: Callable[..., T]) -> Callable[..., T]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        with clear_errors():
            return fn(*args, **kwargs)

    return wrapper


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """A near miss of a known name (a typo): " (did you mean ttl_s?)", else ""."""
    close = difflib.get_close_matches(str(name), list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def parse_sets(pairs: list[str]) -> dict[str, str]:
    result: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise InvalidInput("--set", f"expects NAME=VALUE, got {pair!r}")
        result[name.strip()] = value.strip()
    check_override_names(result)
    return result


def check_override_names(names: Iterable[str]) -> None:
    """A parameter or opening control the model does not know: refused with the nearest known name."""
    from oncallsim.model import SETTINGS, Params
    from oncallsim.model.chain.controls import split_control
    from oncallsim.model.controls import WORLD_SETTINGS

    known = [*Params.__dataclass_fields__, *SETTINGS, *WORLD_SETTINGS]
    for name in names:
        if "." in name:  # a chain's service: <service>.<setting> (whether the run has it is the run's to say)
            split_control(name)
        elif name not in known:
            raise InvalidInput(
                name, f"unknown parameter or control{did_you_mean(name, known)}; `oncallsim params` lists them all"
            )


def scenario_arg(text: str) -> str | Path:
    """The CLI's scenario argument: a registered id, or a file the user named (an explicit path: it contains a
    path separator or ends in .toml). Nothing else is opened; an unknown id is refused with the nearest one."""
    from oncallsim.scenarios import registered_scenarios

    known = registered_scenarios()
    if text in known:
        return text
    if text.endswith(".toml") or "/" in text or (sys.platform == "win32" and "\\" in text):
        return Path(text)
    raise InvalidInput(
        "scenario", f"unknown scenario {text[:80]!r}{did_you_mean(text, known)}; known: {', '.join(known)}"
    )


def check_choices(policy: str | None, engine: str | None) -> None:
    """A built-in policy or engine name with a typo: refused with the nearest name (module:attr is a policy too)."""
    from oncallsim.model.engine import ENGINES
    from oncallsim.policies import BUILTIN_POLICIES

    if policy is not None and ":" not in policy and policy not in BUILTIN_POLICIES:
        raise InvalidInput(
            "--policy",
            f"unknown policy {policy[:80]!r}{did_you_mean(policy, BUILTIN_POLICIES)}; built-in: "
            f"{', '.join(BUILTIN_POLICIES)}, or module:attr",
        )
    if engine is not None and engine not in ENGINES:
        raise InvalidInput(
            "--engine", f"unknown engine {engine[:80]!r}{did_you_mean(engine, ENGINES)}; one of {', '.join(ENGINES)}"
        )


ACTION_FIELDS = ("minute", "control", "value")


def read_actions(path: Path, plan: RunPlan) -> list[Action]:
    """An actions file for ``oncallsim run``: a JSON list of ``{minute, control, value}``.

    A minute counts from the run's start (0 = its first minute); a clock time ``"09:20"`` is accepted too and
    means that time of day in this run. Unknown fields and controls are refused with the nearest known name."""
    from oncallsim.model import CONTROL_SPECS
    from oncallsim.simulation import parse_action

    name = str(path)
    text = decode_text(read_bounded(path, "actions file"), name)
    try:
        items = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(name, f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except (ValueError, RecursionError) as exc:  # 4,300-digit integers, nesting thousands deep
        raise InvalidInput(name, f"not valid JSON: {str(exc).splitlines()[0][:200]}") from None
    if not isinstance(items, list):
        raise InvalidInput(name, "must be a JSON list of {minute, control, value} objects")
    actions = []
    for i, item in enumerate(items):
        where = f"{name}[{i}]"
        if isinstance(item, dict):
            item = dict(item)
            for key in item:
                if key not in ACTION_FIELDS:
                    raise InvalidInput(
                        f"{where}.{str(key)[:80]}",
                        f"unknown field{did_you_mean(key, ACTION_FIELDS)}; the fields: {', '.join(ACTION_FIELDS)}",
                    )
            control = item.get("control")
            if isinstance(control, str) and control not in CONTROL_SPECS and "." not in control:
                raise InvalidInput(
                    f"{where}.control",
                    f"unknown control {control[:80]!r}{did_you_mean(control, CONTROL_SPECS)}; "
                    f"controls: {', '.join(CONTROL_SPECS)}",
                )
            if isinstance(item.get("minute"), str):
                item["minute"] = _clock_minute(item["minute"], plan, f"{where}.minute")
        actions.append(parse_action(item, where))
    return sorted(actions, key=lambda a: a.minute)  # stable: same-minute actions keep their order


def _clock_minute(text: str, plan: RunPlan, field: str) -> int:
    """A clock time in an actions file → the run's minute at that time of day."""
    from oncallsim.scenarios import parse_clock

    start, end = plan.clock(0), plan.clock(plan.minutes - 1)
    hint = f"a minute counted from the start (0 = {start}) or a time of day HH:MM from {start} to {end}"
    try:
        at = parse_clock(text, field)
    except InvalidInput:
        raise InvalidInput(field, f"must be {hint}; got {text[:40]!r}") from None
    minute = (at - plan.clock_start_min) % 1440
    if minute >= plan.minutes:
        raise InvalidInput(field, f"{text} is not within this run: {hint}")
    return minute


def load_run_file(path: Path) -> RunFile:
    """A run file named on the command line: a regular file of at most MAX_FILE_BYTES, parsed in memory."""
    from oncallsim.simulation import RunFile

    return RunFile.load(path)


def write_whole(path: Path, text: str) -> None:
    """Write via a temporary file and rename, so a failure never leaves half a file."""
    tmp = path.with_name(path.name + ".part")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise InvalidInput(str(path), f"cannot write: {exc.strerror}") from None


@contextmanager
def notice_after(seconds: float, message: str, stream: TextIO | None = None) -> Iterator[None]:
    """Say ``message`` on stderr if the body is still running after ``seconds`` (rather than look frozen)."""
    out = stream if stream is not None else sys.stderr
    timer = threading.Timer(seconds, lambda: print(message, file=out))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def prepare_engine(engine: Engine, stream: TextIO | None = None, graph: bool = False) -> None:
    """Prepare ``engine`` (and, for a ``graph``'s run, its chain of services): compiled on its first use on this
    machine, in a process of its own, with a progress line on stderr (``readiness``); then loaded here from the
    cache."""
    from oncallsim.model.engine import parts_for
    from oncallsim.readiness import ensure_ready, print_progress

    out = stream if stream is not None else sys.stderr
    for done in ensure_ready(parts_for(engine.name, graph), print_progress(out)):
        if done.state == "failed":
            raise InvalidInput("engine", f"the {done.engine} engine could not be prepared: {done.message}")


def checked_bind(host: str, port: int, token: str | None, what: str) -> str | None:
    """The network rules every server command shares (``serve``, ``mcp --transport http``; docs/web.md,
    "Security"): the port in range and free (one line naming --port, before any line that says it serves), a
    given token of at least 16 characters, a warning for a wildcard address, and beyond loopback a token always
    (generated when none is given, and said). Returns the token to ask of every request (None on loopback
    without one)."""
    import secrets

    from oncallsim.web.ports import check_port_free
    from oncallsim.web.security import is_loopback

    if not 1 <= port <= 65535:
        raise InvalidInput("--port", f"must be from 1 to 65535, got {port}")
    check_port_free(host, port)
    if token is not None and len(token) < 16:
        raise InvalidInput("--token", "must be at least 16 characters")
    if not is_loopback(host):
        if host.strip("[]") in ("0.0.0.0", "::"):
            err.print(
                f"[bold yellow]warning:[/] {host} listens on every network interface: anyone who can reach this "
                f"machine can reach the {what}. Prefer 127.0.0.1 behind a TLS reverse proxy (docs/web.md).",
                soft_wrap=True,
            )
        if token is None:
            token = secrets.token_urlsafe(24)
            err.print(
                "An access token is required beyond loopback; generated one (or pass --token / ONCALLSIM_TOKEN).",
                soft_wrap=True,
            )
    return token


_TRAILING = re.compile(r"[ \t]+((?:\x1b\[[0-9;]*m)*)$", re.MULTILINE)


class TrimmedLines(io.TextIOBase):
    """A text stream that drops the spaces Rich pads lines with before passing whole lines on (the debrief's
    tables, any console printing to it)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.pending = ""

    def write(self, text: str) -> int:
        lines = (self.pending + text).split("\n")
        self.pending = lines.pop()
        if lines:
            self.stream.write("".join(_TRAILING.sub(r"\1", line) + "\n" for line in lines))
        return len(text)

    def flush(self) -> None:
        if self.pending:
            self.stream.write(self.pending)
            self.pending = ""
        self.stream.flush()

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()


def trimmed_console(stream: TextIO, width: int | None = None) -> Console:
    """A console whose lines end without padding (``width`` None: the terminal's, or 160 when piped)."""
    tty = stream.isatty() if hasattr(stream, "isatty") else False
    return Console(file=cast(TextIO, TrimmedLines(stream)), highlight=False, width=width or (None if tty else 160))


def print_trimmed(console: Console, renderable: RenderableType) -> None:
    """Print a Rich table without the spaces Rich pads each line with (copied text, diffs and `grep $` stay
    clean); colours are kept when the console has them."""
    with console.capture() as captured:
        console.print(renderable)
    console.file.write(_TRAILING.sub(r"\1", captured.get()))
    console.file.flush()


class OneLineErrors(TyperGroup):
    """The command group: a usage error (an unknown command or option, a bad --format, a missing argument) is
    one line on stderr and exit 2, like every other bad input; never a usage box."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        try:
            code = super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        except click_errors.NoArgsIsHelpError as exc:  # `oncallsim` alone: the help, as click shows it
            exc.show()
            sys.exit(exc.exit_code)
        except click_errors.ClickException as exc:
            err.print(f"[bold red]error:[/] {escape(usage_message(exc))}", soft_wrap=True)
            sys.exit(exc.exit_code)
        except typer.Abort:
            err.print("aborted")
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


def usage_message(exc: Exception) -> str:
    """A usage error in the CLI's own form: "FIELD: what is wrong; what is allowed" and where help is."""
    command = "oncallsim"
    if isinstance(exc, click_errors.UsageError) and exc.ctx is not None:
        command = exc.ctx.command_path
    if isinstance(exc, click_errors.MissingParameter) and exc.param is not None:
        text = f"{_param_name(exc.param)}: missing"
    elif isinstance(exc, click_errors.BadParameter) and exc.param is not None:
        message = exc.message.strip().removeprefix("Value error, ").rstrip(".")
        choices = getattr(exc.param, "type_descriptor", None)
        allowed = list(getattr(choices, "choices", None) or ())
        if allowed:
            names = ", ".join(str(getattr(c, "value", c)) for c in allowed)
            got = message.split("'")[1] if message.count("'") >= 2 else ""
            message = f"must be one of {names}" + (f"; got {got!r}" if got else "")
        elif "valid integer" in message:
            message = "must be a whole number"
        elif "valid number" in message:
            message = "must be a number"
        else:
            message = message[:1].lower() + message[1:]
        text = f"{_param_name(exc.param)}: {message}"
    elif isinstance(exc, click_errors.NoSuchOption):
        text = f"{exc.option_name}: no such option"
        if exc.possibilities:
            text += f" (did you mean {sorted(exc.possibilities)[0]}?)"
    else:
        message = getattr(exc, "message", str(exc)).strip().rstrip(".")
        text = message[:1].lower() + message[1:]
        text = re.sub(r"\. did you mean (.*)\?$", r" (did you mean \1?)", text, flags=re.IGNORECASE)
    return f"{text} (`{command} --help` shows the usage)"


def _param_name(param: Any) -> str:
    opts = [o for o in getattr(param, "opts", []) if o.startswith("--")]
    return opts[0] if opts and getattr(param, "param_type_name", "") == "option" else str(param.name)

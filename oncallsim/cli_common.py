"""What every command of the CLI shares: the consoles, one-line errors, ``--set`` parsing, whole-file writes."""

from __future__ import annotations

import functools
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO, TypeVar

import typer
from pydantic import ValidationError
from rich.console import Console

from oncallsim.model import InvalidInput
from oncallsim.model.engine import Engine, prepare
from oncallsim.simulation import RunFile
from oncallsim.validation import invalid_input

__all__ = [
    "clear_errors",
    "err",
    "fail",
    "guarded",
    "load_run_file",
    "notice_after",
    "parse_sets",
    "prepare_engine",
    "scenario_arg",
    "stdout_console",
    "write_whole",
]

err = Console(stderr=True, highlight=False)


def stdout_console() -> Console:
    """A console for stdout, wide when piped so that tables stay one line a row."""
    return Console(highlight=False, width=None if sys.stdout.isatty() else 160)


T = TypeVar("T")


def fail(message: str, code: int = 2) -> typer.Exit:
    err.print(f"[bold red]error:[/] {message}", soft_wrap=True)
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


def parse_sets(pairs: list[str]) -> dict[str, str]:
    result: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise InvalidInput("--set", f"expects NAME=VALUE, got {pair!r}")
        result[name.strip()] = value.strip()
    return result


def scenario_arg(text: str) -> str | Path:
    """The CLI's scenario argument: a registered id, or a file the user named (an explicit path: it contains a
    path separator or ends in .toml). Nothing else is opened."""
    from oncallsim.scenarios import builtin_scenarios

    if text in builtin_scenarios():
        return text
    if text.endswith(".toml") or "/" in text or (sys.platform == "win32" and "\\" in text):
        return Path(text)
    return text  # an unknown id: the core refuses it naming the known ones


def load_run_file(path: Path) -> RunFile:
    """A run file named on the command line: a regular file of at most MAX_FILE_BYTES, parsed in memory."""
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


def prepare_engine(engine: Engine, stream: TextIO | None = None) -> None:
    """Prepare ``engine`` (compiled on its first use on this machine, then loaded from numba's cache); when
    that takes more than a second, say so on stderr rather than look frozen."""
    with notice_after(1.0, f"preparing the {engine.name} engine (compiled once on this machine)…", stream):
        prepare(engine)

"""The built-in scenarios (data files shipped in the package) and loading a user's own file."""

from __future__ import annotations

import os
import stat
import tomllib
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from oncallsim.model import InvalidInput
from oncallsim.scenarios.files import builtin_files
from oncallsim.scenarios.spec import Scenario
from oncallsim.validation import invalid_input

__all__ = [
    "MAX_SCENARIO_BYTES",
    "builtin_scenarios",
    "graph_scenarios",
    "load_scenario",
    "registered_scenario",
    "registered_scenarios",
    "scenario_from_dict",
    "scenario_from_file",
    "scenario_from_text",
    "superseded_scenario",
]

# A scenario file is a page of TOML; anything much bigger is a mistake (or /dev/zero) and is refused unread.
MAX_SCENARIO_BYTES = 64 * 1024


def scenario_from_dict(data: dict[str, Any], source: str) -> Scenario:
    """Validate a parsed scenario; errors name the source, the field and the reason."""
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        raise invalid_input(exc, source, Scenario) from None


def scenario_from_text(text: str | bytes, source: str) -> Scenario:
    """A scenario sent as content (an upload, a form field): size-limited, parsed in memory, never a path."""
    if len(text) > MAX_SCENARIO_BYTES:
        raise InvalidInput(source, f"a scenario file is at most {MAX_SCENARIO_BYTES} bytes, got {len(text)}")
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidInput(source, "not UTF-8 text") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(source, f"not valid TOML: {exc}") from None
    except RecursionError:
        raise InvalidInput(source, "not valid TOML: nested too deeply") from None
    return scenario_from_dict(data, source)


def scenario_from_file(path: str | Path) -> Scenario:
    """A scenario file the user named explicitly (the CLI): a regular file of at most MAX_SCENARIO_BYTES."""
    path = Path(path)
    try:
        with path.open("rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise InvalidInput("scenario", f"{path} is not a regular file")
            data = handle.read(MAX_SCENARIO_BYTES + 1)
    except OSError as exc:
        raise InvalidInput("scenario", f"cannot read {path}: {exc.strerror}") from None
    return scenario_from_text(data, str(path))


def superseded_scenario(scenario_id: str, model_version: str) -> Scenario | None:
    """A built-in scenario as runs of an older model version played it, if it has changed since: run files name a
    built-in scenario by id, so a file of model version 1 replays with the scenario of that time
    (``data/superseded/<id>.model-<version>.toml``; the zone outage was redesigned for model version 2). Only a
    built-in id and a plain version name are looked up (both come from a run file: outside input)."""
    if scenario_id not in builtin_scenarios() or not model_version.isalnum():
        return None
    return _superseded(scenario_id, model_version)


@cache
def _superseded(scenario_id: str, model_version: str) -> Scenario | None:
    entry = resources.files("oncallsim.scenarios") / "data" / "superseded" / f"{scenario_id}.model-{model_version}.toml"
    if not entry.is_file():
        return None
    return scenario_from_dict(tomllib.loads(entry.read_text(encoding="utf-8")), entry.name)


@cache
def builtin_scenarios() -> dict[str, Scenario]:
    """The shipped scenarios by id, in their files' order (01-…, 02-…)."""
    found: dict[str, Scenario] = {}
    for name, data in builtin_files():
        scenario = scenario_from_dict(data, name)
        found[scenario.id] = scenario
    return found


@cache
def graph_scenarios() -> dict[str, Scenario]:
    """The shipped chains of services by id (``data/graphs/``: docs/graphs.md's lessons), apart from the
    one-service scenarios: they play on the request engine only, and the playbook, the balance and the alert
    rehearsals of ``builtin_scenarios`` are the one service's."""
    found: dict[str, Scenario] = {}
    for name, data in builtin_files("data/graphs"):
        scenario = scenario_from_dict(data, f"graphs/{name}")
        found[scenario.id] = scenario
    return found


@cache
def registered_scenarios() -> dict[str, Scenario]:
    """Every scenario a name reaches (the built-in ones, then the chains of services)."""
    return {**builtin_scenarios(), **graph_scenarios()}


def registered_scenario(ref: object, field: str = "scenario") -> Scenario:
    """A shipped scenario by id, and nothing else: what the web accepts by name (never a path)."""
    known = registered_scenarios()
    if isinstance(ref, str) and ref in known:
        return known[ref]
    shown = repr(ref)[:80]
    raise InvalidInput(field, f"unknown scenario {shown}; known: {', '.join(known)}")


def load_scenario(ref: str | Path | Scenario) -> Scenario:
    """A scenario by shipped id, or from a TOML file the caller names explicitly: a ``Path``, or a string
    ending in ``.toml`` (what the CLI passes on). Nothing else is ever opened: ``/dev/zero`` is an unknown id."""
    if isinstance(ref, Scenario):
        return ref
    known = registered_scenarios()
    if isinstance(ref, str) and ref in known:
        return known[ref]
    if isinstance(ref, Path) or (isinstance(ref, str) and ref.endswith(".toml")):
        return scenario_from_file(ref)
    raise InvalidInput("scenario", f"unknown scenario {str(ref)[:80]!r}; known: {', '.join(known)} (or a .toml file)")

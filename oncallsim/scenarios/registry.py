"""The built-in scenarios (data files shipped in the package) and loading a user's own file."""

from __future__ import annotations

import tomllib
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from oncallsim.model import InvalidInput
from oncallsim.scenarios.spec import Scenario
from oncallsim.validation import invalid_input

__all__ = ["builtin_scenarios", "load_scenario", "scenario_from_dict", "scenario_from_file"]


def scenario_from_dict(data: dict[str, Any], source: str) -> Scenario:
    """Validate a parsed scenario; errors name the source, the field and the reason."""
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        raise invalid_input(exc, source) from None


def scenario_from_file(path: str | Path) -> Scenario:
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidInput("scenario", f"cannot read {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(str(path), f"not valid TOML: {exc}") from None
    return scenario_from_dict(data, str(path))


@cache
def builtin_scenarios() -> dict[str, Scenario]:
    """The shipped scenarios by id, in their files' order (01-…, 02-…)."""
    folder = resources.files("oncallsim.scenarios") / "data"
    found: dict[str, Scenario] = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".toml"):
            scenario = scenario_from_dict(tomllib.loads(entry.read_text(encoding="utf-8")), entry.name)
            found[scenario.id] = scenario
    return found


def load_scenario(ref: str | Path | Scenario) -> Scenario:
    """A scenario by built-in id, or from a TOML file path."""
    if isinstance(ref, Scenario):
        return ref
    known = builtin_scenarios()
    if isinstance(ref, str) and ref in known:
        return known[ref]
    path = Path(ref)
    if path.suffix == ".toml" or path.exists():
        return scenario_from_file(path)
    raise InvalidInput("scenario", f"unknown scenario {str(ref)!r}; known: {', '.join(known)} (or a .toml file)")

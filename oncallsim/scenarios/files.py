"""The built-in scenario files, read as TOML: what the registry validates, and what a listing shows without
validating (``oncallsim scenarios`` answers in a fraction of a second: the schema needs the model, and the model
numba and SciPy). The files are validated wherever a scenario is used, and ``tests/test_scenarios.py`` holds the
listing to the validated scenarios."""

from __future__ import annotations

import tomllib
from functools import cache
from importlib import resources
from typing import Any, NamedTuple

__all__ = ["Listed", "builtin_files", "listing"]


@cache
def builtin_files(folder_name: str = "data") -> tuple[tuple[str, dict[str, Any]], ...]:
    """Each shipped file's name and parsed TOML, in the files' order (00-…, 01-…); ``data/graphs``: the chains
    of services."""
    folder = resources.files("oncallsim.scenarios")
    for part in folder_name.split("/"):
        folder = folder / part
    entries = sorted((e for e in folder.iterdir() if e.name.endswith(".toml")), key=lambda e: e.name)
    return tuple((e.name, tomllib.loads(e.read_text(encoding="utf-8"))) for e in entries)


class Listed(NamedTuple):
    """A built-in scenario as a list shows it."""

    id: str
    title: str
    start: str
    minutes: int
    summary: str


def listing(kind: str = "") -> list[Listed]:
    """The built-in scenarios (``kind`` "graphs": the chains of services) as a list shows them, unvalidated (each
    field as its file writes it)."""
    return [
        Listed(str(d["id"]), str(d["title"]), str(d["start"]), int(d["minutes"]), str(d["summary"]))
        for _name, d in builtin_files("data/graphs" if kind == "graphs" else "data")
    ]

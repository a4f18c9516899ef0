"""Input at the edge: pydantic's errors as the project's one-line ``InvalidInput`` (where, which field, why),
and files a user names read safely (regular files only, bounded)."""

from __future__ import annotations

import os
import re
import stat
import types
import typing
from pathlib import Path
from typing import Any

import annotated_types
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from oncallsim.model.errors import InvalidInput

__all__ = ["MAX_FILE_BYTES", "decode_text", "invalid_input", "read_bounded"]

# A run file or an actions file: a day of a busy operator is a few kilobytes; 4 MiB is generous.
MAX_FILE_BYTES = 4 * 1024 * 1024


def read_bounded(path: Path, what: str, limit: int = MAX_FILE_BYTES) -> bytes:
    """A file the user named: a regular file (not /dev/zero, not a FIFO) of at most ``limit`` bytes."""
    try:
        with path.open("rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise InvalidInput(str(path), "not a regular file")
            data = handle.read(limit + 1)
    except OSError as exc:
        raise InvalidInput(str(path), f"cannot read the {what}: {exc.strerror}") from None
    if len(data) > limit:
        raise InvalidInput(str(path), f"a {what} is at most {limit} bytes")
    return data


def decode_text(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(source, "not UTF-8 text") from None


_BOUNDS = ("greater_than", "greater_than_equal", "less_than", "less_than_equal")


def invalid_input(exc: ValidationError, source: str, model: type[BaseModel] | None = None) -> InvalidInput:
    """pydantic's first error as one line: the source, the field's path, the reason. Given the ``model`` that was
    validated, a number out of its range names the whole range ("must be a whole number from 0 to 5, got 7", as
    every other surface says it; pydantic names the bound crossed alone), and a tagged union's tag (an event's
    ``kind``) is left out of the path, which names fields only."""
    first = exc.errors()[0]
    loc = tuple(first["loc"])
    info, path = _field_at(model, loc) if model is not None else (None, loc)
    field = ".".join(str(p) for p in path) or "(whole)"
    said = first["msg"].removeprefix("Value error, ")
    named = re.match(r"([A-Za-z_][\w.-]*): ", said) if not path else None
    if named:  # a rule over the whole file that names its field itself ("events.0.service: unknown service …")
        first = {**first, "msg": said[named.end() :]}
        field = named.group(1)
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    message = first["msg"].removeprefix("Value error, ")
    if info is not None and first["type"] in _BOUNDS:
        span = _range_text(info)
        if span:
            message = f"must be {span}, got {first.get('input')!r}"
    return InvalidInput(f"{source}: {field}", message + more)


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation holds (itself, in a list, a dict's values, a union, Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _models_in(args[0])
    if origin is dict:
        return _models_in(args[1]) if len(args) == 2 else []
    if origin in (list, tuple, typing.Union, types.UnionType):
        return [m for a in args for m in _models_in(a)]
    return []


def _field_at(model: type[BaseModel], loc: tuple[Any, ...]) -> tuple[FieldInfo | None, tuple[Any, ...]]:
    """The field an error's location ends at, and the location without the tags of tagged unions."""
    candidates = [model]
    info: FieldInfo | None = None
    path: list[Any] = []
    for part in loc:
        tagged = [m for m in candidates if len(candidates) > 1 and part in _tags_of(m)]
        if tagged:  # a tagged union's tag (an event's kind, "service"): which member, not a field
            candidates = tagged
            continue
        named = [m.model_fields[part] for m in candidates if isinstance(part, str) and part in m.model_fields]
        if named:
            info = named[0]
            path.append(part)
            candidates = _models_in(info.annotation)
            continue
        info = None
        path.append(part)  # a list's index or a dict's key (a service's name)
    return info, tuple(path)


def _tags_of(model: type[BaseModel]) -> set[Any]:
    """The values that name ``model`` in a tagged union: its fields' single-value literals."""
    return {
        typing.get_args(f.annotation)[0]
        for f in model.model_fields.values()
        if typing.get_origin(f.annotation) is typing.Literal and len(typing.get_args(f.annotation)) == 1
    }


def _range_text(info: FieldInfo) -> str:
    low = high = None
    for bound in info.metadata:
        if isinstance(bound, annotated_types.Ge | annotated_types.Gt):
            low = bound.ge if isinstance(bound, annotated_types.Ge) else bound.gt
        if isinstance(bound, annotated_types.Le | annotated_types.Lt):
            high = bound.le if isinstance(bound, annotated_types.Le) else bound.lt
    if low is None or high is None:
        return ""
    whole = info.annotation is int or int in typing.get_args(info.annotation)
    strict = any(isinstance(b, annotated_types.Gt | annotated_types.Lt) for b in info.metadata)
    kind = "a whole number" if whole else "a number"
    if strict:
        above = any(isinstance(b, annotated_types.Gt) for b in info.metadata)
        below = any(isinstance(b, annotated_types.Lt) for b in info.metadata)
        return f"{kind} {'above' if above else 'from'} {_plain(low)} {'and below' if below else 'up to'} {_plain(high)}"
    return f"{kind} from {_plain(low)} to {_plain(high)}"


def _plain(value: Any) -> str:
    """A bound as written, never in exponent form (1000000, not 1e+06)."""
    number = float(value)
    return f"{number:.0f}" if number.is_integer() else f"{number:g}"

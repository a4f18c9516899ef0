"""Input at the edge: pydantic's errors as the project's one-line ``InvalidInput`` (where, which field, why),
and files a user names read safely (regular files only, bounded)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from pydantic import ValidationError

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


def invalid_input(exc: ValidationError, source: str) -> InvalidInput:
    first = exc.errors()[0]
    field = ".".join(str(p) for p in first["loc"]) or "(whole)"
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    message = first["msg"].removeprefix("Value error, ")
    return InvalidInput(f"{source}: {field}", message + more)

"""Turn pydantic's errors into the project's one-line ``InvalidInput``: where, which field, why."""

from __future__ import annotations

from pydantic import ValidationError

from oncallsim.model.errors import InvalidInput

__all__ = ["invalid_input"]


def invalid_input(exc: ValidationError, source: str) -> InvalidInput:
    first = exc.errors()[0]
    field = ".".join(str(p) for p in first["loc"]) or "(whole)"
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    message = first["msg"].removeprefix("Value error, ")
    return InvalidInput(f"{source}: {field}", message + more)

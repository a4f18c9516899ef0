"""The one error type for bad input: it names the field and says what is allowed."""

from __future__ import annotations

__all__ = ["InvalidInput"]


class InvalidInput(ValueError):
    """Raised for any out-of-range, unknown or malformed input; never clamped silently."""

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"{field}: {reason}")

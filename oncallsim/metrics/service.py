"""The ``service`` label every series of a run carries: its default and its rule (light: the command line's
options read it without the model)."""

from __future__ import annotations

import re
from typing import Any

from oncallsim.model.errors import InvalidInput, quote

__all__ = ["DEFAULT_SERVICE", "check_service"]

DEFAULT_SERVICE = "oncallsim"
_SERVICE = re.compile(r"[A-Za-z0-9_.:-]{1,64}")


def check_service(value: Any) -> str:
    """The ``service`` label every series carries: 1 to 64 letters, digits, '_', '.', ':' or '-'."""
    if not isinstance(value, str) or not _SERVICE.fullmatch(value):
        raise InvalidInput("service", f"must be 1 to 64 letters, digits, '_', '.', ':' or '-', got {quote(value)}")
    return value

"""The one error type for bad input: it names the field and says what is allowed; and the two helpers every
edge uses on numbers, so that a value is read and quoted the same way from the web, the CLI and files."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

__all__ = ["InvalidInput", "number_text", "quote", "whole_number"]


class InvalidInput(ValueError):
    """Raised for any out-of-range, unknown or malformed input; never clamped silently.

    ``reason`` is the English sentence the CLI, the logs and the API's clients read. A refusal the pages can
    meet also says what it means as data: ``kind`` (``"range"``, ``"choice"``, ``"whole"``, …, the keys of
    ``oncallsim.refusals.REFUSAL_TEXTS``) and its ``details`` (``lo``, ``hi``, ``got``, …), from which
    ``oncallsim.refusals.localize`` writes it in a page's language; without a kind it is said in English."""

    def __init__(self, field: str, reason: str, kind: str = "", **args: Any) -> None:
        self.field = field
        self.reason = reason
        self.kind = kind
        self.details: Mapping[str, Any] = args
        super().__init__(f"{field}: {reason}")


def quote(value: Any, limit: int = 40) -> str:
    """A refused value as an error message shows it, in a short line: its repr; an integer past 15 digits by
    its size (``1.00e+400``, never its 401 digits); a long text cut."""
    if isinstance(value, int) and not isinstance(value, bool) and not -(10**15) < value < 10**15:
        return f"{Decimal(value):.2e}"
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _digits(text: str) -> bool:
    """Text that is 0–9 digits after an optional sign: how a number is written in JSON, on a command line (typer
    reads its options with pydantic, which takes no other digits) and in a link. Not "³" (a digit, but not a
    decimal one: ``int()`` fails on it), not "١٢" (decimal digits another script writes, which ``int()`` reads
    and the CLI does not): a value means one thing wherever it is typed."""
    unsigned = text[1:] if text.startswith(("+", "-")) else text
    return unsigned.isascii() and unsigned.isdigit()


def whole_number(text: str, digits: int = 20) -> int | None:
    """A whole number written as text (``"12"``, ``" +12 "``, ``"-0"``), else None: not ``"³"``, ``"١٢"``,
    ``"1.5"``, ``"1_0"``, nor more than ``digits`` digits."""
    body = text.strip()
    if not _digits(body) or len(body.lstrip("+-")) > digits:
        return None
    return int(body)


def number_text(text: str) -> int | float:
    """A number written as text: a whole number exactly (``"1" + "0" * 400`` stays an integer, out of any range,
    never a float's ``inf``), else a float (``"0.5"``, ``"1e3"``, ``"nan"``); ``ValueError`` for anything else
    (``"³"``, ``"١٢"``, ``"1_0"``, a whole number of more than 4,300 digits)."""
    body = text.strip()
    if _digits(body):
        return int(body)
    if not body.isascii() or "_" in body:
        raise ValueError(f"not a number: {text!r}")
    return float(body)

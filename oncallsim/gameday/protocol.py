"""The room's WebSocket messages from a browser, typed: strict types, bounded lengths, finite numbers. Anything
else is refused naming the field (the socket stays open and nothing changes)."""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    TypeAdapter,
    ValidationError,
    model_validator,
)

from oncallsim.model import InvalidInput
from oncallsim.model.controls import text_refused
from oncallsim.validation import invalid_input

__all__ = ["INVISIBLE", "MAX_FRAME", "MAX_TEXT", "ClientMessage", "check_text", "parse_frame"]

MAX_TEXT = 280  # a chat line or a status update: a tweet, not an essay
MAX_FRAME = 4096
Number = Annotated[StrictInt, Field(ge=-(2**53), le=2**53)] | StrictFloat


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class Join(_Message):
    """The first message: the room's token, and for a player the display name and role."""

    type: Literal["join"]
    token: StrictStr = Field(max_length=200)
    name: StrictStr | None = Field(default=None, max_length=80)
    role: StrictStr | None = Field(default=None, max_length=40)


class Act(_Message):
    type: Literal["action"]
    control: StrictStr = Field(max_length=64)
    # a choice's value is its name ("codel"); every other control's is a number or a switch, never text: the one
    # rule the console's API and WebSocket apply (``controls.text_refused``)
    value: StrictBool | Number | Annotated[StrictStr, Field(max_length=64)] | None = None

    @model_validator(mode="after")
    def _text_only_for_a_choice(self) -> Act:
        refused = text_refused(self.control, self.value)
        if refused:
            raise ValueError(refused)
        return self


class Say(_Message):
    """A line in the incident channel, a status-page update (communications) or a note (the facilitator)."""

    type: Literal["message", "status", "note"]
    text: StrictStr = Field(max_length=2 * MAX_TEXT)  # checked precisely by check_text


class Pace(_Message):
    type: Literal["pause", "resume", "step", "close"]


class Speed(_Message):
    type: Literal["speed"]
    value: StrictInt


class Inject(_Message):
    """A fault: its kind, when (HH:MM; empty = the next minute), a number per field, hidden from the players or not."""

    type: Literal["inject"]
    kind: StrictStr = Field(max_length=40)
    at: StrictStr = Field(default="", max_length=5)
    values: dict[Annotated[str, Field(max_length=40)], Number | Annotated[StrictStr, Field(max_length=40)]] = Field(
        default_factory=dict, max_length=20
    )
    hidden: StrictBool = True


class Reveal(_Message):
    """Show a hidden fault to the players (by its log line)."""

    type: Literal["reveal"]
    seq: StrictInt = Field(ge=0, le=2**31)


Message = Annotated[Join | Act | Say | Pace | Speed | Inject | Reveal, Field(discriminator="type")]
ClientMessage: TypeAdapter[Any] = TypeAdapter(Message)


# Invisible characters that change what the others read: the bidirectional embeddings, overrides and isolates
# (U+202A–U+202E, U+2066–U+2069) and marks (U+200E, U+200F, U+061C) reorder a line's text on everyone's screen;
# the zero-width space, word joiner, invisible operators and byte-order mark hide text inside a word. (The
# zero-width joiner and non-joiner stay: emoji sequences and several scripts need them.)
INVISIBLE = frozenset(
    [*map(chr, range(0x202A, 0x202F)), *map(chr, range(0x2066, 0x206A)), "\u200e", "\u200f", "\u061c",
     "\u200b", *map(chr, range(0x2060, 0x2065)), "\ufeff", "\u180e"]
)  # fmt: skip


def check_text(text: str, field: str = "text") -> str:
    """A message as people typed it: trimmed, at most ``MAX_TEXT`` characters, no control characters and no
    invisible characters that reorder or hide what the others read (``INVISIBLE``)."""
    cleaned = text.strip()
    if not cleaned:
        raise InvalidInput(field, "is empty")
    if len(cleaned) > MAX_TEXT:
        raise InvalidInput(field, f"at most {MAX_TEXT} characters, got {len(cleaned)}")
    if any(unicodedata.category(c) == "Cc" for c in cleaned):
        raise InvalidInput(field, "must not contain control characters (line breaks, tabs)")
    hidden = sorted({f"U+{ord(c):04X}" for c in cleaned if c in INVISIBLE})
    if hidden:
        raise InvalidInput(
            field, f"must not contain invisible direction or zero-width characters ({', '.join(hidden[:3])})"
        )
    return cleaned


def parse_frame(raw: Mapping[str, Any]) -> Any:
    """A WebSocket frame → a typed message."""
    if raw.get("bytes") is not None:
        raise InvalidInput("message", "binary frames are not accepted; send JSON text")
    text = raw.get("text")
    if not isinstance(text, str):
        raise InvalidInput("message", "an empty frame")
    if len(text) > MAX_FRAME:
        raise InvalidInput("message", f"at most {MAX_FRAME} characters, got {len(text)}")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise InvalidInput("message", "not valid JSON") from None
    try:
        return ClientMessage.validate_python(data)
    except ValidationError as exc:
        raise invalid_input(exc, "message") from None

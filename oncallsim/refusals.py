"""A refusal of bad input in a page's language, written from what it means rather than from its English words.

``InvalidInput`` keeps its English sentence for the command line, the logs and the API's clients (unchanged, byte
for byte). A refusal the pages can meet also carries a ``kind`` and its ``details`` (``kind="range"`` with
``lo``, ``hi``, ``got``, ``unit``, ``whole``); ``localize`` writes it for a language from the sentences below
(their translations in the gettext catalogs, ``scripts/update_catalogs.py`` extracts them): the field's
translated label, the numbers in the language's way (``i18n.format_number``), the value got. The meaning is
written once, here: the page's JavaScript shows the sentence the server wrote (the ``localized`` field of an
error answer), it never rebuilds one.

A refusal without a kind (most of the API's own: a malformed frame, an unknown run) is shown in English, its
``reason`` as the CLI says it: ``localize`` falls back to ``str(exc)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from babel.lists import format_list

from oncallsim.i18n import DEFAULT_LANGUAGE, format_number, translations
from oncallsim.model.errors import InvalidInput, quote

__all__ = ["FIELD_LABELS", "PLURAL_REFUSALS", "REFUSAL_TEXTS", "label_of", "localize", "localized_fields", "render"]

# One sentence per kind (and per variant a kind needs: a whole number or not, a unit or not). Each is the rest
# of "LABEL: …"; its placeholders are the kind's details as ``render`` writes them.
REFUSAL_TEXTS: dict[str, str] = {
    "range.whole": "must be a whole number from %(lo)s to %(hi)s; got %(got)s",
    "range.whole.unit": "must be a whole number from %(lo)s to %(hi)s %(unit)s; got %(got)s",
    "range.number": "must be a number from %(lo)s to %(hi)s; got %(got)s",
    "range.number.unit": "must be a number from %(lo)s to %(hi)s %(unit)s; got %(got)s",
    "choice": "must be one of %(allowed)s; got %(got)s",
    "switch": "must be on or off (true or false); got %(got)s",
    "button": "is a button and takes no value; got %(got)s",
    "instance_id": "must be an instance's id (a whole number from 0); got %(got)s",
    "no_instance": "there is no instance %(got)s: the serving instances are %(first)s to %(last)s",
    "already_ejected": "instance %(instance)s is already out of rotation (readmit puts it back)",
    "last_in_rotation": "instance %(instance)s is the last one in rotation: ejecting it would stop all traffic",
    "not_ejected": "instance %(instance)s is not ejected",
    "already_replacing": "instance %(instance)s is already being replaced",
    "engine_only": "belongs to the %(engines)s engine; this run uses the %(engine)s engine",
    "minute": "must be a minute of the run, from %(lo)s to %(hi)s; got %(got)s",
    "no_minute": "no minute has been played yet; got %(got)s",
    "run_over": "the run is over",
    "pause_first": "pause the run first",
    "speed_cap": "the %(difficulty)s difficulty plays at most %(max)s× (choose normal or hard)",
    # the queue's rule (request/disciplines.py): adaptive LIFO needs a queue limit
    "lifo_needs_limit": "adaptive-lifo serves the newest first past a share of the queue's limit: set the queue "
    "limit first",
    "lifo_keeps_limit": "adaptive-lifo needs a queue limit above 0: choose another queue discipline first",
    # a game-day room's (gameday/roles.py, gameday/room.py): the roles named by their labels, translated
    "role_cannot": "the %(role)s cannot do this; allowed: %(roles)s",
    "room_closed": "the run is over: the room is closed",
    # an event (a game day's fault) added to a running simulation (simulation.py ``inject``): times of day
    "event_too_early": "is at %(at)s, too early: the earliest minute to come is %(earliest)s",
    "event_past_end": "is at %(at)s, past the run's end",
    # a run (or a room) whose worker process ended, asked for something before its page reconnected
    "worker_lost": "its worker stopped; the run comes back from its log: try again",
    # the request engine's bound on traffic (model/request/engine.py ``check_traffic``)
    "surge_peak": "a surge of ×%(peak)s takes the traffic to about %(rate)s req/s; the request engine simulates "
    "every request and takes at most %(cap)s req/s: here a peak of at most ×%(max)s (the minute engine takes any)",
}

# Kinds whose sentence counts something (``n``): one sentence per plural form (gettext's ngettext picks it).
PLURAL_REFUSALS: dict[str, tuple[str, str]] = {
    "rate": (
        "at most %(n)s action per run per minute; wait a moment",
        "at most %(n)s actions per run per minute; wait a moment",
    ),
    "text_rate_person": (
        "at most %(n)s message a minute for a person; wait a moment",
        "at most %(n)s messages a minute for a person; wait a moment",
    ),
    "text_rate_link": (
        "at most %(n)s message a minute for a link; wait a moment",
        "at most %(n)s messages a minute for a link; wait a moment",
    ),
}

# The label of a field that is not a control (a control's is its registry label).
FIELD_LABELS = {
    "minute": "Minute",
    "speed": "Speed",
    "seed": "Seed",
    "difficulty": "Difficulty",
    "run": "Run",
    "action": "Action",
    "step": "Step",
    "engine": "Engine",
    "role": "Role",
    "room": "Room",
    "text": "Message",
    "event": "Event",
    "peak": "Peak",
}


def label_of(field: str, gettext: Any = str) -> str:
    """The field as a page names it, translated: a control's label, else ``FIELD_LABELS``, else its name."""
    from oncallsim.model import CONTROL_SPECS

    spec = CONTROL_SPECS.get(field)
    if spec is not None:
        return str(gettext(spec.label))
    if field in FIELD_LABELS:
        return str(gettext(FIELD_LABELS[field]))
    return field


def _value(value: Any, language: str) -> str:
    """A value in the language's numbers (up to 6 decimals); anything else (a text, a switch, a number too big
    for a line) as the English message quotes it."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) < 1e15:
        return format_number(value, language, -6)
    return quote(value)


def render(kind: str, details: Mapping[str, Any], language: str) -> str:
    """The sentence of ``kind`` (without the field's label) in ``language``, its details filled in."""
    tr = translations(language)
    filled = {key: _value(v, language) for key, v in details.items()}
    if "allowed" in details:
        allowed = [v if isinstance(v, str) else _value(v, language) for v in details["allowed"]]
        filled["allowed"] = format_list(allowed, locale=language)  # "a, b og c", "a وb وc": the language's list
    for key in ("instance", "first", "last", "engines", "engine", "difficulty", "at", "earliest"):
        if key in details:
            filled[key] = str(details[key])
    if "role" in details:  # a game-day role's label ("incident commander"), in the language's words
        filled["role"] = tr.gettext(details["role"])
    if "roles" in details:
        filled["roles"] = format_list([tr.gettext(r) for r in details["roles"]], locale=language)
    if "unit" in details:
        filled["unit"] = tr.gettext(details["unit"]) if details["unit"] else ""
    if kind in PLURAL_REFUSALS:
        singular, plural = PLURAL_REFUSALS[kind]
        return tr.ngettext(singular, plural, int(details["n"])) % filled
    if kind == "range":
        key = "range.whole" if details.get("whole") else "range.number"
        key += ".unit" if details.get("unit") else ""
        return tr.gettext(REFUSAL_TEXTS[key]) % filled
    return tr.gettext(REFUSAL_TEXTS[kind]) % filled


def localize(exc: InvalidInput, language: str = DEFAULT_LANGUAGE) -> str:
    """The refusal as a page in ``language`` shows it: "LABEL: sentence" from its kind and details. English, and
    a refusal without a kind (or one unknown here), is ``str(exc)``: the English message exactly."""
    known = exc.kind in REFUSAL_TEXTS or exc.kind in PLURAL_REFUSALS or exc.kind == "range"
    if language == DEFAULT_LANGUAGE or not known:
        return str(exc)
    tr = translations(language)
    return f"{label_of(exc.field, tr.gettext)}: {render(exc.kind, exc.details, language)}"


def localized_fields(exc: InvalidInput, language: str) -> dict[str, str]:
    """What an error answer (HTTP JSON, a WebSocket frame) adds to its English ``error``/``message`` for a page
    in ``language``: ``{"localized": …}``, or nothing when that would be the English text (an English page and
    an API client get the answer they always got, byte for byte)."""
    text = localize(exc, language)
    return {"localized": text} if text != str(exc) else {}

"""The facilitator's fault menu, read from the scenario event schema: every event kind a scenario file accepts is
injectable, its fields and their bounds taken from the schema, and a fault is validated by the same model.

A fault is given as a kind, a time of day (every clock field of the event takes it) and a number per other
field; a ranged field (``Range``) gets that number as both ends, so nothing is drawn and the run replays
exactly. A kind that only the request engine has is offered only to rooms whose run uses that engine.

A chain of services (a scenario's ``[graph]``, docs/graphs.md) is offered what acts on a chain: a traffic spike at
its edge and a service slowed or failing (the ``service`` event, its service chosen from the graph's); the faults
of the one service's build, cache, database and instances are refused there in one line saying why
(``CHAIN_REFUSED``), and a service fault is refused on a room of one service.
"""

from __future__ import annotations

import math
import re
import typing
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from oncallsim.model import InvalidInput
from oncallsim.model.events import EVENT_TEXTS
from oncallsim.scenarios import spec
from oncallsim.scenarios.spec import Scenario
from oncallsim.validation import invalid_input

__all__ = [
    "CHAIN_REFUSED",
    "CHOICE_LABELS",
    "FAULT_LABELS",
    "FIELD_LABELS",
    "build_event",
    "event_kinds",
    "fault_menu",
    "hidden_codes",
]

# Labels of the kinds and fields (gettext msgids); a kind or field without one shows its schema's own words.
FAULT_LABELS = {
    "deploy": "bad deploy",
    "flush": "cache flush",
    "surge": "traffic spike",
    "brownout": "database brownout",
    "slow_instance": "slow instance",
    "crash": "instance crash",
    "hang": "hung instance",
    "zone_outage": "zone outage",
    "retry_storm": "retry storm",
    "instance": "instance fault",
    "service": "slow or failing service",
}
FIELD_LABELS = {
    "peak": "peak (× normal traffic)",
    "rise_min": "rise (minutes)",
    "decay_min": "decay (minutes)",
    "minutes": "minutes",
    "factor": "factor",
    "what": "what happens",
    "instance": "instance id",
    "slowdown": "slowdown (× slower)",
    "share": "share of the fleet",
    "service": "service",
    "errors": "errors (share of attempts failing)",
}
# The words of a choice field's values (the instance fault's ``what``).
CHOICE_LABELS = {"slow": "slow", "crash": "crash", "hang": "hang", "revive": "recover"}
# A sensible first value in the menu for fields whose schema has no default (the model still validates).
FIELD_DEFAULTS: dict[str, Any] = {
    "peak": 2.5,
    "rise_min": 5.0,
    "decay_min": 20.0,
    "slowdown": 5.0,
    "share": 0.33,
    "minutes": 10.0,
    "instance": 0,
    "errors": 0.0,
}
# The model events that announce a fault of each kind (hidden from the players with a hidden fault).
FAULT_EVENT_CODES = {
    "deploy": ("deploy_started", "deploy_finished"),
    "flush": ("cache_flushed",),
    "zone_outage": ("zone_down",),
    "instance.slow": ("instance_slow",),
    "instance.crash": ("instance_crashed",),
    "instance.hang": ("instance_hung",),
    "instance.revive": ("instance_revived",),
}
TOP_LEVEL = {"kind"}
TIME_OF_DAY = re.compile(r"^([01]\d|2[0-3]):[0-5]\d$")  # a fault's time (the scenario schema's clock)
# The one service's faults a chain has nothing to act on (its cache and database are services of its graph, its
# answers its services', its fleets declared per service): why each is refused on a chain room.
CHAIN_REFUSED = {
    "deploy": "a bad build is the one service's; a chain's answers are its services' (inject a failing service)",
    "flush": "the one service's cache; a chain's cache is a service of its graph (inject a slow service)",
    "brownout": "the one service's database; a chain's database is a service of its graph (inject a slow service)",
    "instance": "the one service's instances; a chain's services have pooled workers, not instances to pick",
    "zone_outage": "the one service's zones; a chain's services have no zones",
}
# A chain's own fault (the ``service`` event): it needs a graph to name a service of.
CHAIN_ONLY = {"service": "acts on a service of a chain ([graph]); this room plays one service"}


def _models(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models(arg)]


def event_kinds() -> dict[str, type[BaseModel]]:
    """kind → its event model, from ``Scenario.events``' union (every kind a scenario file accepts)."""
    out: dict[str, type[BaseModel]] = {}
    for model in _models(Scenario.model_fields["events"].annotation):
        kind = model.model_json_schema()["properties"]["kind"].get("const")
        if isinstance(kind, str):
            out[kind] = model
    return out


def engines_of(model: type[BaseModel]) -> list[str] | None:
    """The engines an event kind works on (None: every engine), as the schema says it."""
    kind = model.model_json_schema()["properties"]["kind"].get("const")
    if kind in getattr(spec, "REQUEST_EVENT_KINDS", ()):
        return ["request"]
    for source in (getattr(model, "engines", None), (model.model_config.get("json_schema_extra") or {})):
        if isinstance(source, dict):
            source = source.get("engines")
        if isinstance(source, (list, tuple, frozenset, set)):
            return sorted(str(e) for e in source)
        if isinstance(source, str):
            return [source]
    doc = (model.__doc__ or "").lower()
    if "request engine only" in doc or "request-engine only" in doc or "only the request engine" in doc:
        return ["request"]
    return None


def _field_spec(name: str, prop: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    if "anyOf" in prop:  # an optional field (``int | None``): the menu asks for its value (None may draw)
        chosen: dict[str, Any] = next((p for p in prop["anyOf"] if p.get("type") != "null"), {})
        prop = {**chosen, **{k: v for k, v in prop.items() if k != "anyOf"}}
        if prop.get("default") is None:
            prop.pop("default", None)
    if "$ref" in prop:
        target = defs.get(prop["$ref"].rsplit("/", 1)[-1], {})
        if set(target.get("properties", {})) == {"low", "high"}:
            return {
                "name": name,
                "type": "number",
                "ranged": True,
                **_bounds(prop),
                "default": FIELD_DEFAULTS.get(name, 1.0),
            }
    if prop.get("type") == "string" and "pattern" in prop and "HH:MM" in prop.get("description", "HH:MM"):
        return {"name": name, "type": "clock"}
    if prop.get("type") == "array" and all(p.get("type") == "string" for p in prop.get("prefixItems", [])):
        return {"name": name, "type": "clocks", "count": len(prop.get("prefixItems", []))}
    if prop.get("type") in ("number", "integer"):
        default = prop.get("default", FIELD_DEFAULTS.get(name, prop.get("minimum", 1)))
        return {"name": name, "type": prop["type"], **_bounds(prop), "default": default}
    if prop.get("type") == "string" and "enum" in prop:
        return {"name": name, "type": "choice", "choices": list(prop["enum"]), "default": prop.get("default")}
    return {"name": name, "type": "other"}


def _bounds(prop: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        if key in prop:
            out[key] = prop[key]
    return out


def fault_menu(engine: str, services: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """What the facilitator may inject in a room whose run uses ``engine``: kind, label, description, fields.
    ``services``: the chain's services in declaration order (none: the room plays one service); a service fault's
    ``service`` is a choice of them."""
    menu = []
    for kind, model in event_kinds().items():
        engines = engines_of(model)
        if engines is not None and engine not in engines:
            continue
        if (kind in CHAIN_REFUSED and services) or (kind in CHAIN_ONLY and not services):
            continue
        schema = model.model_json_schema()
        defs = schema.get("$defs", {})
        fields = [_field_spec(n, p, defs) for n, p in schema["properties"].items() if n not in TOP_LEVEL]
        if kind == "service":  # the graph's services to choose from (the schema knows only their pattern)
            fields = [
                {"name": "service", "type": "choice", "choices": list(services), "default": services[-1]}
                if f["name"] == "service"
                else {**f, "default": FIELD_DEFAULTS[f["name"]]}
                if f["name"] in ("slowdown", "errors")
                else f
                for f in fields
            ]
        menu.append(
            {
                "kind": kind,
                "label": FAULT_LABELS.get(kind, kind.replace("_", " ")),
                "description": (model.__doc__ or "").strip().splitlines()[0] if model.__doc__ else "",
                "fields": fields,
                "engines": engines,
            }
        )
    return menu


def build_event(kind: Any, at: str, values: Any, engine: str, services: tuple[str, ...] = ()) -> dict[str, Any]:
    """A fault from the menu → a scenario event (as a scenario file writes it), validated by the event's model.

    Unknown kinds, missing or extra fields and values out of range are refused naming the field; on a chain
    (``services``), the one service's faults are refused saying why, and a service fault off a chain."""
    kinds = {item["kind"]: item for item in fault_menu(engine, services)}
    if isinstance(kind, str) and kind not in kinds and kind in CHAIN_REFUSED and services:
        raise InvalidInput("fault.kind", f"{kind} is refused on a chain of services: {CHAIN_REFUSED[kind]}")
    if isinstance(kind, str) and kind not in kinds and kind in CHAIN_ONLY and not services and engine == "request":
        raise InvalidInput("fault.kind", f"{kind} {CHAIN_ONLY[kind]}")
    if not isinstance(kind, str) or kind not in kinds:
        known = ", ".join(kinds)
        other = [k for k in event_kinds() if k not in kinds]
        extra = (
            f" ({', '.join(other)}: request engine only)" if other and isinstance(kind, str) and kind in other else ""
        )
        raise InvalidInput("fault.kind", f"must be one of {known}, got {str(kind)[:40]!r}{extra}")
    if not isinstance(values, dict):
        raise InvalidInput("fault.values", "must be an object of field: number")
    if not isinstance(at, str) or not TIME_OF_DAY.match(at):
        raise InvalidInput("fault.at", f"must be a time of day, HH:MM from 00:00 to 23:59, got {str(at)[:40]!r}")
    fields = kinds[kind]["fields"]
    names = {f["name"] for f in fields if f["type"] not in ("clock", "clocks")}
    unknown = sorted(set(values) - names)
    if unknown:
        raise InvalidInput(
            f"fault.{str(unknown[0])[:40]}", f"not a field of {kind}; fields: {', '.join(sorted(names)) or 'none'}"
        )
    event: dict[str, Any] = {"kind": kind}
    one_clock = any(f["type"] == "clock" for f in fields)  # a kind with ``at`` and ``at_between``: the fixed one
    for f in fields:
        name = f["name"]
        if f["type"] == "clock":
            event[name] = at
        elif f["type"] == "clocks":
            if not one_clock:
                event[name] = [at] * f["count"]
        elif name in values:
            value = values[name]
            if f["type"] == "choice":
                if value not in f["choices"]:
                    choices = ", ".join(map(str, f["choices"]))
                    raise InvalidInput(f"fault.{name}", f"must be one of {choices}, got {str(value)[:40]!r}")
            elif isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise InvalidInput(f"fault.{name}", f"must be a number, got {str(value)[:40]!r}")
            elif f["type"] == "integer" and not float(value).is_integer():
                raise InvalidInput(f"fault.{name}", f"must be a whole number, got {value!r}")
            elif not _within(f, value):
                raise InvalidInput(f"fault.{name}", f"must be {_range_text(f)}, got {value!r}")
            if f["type"] == "integer":
                value = int(value)
            event[name] = {"low": value, "high": value} if f.get("ranged") else value
    try:
        TypeAdapter(event_kinds()[kind]).validate_python(event)
    except ValidationError as exc:
        raise invalid_input(exc, "fault") from None
    return event


def _within(field: dict[str, Any], value: float) -> bool:
    """Whether ``value`` is within the bounds the schema gives the field (a field without bounds: any)."""
    low, high = float(field.get("minimum", -math.inf)), float(field.get("maximum", math.inf))
    above, below = float(field.get("exclusiveMinimum", -math.inf)), float(field.get("exclusiveMaximum", math.inf))
    return low <= value <= high and above < value < below


def _range_text(field: dict[str, Any]) -> str:
    """The field's bounds in words: "from 1 to 10080", "above 1 and at most 20"."""
    parts = []
    if "minimum" in field:
        parts.append(f"from {field['minimum']:g}")
    elif "exclusiveMinimum" in field:
        parts.append(f"above {field['exclusiveMinimum']:g}")
    if "maximum" in field:
        parts.append(f"to {field['maximum']:g}" if "minimum" in field else f"at most {field['maximum']:g}")
    elif "exclusiveMaximum" in field:
        parts.append(f"below {field['exclusiveMaximum']:g}")
    return (" " if "minimum" in field and "maximum" in field else " and ").join(parts)


def hidden_codes(kind: str, event: dict[str, Any] | None = None) -> tuple[str, ...]:
    """The model events that would tell the players a fault of ``kind`` happened (its symptoms stay)."""
    what = (event or {}).get("what")
    for key in (f"{kind}.{what}", kind):
        if key in FAULT_EVENT_CODES:
            return FAULT_EVENT_CODES[key]
    return tuple(code for code in EVENT_TEXTS if code.startswith(kind))

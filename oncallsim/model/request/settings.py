"""The operator's settings the request engine's world holds, read and written through their specs.

Each request-engine setting is declared beside its mechanism (``ControlSpec`` with ``piece`` and ``slot``: the
piece of the world that holds it, and its place in that piece's ``ints`` or ``reals``); this module reads and
writes every one of them the same way, so a new control needs no code here. A choice is held as its index, a
switch as 0/1, a number divided by the spec's ``divisor`` (ms → s). Values are validated once, by
``controls.coerce_control_value``; rules between settings (adaptive LIFO needs a queue limit) are the specs'
``check``. The mechanisms' own parameters (not the operator's: K, the budget's burst, the clients) are laid
in by ``configure_world``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from oncallsim.model.control_spec import ControlSpec
from oncallsim.model.controls import CONTROL_SPECS, WORLD_SETTINGS, Controls, coerce_control_value
from oncallsim.model.params import Params
from oncallsim.model.request.balancers import I_CLIENTS
from oncallsim.model.request.breaker import R_ERROR_SHARE, R_SLEEP, R_THROTTLE_K, R_VOLUME
from oncallsim.model.request.calls import R_BUDGET_BURST, R_RETRY_BAD
from oncallsim.model.request.world import World

__all__ = [
    "check",
    "configure_world",
    "in_force",
    "read",
    "set_parameters",
    "set_world",
    "world_settings",
    "write",
]

SPECS: tuple[ControlSpec, ...] = tuple(CONTROL_SPECS[name] for name in WORLD_SETTINGS)


def _array(world: World, spec: ControlSpec) -> np.ndarray[Any, Any]:
    piece = getattr(world, spec.piece)
    return piece.reals if spec.real else piece.ints  # type: ignore[no-any-return]


def write(world: World, name: str, value: Any) -> None:
    """Lay one setting (already validated) into its slot of the world."""
    spec = CONTROL_SPECS[name]
    if spec.kind == "choice":
        stored: float = spec.choices.index(value)
    elif spec.kind == "bool":
        stored = 1 if value else 0
    else:
        stored = value / spec.divisor if spec.divisor != 1.0 else value
    _array(world, spec)[spec.slot] = stored


def read(world: World, name: str) -> Any:
    """One setting as the world holds it, in the control's own terms."""
    spec = CONTROL_SPECS[name]
    raw = _array(world, spec)[spec.slot]
    if spec.kind == "choice":
        return spec.choices[int(raw)]
    if spec.kind == "bool":
        return bool(raw)
    if spec.kind == "int":
        return round(float(raw) * spec.divisor) if spec.divisor != 1.0 else int(raw)
    return float(raw) * spec.divisor


def world_settings(world: World) -> dict[str, Any]:
    """Every setting the world holds (``controls.WORLD_SETTINGS``), by name."""
    return {spec.name: read(world, spec.name) for spec in SPECS}


def check(settings: Mapping[str, Any], changed: str) -> None:
    """The rules between settings, for the settings as they would be after ``changed`` changed."""
    rule = CONTROL_SPECS[changed].check
    if rule is not None:
        rule(settings, changed)


def set_world(world: World, **values: Any) -> None:
    """Change some of the world's settings at once (a test's, a check's or a zoom's set-up): each validated as
    every surface validates it, the rules checked on the result; nothing changes if one is refused."""
    coerced = {name: coerce_control_value(name, value) for name, value in values.items()}
    after = {**world_settings(world), **coerced}
    for name in coerced:
        check(after, name)
    for name, value in coerced.items():
        write(world, name, value)


def configure_world(world: World, controls: Controls, params: Params) -> None:
    """The run's opening settings and the mechanisms' parameters laid into its world: at a run's start, and
    when a zoom rebuilds a minute from its record."""
    settings = controls.world_settings()
    for name in settings:
        check(settings, name)
    for name, value in settings.items():
        write(world, name, value)
    set_parameters(world, params)


def set_parameters(world: World, params: Params) -> None:
    """The mechanisms' parameters (validated by ``Params``): how many clients balance on their own, the breakers'
    K, volume, error share and sleep window, whether a bad build's errors are retried, the retry budget's burst
    (each client's bucket filled)."""
    world.views.ints[I_CLIENTS] = params.clients
    world.breaker.reals[R_THROTTLE_K] = params.throttle_k
    world.breaker.reals[R_VOLUME] = params.breaker_volume
    world.breaker.reals[R_ERROR_SHARE] = params.breaker_error_share
    world.breaker.reals[R_SLEEP] = params.breaker_sleep_s
    world.calls.reals[R_RETRY_BAD] = params.retry_bad_build
    world.calls.reals[R_BUDGET_BURST] = params.retry_budget_burst
    world.calls.tokens[:] = params.retry_budget_burst  # each client's bucket starts full


def in_force(
    settings: Mapping[str, Any],
    gettext: Callable[[str], str] = str,
    value_text: Callable[[str, Any], str] | None = None,
) -> list[str]:
    """The settings in force as phrases (the zoom page's), from each spec's ``in_force``: "the p2c balancer",
    "CoDel queues", "up to 3 retries per request"; a setting whose phrase is empty, or whose ``only_with`` is
    off (at its default: no retries, no breaker), says nothing. ``gettext`` translates each phrase and
    ``value_text(name, value)`` writes its value (the zoom page's language); English and the spec's own
    ``value_text`` by default."""
    phrases = []
    for spec in SPECS:
        parent = spec.only_with
        if spec.name not in settings or (
            parent and settings.get(parent, CONTROL_SPECS[parent].default) == CONTROL_SPECS[parent].default
        ):
            continue
        phrase = spec.sentence(
            spec.in_force,
            settings[spec.name],
            gettext,
            None if value_text is None else functools.partial(value_text, spec.name),
        )
        if phrase:
            phrases.append(phrase)
    return phrases

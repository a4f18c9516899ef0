"""What happens to instances at a minute's start: the scenario's faults (slow, crash, hang, revive, a zone
off the network) and the operator's actions (the balancer, self-protection, eject, readmit, replace).

Both change the request engine's world only (the minute model has no instances). An action is checked against
the run's state when it is given (``check_instance_action``: an instance that is not there, ejecting the last
one in rotation); one that no longer fits when its minute comes (the instance was scaled in meanwhile) is
reported as an event and changes nothing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from oncallsim.model.control_spec import REQUEST_ONLY
from oncallsim.model.controls import CONTROL_SPECS, WORLD_SETTINGS
from oncallsim.model.errors import InvalidInput
from oncallsim.model.events import Event, instance_id
from oncallsim.model.fields import ST
from oncallsim.model.params import Params
from oncallsim.model.plan import InstanceFault
from oncallsim.model.request.balancers import B_CPU, B_LAG, B_PICK, B_STAMP, B_SUCCESS, CPU_START, SUCCESS_START
from oncallsim.model.request.instances import HANG, I_ZONE_END, OFFLINE, R_ZONE_SHARE, REFUSE, UP
from oncallsim.model.request.settings import check, world_settings, write
from oncallsim.model.request.view import WorldView
from oncallsim.model.request.world import World

__all__ = [
    "apply_faults",
    "apply_world_actions",
    "check_instance_action",
    "in_zone",
    "lay_out_fleet",
    "view_of",
    "zone_slots",
]

_GOLDEN = 0.6180339887498949
_FAULT_EVENTS = {
    "slow": "instance_slow",
    "crash": "instance_crashed",
    "hang": "instance_hung",
    "revive": "instance_revived",
}


def in_zone(i: int, share: float) -> bool:
    """Whether instance slot ``i`` lies in the zone holding ``share`` of the slots (spread evenly, no draw)."""
    return ((i + 1) * _GOLDEN) % 1.0 < share


def zone_slots(count: int, share: float) -> list[int]:
    return [i for i in range(count) if in_zone(i, share)]


def _rotating(w: World, serving: int) -> list[int]:
    return [i for i in range(serving) if w.registry.reg[i] and not w.fleet.ejected[i]]


def view_of(w: World, serving: int) -> WorldView:
    """What ``check_instance_action`` reads of the world, as a value that crosses processes cheaply."""
    return WorldView(
        settings=world_settings(w),
        ejected=tuple(bool(e) for e in w.fleet.ejected[:serving].tolist()),
        replacing=tuple(bool(r) for r in w.fleet.replacing[:serving].tolist()),
        rotating=tuple(_rotating(w, serving)),
    )


def check_instance_action(w: World | WorldView, serving: int, control: str, value: Any) -> None:
    """Refuse a setting that breaks a rule with the settings in force, an action on an instance the fleet does
    not have, or one that cannot take it now; against the world itself or its view (``view_of``)."""
    if control in WORLD_SETTINGS:
        settings = w.settings if isinstance(w, WorldView) else world_settings(w)
        check({**settings, control: value}, control)
        return
    if control not in ("eject", "readmit", "replace"):
        return
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < serving:
        raise InvalidInput(
            control,
            f"no instance {value!r}: the serving instances are {instance_id(0)} to {instance_id(serving - 1)}",
            "no_instance",
            got=value,
            first=instance_id(0),
            last=instance_id(serving - 1),
        )
    view = w if isinstance(w, WorldView) else view_of(w, serving)
    if control == "eject":
        if view.ejected[value]:
            raise InvalidInput(
                control,
                f"instance {instance_id(value)} is already out of rotation (readmit puts it back)",
                "already_ejected",
                instance=instance_id(value),
            )
        if list(view.rotating) == [value]:
            raise InvalidInput(
                control,
                f"instance {instance_id(value)} is the last one in rotation: ejecting it would stop all traffic",
                "last_in_rotation",
                instance=instance_id(value),
            )
    elif control == "readmit" and not view.ejected[value]:
        raise InvalidInput(
            control, f"instance {instance_id(value)} is not ejected", "not_ejected", instance=instance_id(value)
        )
    elif control == "replace" and view.replacing[value]:
        raise InvalidInput(
            control,
            f"instance {instance_id(value)} is already being replaced",
            "already_replacing",
            instance=instance_id(value),
        )


def _hold_in_flight(w: World, i: int, fate: int, wpi: int) -> None:
    """The requests a dying instance is serving: refused at their next step (a crash), or held until their
    clients give up (a hang, a lost network)."""
    for k in range(i * wpi, (i + 1) * wpi):
        if w.workers.w_busy[k] and w.workers.w_held[k] == 0:
            w.workers.w_held[k] = fate
            w.workers.w_queries[k] = 0


def _fresh_views(w: World, i: int) -> None:
    """A new instance at slot ``i``: no client has statistics of it yet."""
    w.views.bal[B_LAG, :, i] = 0.0
    w.views.bal[B_SUCCESS, :, i] = SUCCESS_START
    w.views.bal[B_CPU, :, i] = CPU_START
    w.views.bal[B_STAMP, :, i] = 0.0
    w.views.bal[B_PICK, :, i] = -np.inf


def apply_faults(w: World, faults: Iterable[InstanceFault], t: int, serving: int, wpi: int) -> list[Event]:
    """The scenario's instance events of minute ``t``, and the zone outage's start, continuation and end."""
    events: list[Event] = []
    if w.fleet.ints[I_ZONE_END] and t >= w.fleet.ints[I_ZONE_END]:
        for i in range(len(w.fleet.health)):
            if w.fleet.health[i] == OFFLINE:
                w.fleet.health[i] = UP
        w.fleet.ints[I_ZONE_END] = 0
        w.fleet.reals[R_ZONE_SHARE] = 0.0
        events.append(Event("zone_back"))
    for f in faults:
        if f.minute != t:
            continue
        if f.what == "zone":
            w.fleet.reals[R_ZONE_SHARE] = f.share
            w.fleet.ints[I_ZONE_END] = t + f.minutes if f.minutes > 0 else 1 << 40
            down = sum(1 for i in zone_slots(serving, f.share))
            events.append(Event("zone_down", n=down))
            continue
        i = -1 - int(f.pick) if f.pick < 0 else math.floor(f.pick * serving)
        if i >= serving:
            events.append(Event("instance_gone", instance=i, name=f.what))
            continue
        if f.what == "slow":
            w.fleet.speed[i] = f.speed
        elif f.what == "crash":
            w.fleet.health[i] = REFUSE
            _hold_in_flight(w, i, 1, wpi)
        elif f.what == "hang":
            w.fleet.health[i] = HANG
            _hold_in_flight(w, i, 2, wpi)
        else:
            w.fleet.health[i] = UP
            w.fleet.speed[i] = w.fleet.base_speed[i]
        events.append(Event(_FAULT_EVENTS[f.what], instance=i))
    share = w.fleet.reals[R_ZONE_SHARE]
    if share > 0.0:  # the zone's slots are unreachable, those that booted into it too
        for i in zone_slots(serving, share):
            if w.fleet.health[i] != OFFLINE:
                w.fleet.health[i] = OFFLINE
                _hold_in_flight(w, i, 2, wpi)
    return events


def apply_world_actions(
    w: World,
    vec: npt.NDArray[np.float64],
    actions: Iterable[tuple[str, Any]],
    t: int,
    params: Params,
) -> list[Event]:
    """The operator's request-engine controls, in the order given; and the replacements that are ready."""
    events: list[Event] = []
    serving = int(vec[ST.serving])
    t0 = 60.0 * t
    for name, value in actions:
        if name in WORLD_SETTINGS:
            try:  # two settings of one minute can conflict (adaptive-lifo without a limit): the later one waits
                check({**world_settings(w), name: value}, name)
            except InvalidInput:
                events.append(Event("not_applied", name=name, value=value))
                continue
            write(w, name, value)
            events.append(Event("setting", name=name, value=value))
        elif name in ("eject", "readmit", "replace"):
            try:
                check_instance_action(w, serving, name, value)
            except InvalidInput:
                events.append(Event("instance_gone", instance=value, name=name))
                continue
            if name == "eject":
                w.fleet.ejected[value] = 1
                events.append(Event("instance_ejected", instance=value))
            elif name == "readmit":
                w.fleet.ejected[value] = 0
                events.append(Event("instance_readmitted", instance=value))
            else:
                w.fleet.replacing[value] = t + params.boot_delay_min + 1  # the minute it is ready, + 1 (0: none)
                events.append(Event("replacement_started", instance=value))
        elif CONTROL_SPECS[name].engines == REQUEST_ONLY:
            raise AssertionError(f"request-engine control {name!r} has no effect here")
    for i in range(len(w.fleet.replacing)):
        due = int(w.fleet.replacing[i]) - 1
        if due < 0:
            continue
        if i >= serving:  # scaled in meanwhile: nothing to replace
            w.fleet.replacing[i] = 0
            continue
        if t < due:  # the fresh instance boots, billed like any instance
            vec[ST.cost_so_far] += params.instance_price_per_hour / 60.0
            continue
        w.fleet.replacing[i] = 0
        w.fleet.health[i] = UP
        w.fleet.speed[i] = w.fleet.base_speed[i]
        w.fleet.ejected[i] = 0
        w.registry.reg_prev[i] = 0  # the old one deregistered, the new one registered: balancers learn of it
        w.registry.reg[i] = 1
        w.registry.reg_at[i] = t0
        w.registry.reg_since[i] = t0
        w.registry.renew_stop[i] = math.inf
        w.registry.evict_at[i] = math.inf
        _fresh_views(w, i)
        events.append(Event("instance_replaced", instance=i))
    return events


def lay_out_fleet(w: World, speeds: Sequence[float], weights: Sequence[float]) -> None:
    """Each instance slot's machine and registered weight (a scenario's ``fleet``; each list repeated over the
    slots, empty: all alike), before the run's first minute."""
    for i in range(len(w.fleet.speed)):
        if speeds:
            w.fleet.base_speed[i] = w.fleet.speed[i] = speeds[i % len(speeds)]
        if weights:
            w.views.weight[i] = weights[i % len(weights)]
            w.views.w_ewt[:, i] = w.views.weight[i]

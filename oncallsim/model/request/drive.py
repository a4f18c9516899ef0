"""How Python drives one request-level minute: the engine's own minute, the zoom, the checks in ``verify/``, the
queue-only runs (M/M/N) and the tests, all through ``run_minute`` — named arguments instead of the compiled
loop's positional ones, the world given room first, and the minute's numbers read by name.

    >>> from oncallsim.model.request.queue_only import queue_only_world
    >>> p, world, state = queue_only_world(servers=16, service_s=0.05, seed=1)
    >>> minute = run_minute(p, world, state, 0, poisson_rate=200.0)
    >>> round(minute.measured("requests_per_s")), minute.extra("retries_per_s")
    (201, 0.0)
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from oncallsim.model.errors import InvalidInput
from oncallsim.model.fields import EXT, EXTRA_SCHEMA, NUMERIC_FIELDS, REC, ST, extras_by_name
from oncallsim.model.kernel import P
from oncallsim.model.request.controllers import ControllerRun
from oncallsim.model.request.physics import (
    CLOSE_PART,
    OPEN_PART,
    RUN_PART,
    WHOLE_MINUTE,
    request_minute_part,
)
from oncallsim.model.request.stream import MODE_PIPELINE, MODE_QUEUE_ONLY
from oncallsim.model.request.world import World, with_room

__all__ = ["Minute", "run_minute"]


class Minute(NamedTuple):
    """One simulated minute: the world after it (its arrays may have grown: use this one from now on), the
    measured record fields (``fields.NUMERIC_FIELDS`` order) and the extras (``fields.EXTRA_SCHEMA`` order)."""

    world: World
    record: npt.NDArray[np.float64]
    extras: npt.NDArray[np.float64]

    def measured(self, name: str) -> float:
        """A record field the minute measured (``requests_per_s``, ``p99_ms``, …)."""
        return float(self.record[getattr(REC, name)])

    def extra(self, name: str) -> float:
        """One of the request engine's extras (``goodput_per_s``, ``attempts_per_s``, …)."""
        return float(self.extras[getattr(EXT, name)])

    def extras_by_name(self) -> dict[str, float]:
        return extras_by_name(self.extras)


def run_minute(
    p: npt.NDArray[np.float64],
    world: World,
    state: npt.NDArray[np.float64],
    minute: int,
    *,
    arrivals: int | None = None,
    poisson_rate: float | None = None,
    sample_every: int = 0,
    flags: int = 0,
    record: npt.NDArray[np.float64] | None = None,
    controller: ControllerRun | None = None,
) -> Minute:
    """Simulate minute ``minute`` of ``world`` (seconds 60·minute to 60·minute + 60) request by request.

    ``p`` are the parameters as compiled code reads them (``kernel.kernel_params``), ``state`` the minute
    model's state vector (the fleet, the settings in force). Give ``arrivals`` (the minute's count of requests,
    uniform in the minute, through the whole pipeline: shedding, cache, database, builds) or ``poisson_rate``
    (queue-only mode: a Poisson stream per second, exponential service of the app time, no cache or database).
    ``sample_every`` > 0 keeps every n-th arrival's path in ``world.meter.samples``; ``flags`` are the minute's
    stage flags (``stages.FLUSH``); ``record`` receives the measured fields in place when given. With a
    ``controller`` (a run's ``ControllerRun`` holding one), the minute's events run in segments between its ticks
    and the controller is called at each; without one, the minute runs in one compiled call."""
    if isinstance(minute, bool) or not isinstance(minute, int) or minute < 0:
        raise InvalidInput("minute", f"must be a whole number from 0, got {minute!r}")
    if (arrivals is None) == (poisson_rate is None):
        raise InvalidInput("arrivals", "give the minute's arrivals or a Poisson rate (queue-only mode), one of them")
    if arrivals is not None and (isinstance(arrivals, bool) or not isinstance(arrivals, int) or arrivals < 0):
        raise InvalidInput("arrivals", f"must be a whole number from 0, got {arrivals!r}")
    if poisson_rate is not None and not (isinstance(poisson_rate, (int, float)) and 0 <= poisson_rate < math.inf):
        raise InvalidInput(
            "poisson_rate", f"must be a finite number of requests per second from 0, got {poisson_rate!r}"
        )
    if isinstance(sample_every, bool) or not isinstance(sample_every, int) or sample_every < 0:
        raise InvalidInput("sample_every", f"must be a whole number from 0 (none sampled), got {sample_every!r}")
    if arrivals is not None:
        mode, count, rate, room = MODE_PIPELINE, arrivals, 0.0, arrivals
    else:
        rate = float(poisson_rate or 0.0)
        mode, count, room = MODE_QUEUE_ONLY, 0, math.ceil(rate * 90.0) + 64  # 1.5 × the mean: the stream's spread
    world = with_room(world, room)
    rec = np.zeros(len(NUMERIC_FIELDS)) if record is None else record
    ext = np.zeros(len(EXTRA_SCHEMA))
    end = 60.0 * minute + 60.0
    if controller is None or controller.controller is None:  # the minute in one call
        request_minute_part(
            p, world, minute, flags, state, rec, ext, mode, count, rate, sample_every, end, WHOLE_MINUTE
        )
        return Minute(world, rec, ext)
    request_minute_part(p, world, minute, flags, state, rec, ext, mode, count, rate, sample_every, end, OPEN_PART)
    w = world

    def segment(until: float) -> None:
        request_minute_part(p, w, minute, flags, state, rec, ext, mode, count, rate, sample_every, until, RUN_PART)

    wpi = int(p[P.workers_per_instance])
    controller.minute(world, minute, int(state[ST.serving]), wpi, float(p[P.timeout_s]), segment)
    request_minute_part(p, world, minute, flags, state, rec, ext, mode, count, rate, sample_every, end, CLOSE_PART)
    return Minute(world, rec, ext)

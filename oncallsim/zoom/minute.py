"""A minute re-simulated at request level from what its record says (REQUESTS.md "Zoom").

The record holds everything the minute started from: the serving instances and the share on the bad build,
the settings in force (on a request-engine run also its world's: balancer, retries, queue discipline, limiter,
throttling, deadlines), the database's slowdown (a brownout), the minute's traffic, the cache's hit ratio,
whether the warm-up job ran. The zoom
lays that out for the request engine, fills the cache to its steady state for the minute's hit ratio (each
object present with that probability, its remaining TTL uniform), lets one minute at the same rate go by
first so that queues are in their steady state (none when the minute is unstable: a queue that grows has no
steady state), then simulates the minute keeping a sample of requests with their path. Either engine's
runs zoom the same way: it is a reconstruction from the record, not a replay of the run's own requests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oncallsim.model import InvalidInput, MinuteRecord, Params
from oncallsim.model.controls import SETTINGS, Controls
from oncallsim.model.fields import NUMERIC_FIELDS, REC, ST, extras_by_name
from oncallsim.model.kernel import kernel_params
from oncallsim.model.params import coerce_param
from oncallsim.model.plan import REVISION
from oncallsim.model.request.balancers import I_CLIENTS
from oncallsim.model.request.controllers import ControllerRun
from oncallsim.model.request.drive import run_minute
from oncallsim.model.request.engine import minute_count
from oncallsim.model.request.generator import splitmix64
from oncallsim.model.request.instances import HEALTH
from oncallsim.model.request.outcomes import (
    HIST_BIN_S,
    I_NSAMPLES,
    INSTANCE_LINES,
    OUTCOMES,
    SAMPLE_FIELDS,
    SECOND_LINES,
    X_OUTCOME,
)
from oncallsim.model.request.physics import fill_cache
from oncallsim.model.request.settings import configure_world, set_world
from oncallsim.model.request.world import World, new_world, with_room
from oncallsim.simulation import RunFile, Simulation

__all__ = ["HISTOGRAM_BINS", "ZoomedMinute", "zoom_record", "zoom_run"]

HISTOGRAM_BINS = 80  # the latency histogram a person reads: equal bins up to a little past the p99.9
SAMPLED = 400  # about this many requests kept with their path


@dataclass(frozen=True)
class ZoomedMinute:
    """What a person sees of a zoomed minute (``to_dict`` is its JSON form)."""

    minute: int
    clock: str
    source_engine: str  # the engine of the run the record came from
    record: dict[str, Any]  # the run's own record of the minute (what the zoom starts from)
    measured: dict[str, float]  # the zoomed minute's own measures (its record fields and extras)
    timeout_ms: float
    histogram_edges_ms: list[float]
    histogram_counts: list[int]
    timeouts: int
    seconds: dict[str, list[float]]
    instances: dict[str, list[float]]
    samples: list[dict[str, Any]]
    warmed_up: bool  # a minute at the same rate went by first (stable minutes)
    workers_per_instance: int
    sample_every: int  # the samples are every n-th arrival

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _seed_for(seed: int, minute: int) -> int:
    """The zoom's own stream: the run's seed and the minute, mixed (a zoom is reproducible)."""
    return splitmix64((seed << 20) ^ minute)[1]


def zoom_record(
    record: MinuteRecord, params: Params, seed: int = 0, source_engine: str = "minute", revision: int = REVISION
) -> ZoomedMinute:
    """Re-simulate the minute ``record`` describes, at request level, by the rules of model version ``revision``
    (the run's)."""
    p = kernel_params(params)
    extras = record.extras or {}
    if "graph" in extras:  # rebuilt as one service, a chain's minute would be some other system's
        raise InvalidInput(
            "minute", "is a minute of a chain of services; zoom_chain follows its requests across hops (a replay)"
        )
    # a request-engine record also holds its world's settings (retries, queue discipline, limiter, …)
    opening = Controls.from_mapping({name: getattr(record, name) for name in SETTINGS} | extras.get("settings", {}))
    st = opening.to_vector()
    st[ST.serving] = record.serving
    st[ST.bad_build_share] = record.bad_build_share
    st[ST.warmup_left] = 1.0 if record.warmup_active else 0.0
    st[ST.db_slowdown] = float(extras.get("db_slowdown", 1.0))  # a brownout in force that minute
    world = new_world(params, _seed_for(seed, record.minute), revision=revision)
    if "settings" in extras:
        configure_world(world, opening, params)
    restore_fleet(world, extras)
    control = zoom_controller(world, params, opening.controller)
    count = minute_count(record.requests_per_s)
    world = with_room(world, count)
    stable = record.servers > 0 and record.erlangs < record.servers
    # the zoom's own clock: the warm-up is its minute 0, the zoomed minute its minute 1 (times stay ≥ 0)
    fill_cache(world.backend, world.gen, record.cache_hit, record.ttl_s, 0.0 if stable else 60.0)
    if stable:
        world = run_minute(p, world, st, 0, arrivals=count, controller=control).world
    elif control is not None:  # no warm-up minute: its first tick is inside the zoomed minute
        control.next_tick = math.floor(60.0 / float(control.controller.tick_s)) + 1  # type: ignore[union-attr]
    every = max(1, count // SAMPLED)
    zoomed = run_minute(p, world, st, 1, arrivals=count, sample_every=every, controller=control)
    return _describe(record, params, zoomed.world, zoomed.record, zoomed.extras, stable, source_engine, every)


def zoom_controller(world: World, params: Params, name: str) -> ControllerRun | None:
    """The minute's overload controller as the zoom plays it: a shipped one afresh (its state learnt again over
    the warm-up minute, at the record's settings); a user's, attached through the Python API, is not in the
    record, so its minute cannot be rebuilt (refused, not played without it)."""
    if name == "off":
        return None
    if name == "custom":
        raise InvalidInput(
            "minute",
            "was played with a controller attached through the Python API (controller = custom), which the "
            "record cannot rebuild; zoom a run of a shipped controller or none",
        )
    control = ControllerRun()
    control.sync(world, params, 0)
    return control


def restore_fleet(world: World, extras: dict[str, Any]) -> None:
    """A request-engine record's fleet as the zoom replays it: its balancer, and each instance's health, speed,
    listing and ejection as they stood at the minute's end (a change within the minute is not replayed)."""
    if "balancer" in extras:
        set_world(world, balancer=extras["balancer"])
        world.views.ints[I_CLIENTS] = coerce_param("clients", extras.get("clients", 1))
    lines = extras.get("instances", {})
    for i, health in enumerate(lines.get("health", ())):
        world.fleet.health[i] = HEALTH.index(health)
        world.fleet.speed[i] = float(lines["speed"][i])
        world.registry.reg[i] = world.registry.reg_prev[i] = int(lines["registered"][i])
        world.fleet.ejected[i] = int(lines["ejected"][i])


def _describe(
    record: MinuteRecord,
    params: Params,
    world: Any,
    rec: Any,
    ext: Any,
    stable: bool,
    source_engine: str,
    every: int,
) -> ZoomedMinute:
    timeout_ms = params.timeout_s * 1000.0
    extras = extras_by_name(ext)
    hist = world.meter.latency_hist
    answered = hist[:-1]
    top_ms = min(timeout_ms, max(10.0, 1.25 * extras["p999_ms"]))
    width_ms = top_ms / HISTOGRAM_BINS
    per_bin = max(1, round(width_ms / (HIST_BIN_S * 1000.0)))
    width_ms = per_bin * HIST_BIN_S * 1000.0
    counts = [int(answered[k * per_bin : (k + 1) * per_bin].sum()) for k in range(HISTOGRAM_BINS)]
    counts[-1] += int(answered[HISTOGRAM_BINS * per_bin :].sum())  # the rest of the answered tail, up to the timeout
    measured = {f.name: float(rec[getattr(REC, f.name)]) for f in NUMERIC_FIELDS if _physics(f.name)}
    measured.update(extras)
    samples = []
    for row in world.meter.samples[: int(world.meter.ints[I_NSAMPLES])]:
        item: dict[str, Any] = dict(zip(SAMPLE_FIELDS, (float(v) for v in row), strict=True))
        item["outcome"] = OUTCOMES[int(row[X_OUTCOME])]
        samples.append(item)
    serving = record.serving
    return ZoomedMinute(
        minute=record.minute,
        clock=record.clock,
        source_engine=source_engine,
        record={k: v for k, v in record.to_dict().items() if k != "extras"} | (record.extras or {}),
        measured=measured,
        timeout_ms=timeout_ms,
        histogram_edges_ms=[k * width_ms for k in range(HISTOGRAM_BINS + 1)],
        histogram_counts=counts,
        timeouts=int(hist[-1]),
        seconds={line: world.meter.seconds[i].tolist() for i, line in enumerate(SECOND_LINES)},
        instances={line: world.meter.instances[i, :serving].tolist() for i, line in enumerate(INSTANCE_LINES)},
        samples=samples,
        warmed_up=stable,
        workers_per_instance=params.workers_per_instance,
        sample_every=every,
    )


_PHYSICS = frozenset(
    {
        "requests_per_s",
        "admitted_per_s",
        "shed_per_s",
        "cache_hit",
        "db_demand_qps",
        "db_utilization",
        "query_time_ms",
        "service_time_ms",
        "utilization",
        "wait_probability",
        "timeout_share",
        "error_rate",
        "error_overload",
        "error_timeout",
        "error_bad_build",
        "error_dead_instance",
        "p99_ms",
    }
)


def _physics(name: str) -> bool:
    return name in _PHYSICS


def zoom_run(run: RunFile | str | Path | Simulation, minute: int) -> ZoomedMinute:
    """Zoom into minute ``minute`` of a run (a run file, its path, or a live simulation), either engine."""
    sim = run if isinstance(run, Simulation) else Simulation.replay(run)
    played = len(sim.timeline)
    if isinstance(minute, bool) or not isinstance(minute, int) or not 0 <= minute < played:
        last = f"0 to {played - 1}" if played else "none: no minute played yet"
        raise InvalidInput("minute", f"must be a minute of the run, {last}; got {minute!r}")
    return zoom_record(sim.timeline[minute], sim.params, sim.seed, sim.engine.name, sim.plan.revision)

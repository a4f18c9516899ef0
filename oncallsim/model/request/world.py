"""The request engine's world: everything that carries from one minute to the next, as one piece per mechanism.

Queues, in-flight work, the cache and the database's partitions carry across minutes (REQUESTS.md), so a
run of the request engine holds them here, beside the minute model's ``State``. Each mechanism's module owns
its piece — a small named tuple of arrays with its settings in its own ``ints``/``reals`` slots, named by that
module's constants (``queues.Queues``, ``limiter.Limiter``, …) — and the world is their assembly plus the
generator. Compiled code reads and writes the arrays in place; a step takes the pieces it touches. Each piece class
is registered ``@by_reference`` (``jit.py``): compiled code holds it as one pointer, never as all its arrays.

Sizes are fixed when the run starts: workers = max fleet × workers per instance, the warm-up job's queries in
flight ``WARMUP_CONCURRENCY``. The arrival buffer, the waiting requests' slots and the calls grow before a
minute that needs more (``with_room``), up to ``QUEUE_CAPACITY`` waiting in all (one arriving then is rejected
at once, as overload); the queues' pool and the calls shrink back once a burst is over (``queues.shrunk``,
``calls.shrunk``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from oncallsim.model.errors import InvalidInput
from oncallsim.model.jit import by_reference
from oncallsim.model.params import Params
from oncallsim.model.plan import REVISION
from oncallsim.model.request import balancers as _balancers
from oncallsim.model.request import breaker as _breaker
from oncallsim.model.request import calls as _calls
from oncallsim.model.request import connections as _connections
from oncallsim.model.request import cpu as _cpu
from oncallsim.model.request import discovery as _discovery
from oncallsim.model.request import limiter as _limiter
from oncallsim.model.request import queues as _queues
from oncallsim.model.request import stream as _stream
from oncallsim.model.request.backend import MAX_OBJECTS, WARMUP_CONCURRENCY, Backend, new_backend
from oncallsim.model.request.balancers import MAX_CLIENTS, Views, new_views
from oncallsim.model.request.breaker import Breaker, new_breaker
from oncallsim.model.request.calls import Calls, new_calls
from oncallsim.model.request.connections import Conns, new_conns
from oncallsim.model.request.cpu import Cpu, new_cpu
from oncallsim.model.request.discovery import Registry, new_registry
from oncallsim.model.request.generator import seeded
from oncallsim.model.request.instances import Fleet, new_fleet
from oncallsim.model.request.limiter import Limiter, new_limiter
from oncallsim.model.request.outcomes import Meter, new_meter
from oncallsim.model.request.queues import QUEUE_START, Queues, new_queues
from oncallsim.model.request.stream import Stream, new_stream
from oncallsim.model.request.workers import MAX_WORKERS, Workers, new_workers

__all__ = [
    "World",
    "check_params",
    "copy_world",
    "new_world",
    "partitions_of",
    "revision_of",
    "set_revision",
    "with_room",
]


@by_reference
class World(NamedTuple):
    """One run's requests, workers, cache and database (see the module's docstring)."""

    gen: npt.NDArray[np.uint64]  # the generator's four words (generator.py)
    stream: Stream
    workers: Workers
    queues: Queues
    calls: Calls
    views: Views
    registry: Registry
    conns: Conns
    fleet: Fleet
    cpu: Cpu
    limiter: Limiter
    breaker: Breaker
    backend: Backend
    meter: Meter


def partitions_of(params: Params) -> tuple[int, float]:
    """(partitions, mean query time of one partition in s): capacity / (1 / base time) servers of the
    base query time each, so that the database's capacity and its idle query time are the model's."""
    base_s = params.db_base_query_ms / 1000.0
    count = max(1, round(params.db_capacity_qps * base_s))
    return count, count / params.db_capacity_qps


def check_params(params: Params) -> None:
    """What the request engine cannot hold: one expiry per hot object, one slot per worker."""
    if params.hot_objects > MAX_OBJECTS:
        raise InvalidInput(
            "hot_objects", f"must be at most {MAX_OBJECTS:,} on the request engine, got {params.hot_objects:g}"
        )
    workers = params.max_fleet * params.workers_per_instance
    if workers > MAX_WORKERS:
        raise InvalidInput(
            "max_fleet",
            f"max_fleet × workers_per_instance must be at most {MAX_WORKERS:,} on the request engine, got {workers:,}",
        )


def new_world(params: Params, seed: int, queue_capacity: int = QUEUE_START, revision: int = REVISION) -> World:
    """An empty world: no request in flight, an empty cache (the engine fills it before minute 0), following the
    rules of model version ``revision``."""
    check_params(params)
    slots = params.max_fleet
    partitions, _ = partitions_of(params)
    world = World(
        gen=seeded(seed),
        stream=new_stream(),
        workers=new_workers(slots, params.workers_per_instance, WARMUP_CONCURRENCY),
        queues=new_queues(slots, queue_capacity),
        calls=new_calls(MAX_CLIENTS),
        views=new_views(slots, params.clients),
        registry=new_registry(slots),
        conns=new_conns(slots),
        fleet=new_fleet(slots),
        cpu=new_cpu(slots),
        limiter=new_limiter(slots),
        breaker=new_breaker(MAX_CLIENTS),
        backend=new_backend(int(params.hot_objects), partitions),
        meter=new_meter(slots, params.timeout_s),
    )
    set_revision(world, revision)
    return world


def set_revision(world: World, revision: int) -> None:
    """The rules of model version ``revision`` (``RunPlan.revision``), in each piece whose mechanism changed with a
    version: a run file replays with its own version's rules, bit for bit."""
    world.cpu.ints[_cpu.I_REVISION] = revision
    world.limiter.ints[_limiter.I_REVISION] = revision
    world.views.ints[_balancers.I_REVISION] = revision
    world.calls.ints[_calls.I_REVISION] = revision
    world.breaker.ints[_breaker.I_REVISION] = revision
    world.registry.ints[_discovery.I_REVISION] = revision
    world.conns.ints[_connections.I_REVISION] = revision


def revision_of(world: World) -> int:
    """The model version whose rules the world follows."""
    return int(world.cpu.ints[_cpu.I_REVISION])


def copy_world(world: World) -> World:
    """An independent copy (a what-if that starts from a minute of this run)."""
    pieces = {
        name: type(piece)._make(a.copy() for a in piece) for name, piece in world._asdict().items() if name != "gen"
    }
    return World(gen=world.gen.copy(), **pieces)


def with_room(world: World, arrivals: int) -> World:
    """The world with room for a minute of ``arrivals``: its arrival buffer, its queues should they all wait,
    and its calls (compiled code does not allocate)."""
    every_request = world.views.ints[_balancers.I_BALANCER] != _balancers.POOLED and revision_of(world) >= 2
    queues = _queues.with_room(world.queues, arrivals)
    calls, renumber = _calls.shrunk(_calls.with_room(world.calls, arrivals, every_request), arrivals, every_request)
    if renumber is not None:  # the calls moved to other slots: the attempts waiting or in service follow them
        queues.s_call[:] = renumber[queues.s_call]
        world.workers.w_call[:] = renumber[world.workers.w_call]
    return world._replace(stream=_stream.with_room(world.stream, arrivals), queues=queues, calls=calls)

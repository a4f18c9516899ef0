"""The operator's settings the request engine's world holds (``controls.WORLD_SETTINGS``): the balancer, the
queue discipline and limit, deadlines, the limiter, throttling and the clients' retries — each checked and laid
into the world's scalar arrays, and read back out of them. Compiled code reads them by position (world.py)."""

from __future__ import annotations

from typing import Any

from oncallsim.model.controls import Controls
from oncallsim.model.errors import InvalidInput
from oncallsim.model.params import Params
from oncallsim.model.request.balancers import BALANCERS, I_BALANCER, I_CLIENTS, MAX_CLIENTS
from oncallsim.model.request.calls import (
    BACKOFFS,
    I_BACKOFF,
    I_RETRIES,
    MAX_RETRIES,
    R_BUDGET,
    R_BUDGET_BURST,
    R_RETRY_BAD,
    R_RETRY_BASE,
    R_RETRY_CAP,
)
from oncallsim.model.request.discovery import I_SELF_PROTECTION
from oncallsim.model.request.limiter import I_LIMITER
from oncallsim.model.request.queues import (
    I_DEADLINES,
    I_DISCIPLINE,
    I_QUEUE_LIMIT,
    QUEUE_CAPACITY,
    R_INTERVAL,
    R_LIFO_THRESHOLD,
    R_TARGET,
)
from oncallsim.model.request.throttle import I_THROTTLE, R_THROTTLE_K
from oncallsim.model.request.world import World

__all__ = [
    "DISCIPLINES",
    "LIMITERS",
    "configure_world",
    "retry_settings",
    "set_balancer",
    "set_resilience",
    "set_retries",
    "world_settings",
]


def world_settings(world: World) -> dict[str, Any]:
    """The operator's settings the world holds (``controls.WORLD_SETTINGS``)."""
    return {
        "balancer": BALANCERS[int(world.views.ints[I_BALANCER])],
        "self_protection": bool(world.registry.ints[I_SELF_PROTECTION]),
        "queue_discipline": DISCIPLINES[int(world.queues.ints[I_DISCIPLINE])],
        "queue_limit": int(world.queues.ints[I_QUEUE_LIMIT]),
        "deadline_propagation": bool(world.queues.ints[I_DEADLINES]),
        "limiter": LIMITERS[int(world.limiter.ints[I_LIMITER])],
        "client_throttle": bool(world.throttle.ints[I_THROTTLE]),
        **retry_settings(world),
    }


def retry_settings(world: World) -> dict[str, Any]:
    """The clients' retry settings the world holds (calls.py)."""
    return {
        "retries": int(world.calls.ints[I_RETRIES]),
        "retry_backoff": BACKOFFS[int(world.calls.ints[I_BACKOFF])],
        "retry_base_ms": round(float(world.calls.reals[R_RETRY_BASE]) * 1000.0),
        "retry_cap_ms": round(float(world.calls.reals[R_RETRY_CAP]) * 1000.0),
        "retry_budget": float(world.calls.reals[R_BUDGET]),
    }


def set_retries(
    world: World,
    retries: int = 0,
    backoff: str = "full-jitter",
    base_ms: float = 100.0,
    cap_ms: float = 20_000.0,
    budget: float = 0.0,
    burst: float | None = None,
) -> None:
    """The clients' retries (calls.py): extra attempts, their backoff, and the retry budget (tokens per call,
    0: none; ``burst``: tokens a client holds at most, its bucket refilled to it when given)."""
    if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= MAX_RETRIES:
        raise InvalidInput("retries", f"must be a whole number from 0 to {MAX_RETRIES}, got {retries!r}")
    if backoff not in BACKOFFS:
        raise InvalidInput("retry_backoff", f"must be one of {', '.join(BACKOFFS)}, got {backoff!r}")
    if not 1.0 <= base_ms <= 60_000.0:
        raise InvalidInput("retry_base_ms", f"must be from 1 to 60000 ms, got {base_ms!r}")
    if not 1.0 <= cap_ms <= 600_000.0:
        raise InvalidInput("retry_cap_ms", f"must be from 1 to 600000 ms, got {cap_ms!r}")
    if not 0.0 <= budget <= 1.0:
        raise InvalidInput("retry_budget", f"must be from 0 (none) to 1, got {budget!r}")
    world.calls.ints[I_RETRIES] = retries
    world.calls.ints[I_BACKOFF] = BACKOFFS.index(backoff)
    world.calls.reals[R_RETRY_BASE] = base_ms / 1000.0
    world.calls.reals[R_RETRY_CAP] = cap_ms / 1000.0
    world.calls.reals[R_BUDGET] = budget
    if burst is not None:
        world.calls.reals[R_BUDGET_BURST] = burst
        world.calls.tokens[:] = burst


def set_balancer(world: World, name: str, clients: int = 1) -> None:
    """Choose the world's balancer (``balancers.BALANCERS``) and how many clients balance on their own."""
    if name not in BALANCERS:
        raise InvalidInput("balancer", f"must be one of {', '.join(BALANCERS)}, got {name!r}")
    if isinstance(clients, bool) or not isinstance(clients, int) or not 1 <= clients <= MAX_CLIENTS:
        raise InvalidInput("clients", f"must be a whole number from 1 to {MAX_CLIENTS}, got {clients!r}")
    world.views.ints[I_BALANCER] = BALANCERS.index(name)
    world.views.ints[I_CLIENTS] = clients


DISCIPLINES = ("fifo", "codel", "adaptive-lifo")
LIMITERS = ("off", "bbr")


def set_resilience(
    world: World,
    discipline: str = "fifo",
    queue_limit: int = 0,
    deadlines: bool = False,
    target_ms: float = 5.0,
    interval_ms: float = 100.0,
    lifo_threshold: float = 0.8,
) -> None:
    """The server side's overload controls (disciplines.py): each queue's discipline and length limit (0: none),
    and whether requests carry their client's deadline."""
    if discipline not in DISCIPLINES:
        raise InvalidInput("queue_discipline", f"must be one of {', '.join(DISCIPLINES)}, got {discipline!r}")
    if isinstance(queue_limit, bool) or not isinstance(queue_limit, int) or not 0 <= queue_limit <= QUEUE_CAPACITY:
        raise InvalidInput(
            "queue_limit", f"must be a whole number from 0 (none) to {QUEUE_CAPACITY}, got {queue_limit!r}"
        )
    if discipline == "adaptive-lifo" and queue_limit == 0:
        raise InvalidInput(
            "queue_limit", "adaptive-lifo serves the newest first past a share of the queue's limit: set one"
        )
    for name, value, lo, hi in (("target_ms", target_ms, 0.1, 10_000.0), ("interval_ms", interval_ms, 1.0, 100_000.0)):
        if not lo <= value <= hi:
            raise InvalidInput(name, f"must be from {lo:g} to {hi:g}, got {value!r}")
    if not 0.0 < lifo_threshold <= 1.0:
        raise InvalidInput("lifo_threshold", f"must be above 0 and at most 1, got {lifo_threshold!r}")
    world.queues.ints[I_DISCIPLINE] = DISCIPLINES.index(discipline)
    world.queues.ints[I_QUEUE_LIMIT] = queue_limit
    world.queues.ints[I_DEADLINES] = 1 if deadlines else 0
    world.queues.reals[R_TARGET] = target_ms / 1000.0
    world.queues.reals[R_INTERVAL] = interval_ms / 1000.0
    world.queues.reals[R_LIFO_THRESHOLD] = lifo_threshold


def configure_world(world: World, controls: Controls, params: Params) -> None:
    """The request engine's own settings (``controls.WORLD_SETTINGS``) and mechanism parameters laid into its
    world: at a run's start, and when a zoom rebuilds a minute from its record."""
    set_balancer(world, controls.balancer, params.clients)
    world.registry.ints[I_SELF_PROTECTION] = 1 if controls.self_protection else 0
    if controls.queue_discipline == "adaptive-lifo" and controls.queue_limit == 0:
        raise InvalidInput("queue_limit", "adaptive-lifo needs a queue limit above 0")
    set_resilience(world, controls.queue_discipline, controls.queue_limit, controls.deadline_propagation)
    world.limiter.ints[I_LIMITER] = LIMITERS.index(controls.limiter)
    world.throttle.ints[I_THROTTLE] = 1 if controls.client_throttle else 0
    world.throttle.reals[R_THROTTLE_K] = params.throttle_k
    world.calls.reals[R_RETRY_BAD] = params.retry_bad_build
    set_retries(
        world, controls.retries, controls.retry_backoff, controls.retry_base_ms, controls.retry_cap_ms,
        controls.retry_budget, params.retry_budget_burst,
    )  # fmt: skip

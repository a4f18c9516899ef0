"""The overload mechanisms' checks (issue 11, point 8), each against its theory:

- retries multiply the attempts by Σ_{j=0..N} fʲ when each attempt fails with a fixed probability f (crashed
  instances behind a random balancer: f = crashed / instances), and a call fails with probability f^(N+1);
- a throttled client settles at sent ≈ K × accepted in front of a capacity-limited backend (reference §2.3);
- CoDel bounds the queue delay of what it serves under sustained overload of clients that do not slow down: its
  median settles at target + (λ − μ)/μ × interval (drops stop when a delay dips below the 5 ms target, and the
  queue regrows for a 100 ms interval before they resume); adaptive LIFO serves most requests within 2 × target;
  FIFO's delay grows past the timeout;
- the BBR limiter's in-flight cap is maxPass × minRT over its window (recomputed here from the window's counts);
- retries with FIFO queues are bistable exactly when λ(N + 1) > μ (reference §8): from a backlog longer than
  the timeout the fleet recovers when λ(N + 1) < μ and stays at zero goodput when λ(N + 1) > μ; from an empty
  queue it stays healthy in both cases.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from oncallsim.model.fields import EXT, REC
from oncallsim.model.kernel import from_python
from oncallsim.model.request import limiter
from oncallsim.model.request.drive import run_minute
from oncallsim.model.request.instances import REFUSE
from oncallsim.model.request.limiter import BUCKET_S, LIMITER_BUCKETS
from oncallsim.model.request.outcomes import M_ADMITTED, M_OK, M_WAIT_COUNT, M_WAIT_SUM
from oncallsim.model.request.physics import quantile
from oncallsim.model.request.queue_only import queue_only_world
from oncallsim.model.request.queues import enqueue
from oncallsim.model.request.settings import set_world
from oncallsim.model.request.world import World

__all__ = [
    "Amplification",
    "Bistability",
    "ResilienceCheck",
    "amplification_grid",
    "bistability_grid",
    "codel_delay",
    "limiter_cap_check",
    "resilience_checks",
    "throttle_ratio",
]


class ResilienceCheck(NamedTuple):
    what: str
    measured: str
    expected: str
    ok: bool


class Amplification(NamedTuple):
    failing: float  # f: the share of instances that refuse connections
    retries: int
    attempts_per_call: float
    theory: float  # Σ_{j=0..N} fʲ
    call_failure: float
    theory_failure: float  # f^(N+1)


class Bistability(NamedTuple):
    load: float  # λ/μ
    retries: int
    amplified: float  # λ(N + 1)/μ: above 1, the theory says the backlog never drains
    from_backlog_goodput: float  # goodput/λ in the last minute, starting from a backlog past the timeout
    from_empty_goodput: float  # … starting from an empty queue

    @property
    def ok(self) -> bool:
        stuck = self.from_backlog_goodput < 0.1
        recovered = self.from_backlog_goodput > 0.9
        healthy = self.from_empty_goodput > 0.9
        return healthy and (stuck if self.amplified > 1.0 else recovered)


def _run(
    servers: int,
    wpi: int,
    lam: float,
    service_s: float,
    minutes: int,
    seed: int,
    setup: Callable[[World], None],
    timeout_s: float = 2.0,
) -> tuple[World, list[tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]]]:
    """Queue-only minutes (a Poisson stream of ``lam``, exponential service): each minute's (record, extras,
    measures), after ``setup`` arranged the world."""
    p, world, st = queue_only_world(servers, service_s, seed, wpi, timeout_s)
    setup(world)
    out = []
    for t in range(minutes):
        minute = run_minute(p, world, st, t, poisson_rate=lam)
        world = minute.world
        out.append((minute.record, minute.extras, world.meter.measures.copy()))
    return world, out


def amplification_grid(quick: bool = False, seed: int = 3) -> list[Amplification]:
    """Attempts per call and calls failed, with ``crashed`` of 10 instances refusing, retries at once."""
    points = []
    for crashed in (3, 5):
        for retries in (1, 3) if quick else (0, 1, 2, 3):

            def setup(w: World, crashed: int = crashed, retries: int = retries) -> None:
                set_world(w, balancer="random", retries=retries, retry_backoff="none")
                w.fleet.health[:crashed] = REFUSE

            _, minutes = _run(10 * 4, 4, 200.0, 0.05, 3 if quick else 6, seed, setup)
            admitted = sum(m[M_ADMITTED] for _, _, m in minutes)
            attempts = sum(e[EXT.attempts_per_s] * 60.0 for _, e, _ in minutes)
            failed = sum(r[REC.error_rate] * m[M_ADMITTED] for r, _, m in minutes)
            f = crashed / 10
            points.append(
                Amplification(
                    f,
                    retries,
                    attempts / admitted,
                    sum(f**j for j in range(retries + 1)),
                    failed / admitted,
                    f ** (retries + 1),
                )
            )
    return points


def throttle_ratio(throttle: bool, seed: int = 4) -> float:
    """sent / accepted of clients offered ~2.5× what a fleet of 4 × 4 workers serves (queues of 2, the excess
    answered 503 at once): K = 2 with adaptive throttling, everything offered without."""
    from oncallsim import Simulation

    sim = Simulation(
        "free-play",
        seed=seed,
        minutes=8,
        engine="request",
        overrides={
            "workers_per_instance": 4,
            "max_fleet": 8,
            "hot_objects": 2000.0,
            "base_requests_per_s": 500.0,
            "floor": 4,
            "autoscaler": False,
            "balancer": "round-robin",
            "queue_limit": 2,
            "breaker": "sre" if throttle else "none",
        },
    )
    records = sim.run()[3:]
    sent = sum(r.admitted_per_s - r.extras["throttled_per_s"] for r in records)  # type: ignore[index]
    accepted = sum(r.admitted_per_s * (1 - r.error_rate) for r in records)
    return sent / accepted


def codel_delay(discipline: str, seed: int = 5) -> tuple[float, float]:
    """(mean, median) queue delay (ms) in the third minute of the requests served by 4 instances × 4 workers
    offered 1.5× their capacity (adaptive LIFO: with a queue limit of 100)."""

    def setup(w: World) -> None:
        limit = 100 if discipline == "adaptive-lifo" else 0
        set_world(w, balancer="round-robin", queue_discipline=discipline, queue_limit=limit)

    world, minutes = _run(16, 4, 1.5 * 16 / 0.05, 0.05, 3, seed, setup)
    _, _, m = minutes[-1]
    median = float(quantile(world.meter.wait_hist, 0.5, 2.0) * 1000.0)
    return float(m[M_WAIT_SUM] / m[M_WAIT_COUNT] * 1000.0), median


def limiter_cap_check(seed: int = 6) -> tuple[int, int]:
    """(the limiter's cap, maxPass × minRT recomputed from its window with numpy: the 99 buckets before the current
    one, as aegis's reduce reads them) for an instance offered twice what it serves, at the end of its second
    minute."""

    def setup(w: World) -> None:
        set_world(w, balancer="round-robin", limiter="bbr")

    world, _ = _run(4, 4, 2.0 * 4 / 0.05, 0.05, 2, seed, setup)
    x = 120.0
    current = int(x / BUCKET_S)
    stamps = world.limiter.lim_stamp[0]
    valid = (stamps >= 0) & (stamps < current) & (stamps > current - LIMITER_BUCKETS)
    passes = world.limiter.lim_pass[0][valid]
    rts = world.limiter.lim_rt[0][valid]
    max_pass = int(passes.max())
    min_rt = max(1.0, float(np.ceil(rts[passes > 0] / passes[passes > 0]).min()))
    return int(from_python(limiter.cap)(world.limiter, 0, x)), math.floor(max_pass * min_rt / BUCKET_S / 1000.0)


def _goodput_after(load: float, retries: int, backlog: bool, seed: int) -> float:
    """goodput / λ in the fifth minute of 10 instances × 4 workers (μ = 400/s), retries at once, FIFO, a 2 s
    timeout; ``backlog``: the queue holds 3 timeouts' worth of work at the start."""
    mu = 400.0
    lam = load * mu

    def setup(w: World) -> None:
        set_world(w, retries=retries, retry_backoff="none")
        if backlog:
            for n in range(int(3 * 2.0 * mu)):
                from_python(enqueue)(w.queues, w.queues.qs.shape[1] // 2 - 1, -1e-3 * n, 0, -1, -1, -1)

    _, minutes = _run(40, 4, lam, 0.1, 5, seed, setup)
    _, _, m = minutes[-1]
    return float(m[M_OK] / 60.0 / lam)


def bistability_grid(quick: bool = False, seed: int = 7) -> list[Bistability]:
    """The reference's condition on both sides: (λ/μ, N) with λ(N + 1)/μ from 0.8 to 1.6."""
    grid = ((0.4, 1), (0.4, 2), (0.3, 3)) if quick else ((0.4, 1), (0.2, 3), (0.45, 1), (0.4, 2), (0.3, 3), (0.6, 1))
    return [
        Bistability(
            load,
            n,
            load * (n + 1),
            _goodput_after(load, n, True, seed),
            _goodput_after(load, n, False, seed),
        )
        for load, n in grid
    ]


def resilience_checks(quick: bool = False) -> tuple[list[Amplification], list[Bistability], list[ResilienceCheck]]:
    """Everything ``oncallsim validate`` reports for the overload mechanisms."""
    amplification = amplification_grid(quick)
    bistability = bistability_grid(quick)
    k_ratio = throttle_ratio(True)
    free_ratio = throttle_ratio(False)
    codel, lifo, fifo = codel_delay("codel"), codel_delay("adaptive-lifo"), codel_delay("fifo")
    limiter, recomputed = limiter_cap_check()
    checks = [
        ResilienceCheck(
            "adaptive throttling, K = 2, backend at capacity",
            f"sent/accepted {k_ratio:.2f} (without: {free_ratio:.2f})",
            "≈ K = 2 (within 8 %)",
            abs(k_ratio - 2.0) <= 0.16 and free_ratio > 2.3,
        ),
        ResilienceCheck(
            "CoDel, 1.5× overload of clients that do not slow down",
            f"median queue delay {codel[1]:.1f} ms, mean {codel[0]:.1f} ms (FIFO: mean {fifo[0]:.0f} ms)",
            "target + (λ − μ)/μ × interval = 5 + 0.5 × 100 = 55 ms (within 25 %): drops stop once a delay dips "
            "below the target and the queue regrows for an interval; FIFO far past the timeout",
            abs(codel[1] - 55.0) <= 0.25 * 55.0 and fifo[0] > 2000.0,
        ),
        ResilienceCheck(
            "adaptive LIFO with CoDel, limit 100, 1.5× overload",
            f"median queue delay {lifo[1]:.1f} ms, mean {lifo[0]:.1f} ms",
            "median at most 2 × target (10 ms): newest first; the stale wait, or are dropped when overloaded",
            lifo[1] <= 10.0,
        ),
        ResilienceCheck(
            "BBR limiter's cap, instance at 2× its capacity",
            f"{limiter} requests",
            f"maxPass × minRT = {recomputed}",
            limiter == recomputed,
        ),
    ]
    return amplification, bistability, checks

"""The retrying server's Markov chain (model/retry_chain.py) against the request engine's queue-only mode
(issue 26; docs/validation.md, "The cliff's chain against the engine").

The same server on both: one instance of 4 workers, exponential service of mean 50 ms (cμ = 80/s), a pooled FIFO
queue without a limit, a 2 s timeout, retries at once. The engine first fills its queue: a minute at cμ + 1000/60
arrivals per second with retries off (those requests have no client waiting to retry: they are only work), then
λ per second with N retries. The drain time is the first second at which its queue is empty (the engine counts
its queue once a second); the chain's is its expected hitting time of n ≤ c (nobody waiting) from the state the
engine started from, (n₀, 0), plus half a second for that count. Each seed is a sample; the engine's mean has a
95 % interval of ±1.96 sd/√seeds.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from oncallsim.model.request.drive import run_minute
from oncallsim.model.request.outcomes import S_IN_FLIGHT, S_QUEUE
from oncallsim.model.request.queue_only import queue_only_world
from oncallsim.model.request.settings import set_world
from oncallsim.model.retry_chain import Grid, RetryServer, doom_probability, generator, hitting_times, relaxation
from oncallsim.verify.queue import Estimate

__all__ = ["DRAIN", "DrainPoint", "ShapeRow", "drain_grid", "shape_rows"]


class DrainSetup(NamedTuple):
    workers: int
    service_s: float
    timeout_s: float
    backlog: int  # requests added to the queue by the filling minute (about)
    window_min: int  # minutes the engine is watched for its drain


DRAIN = DrainSetup(workers=4, service_s=0.05, timeout_s=2.0, backlog=1000, window_min=10)
POINTS = ((24.0, 0), (16.0, 1), (24.0, 1), (16.0, 2), (20.0, 2), (16.0, 3), (12.0, 5), (24.0, 3))
QUICK_POINTS = ((24.0, 0), (16.0, 2), (24.0, 3))


class DrainPoint(NamedTuple):
    arrivals_per_s: float  # λ
    retries: int  # N
    amplified: float  # λ(N + 1)/cμ: above 1 the bad mode never drains (the fluid limit)
    seeds: int
    backlog: int  # the requests the filling minute added (about)
    start: float  # the mean n₀ the engine's runs started from
    engine_s: Estimate  # the drain time over the seeds that drained within the window
    undrained: int  # seeds whose queue had not emptied at the window's end
    fixed_s: float  # the chain with the fixed timeout (P(W + S > T) at joining)
    exponential_s: float  # the chain with an exponential timeout of mean T
    collapse_s: float  # the fixed chain: mean time from an empty server to one where every attempt times out
    relaxation_s: float  # the fixed chain's 1/|λ₂| (on states up to 3T of work in the queue)

    @property
    def agrees(self) -> bool:
        """The fixed chain within the engine's sampling error (both never draining counts as agreeing)."""
        if self.undrained == self.seeds:
            return self.fixed_s > 60.0 * DRAIN.window_min
        return self.undrained == 0 and self.engine_s.covers(self.fixed_s)


def _engine_drain(lam: float, retries: int, seed: int, backlog: int) -> tuple[float, float | None]:
    """(n₀, the drain time in seconds or None) of one seed."""
    c, s = DRAIN.workers, DRAIN.service_s
    p, world, st = queue_only_world(c, s, seed, c, DRAIN.timeout_s)
    set_world(world, retries=0, retry_backoff="none")
    world = run_minute(p, world, st, 0, poisson_rate=c / s + backlog / 60.0).world
    start = float(world.meter.seconds[S_QUEUE, 59] + world.meter.seconds[S_IN_FLIGHT, 59])
    set_world(world, retries=retries)
    for t in range(1, DRAIN.window_min + 1):
        world = run_minute(p, world, st, t, poisson_rate=lam).world
        empty = np.nonzero(world.meter.seconds[S_QUEUE] == 0)[0]
        if len(empty):
            return start, 60.0 * (t - 1) + float(empty[0]) + 1.0
    return start, None


def _chain_drains(server: RetryServer, starts: list[float]) -> list[float]:
    """The chain's mean drain time from each (n₀, 0), on unit steps, plus the half second of the count."""
    grid = Grid(math.ceil(1.25 * max(starts)) + 50, _orbit_room(server))
    (drain,) = hitting_times(generator(server, grid), grid.queue_of_states() <= server.workers)
    return [float(drain[grid.index(n, 0)]) + 0.5 for n in starts]


def _orbit_room(server: RetryServer) -> int:
    """Orbit levels past the bad mode's λN·D (where it settles when every attempt times out)."""
    return max(8, math.ceil(1.6 * server.arrivals_per_s * server.retries * server.retry_delay_s) + 30)


def _collapse_and_relaxation(server: RetryServer) -> tuple[float, float]:
    """(the mean time from an empty server to one where 99 % of attempts time out, 1/|λ₂|), on unit steps up to
    3T of work in the queue: where the bad mode lives when it does."""
    grid = Grid(server.workers + math.ceil(3 * server.capacity_per_s * server.timeout_s), _orbit_room(server))
    q = generator(server, grid)
    doomed = np.repeat(doom_probability(server, grid.queue_levels) >= 0.99, grid.shape[1])
    return float(hitting_times(q, doomed)[0][grid.index(0, 0)]), relaxation(q).relaxation_s


def drain_grid(quick: bool = False, seeds: int | None = None) -> list[DrainPoint]:
    """Every point of ``POINTS`` (``QUICK_POINTS``), 40 seeds each (10 quick), on the engine and both chains."""
    count = seeds or (10 if quick else 40)
    backlog = DRAIN.backlog
    out = []
    for lam, retries in QUICK_POINTS if quick else POINTS:
        runs = [_engine_drain(lam, retries, seed, backlog) for seed in range(count)]
        starts = [r[0] for r in runs]
        drained = np.array([r[1] for r in runs if r[1] is not None])
        mean = float(drained.mean()) if len(drained) else math.nan
        half = 1.96 * float(drained.std(ddof=1)) / math.sqrt(len(drained)) if len(drained) > 1 else math.nan
        chains = {}
        for shape in ("fixed", "exponential"):
            server = RetryServer(
                lam, DRAIN.workers, DRAIN.service_s, DRAIN.timeout_s, retries=retries, timeout_shape=shape
            )
            chains[shape] = _chain_drains(server, starts)
        collapse, relax = _collapse_and_relaxation(
            RetryServer(lam, DRAIN.workers, DRAIN.service_s, DRAIN.timeout_s, retries=retries)
        )
        capacity = DRAIN.workers / DRAIN.service_s
        out.append(
            DrainPoint(
                lam,
                retries,
                lam * (retries + 1) / capacity,
                count,
                backlog,
                float(np.mean(starts)),
                Estimate(mean, half),
                count - len(drained),
                _mean(chains["fixed"]),
                _mean(chains["exponential"]),
                collapse,
                relax,
            )
        )
    return out


def _mean(values: list[float]) -> float:
    return math.inf if any(math.isinf(v) for v in values) else float(np.mean(values))


class ShapeRow(NamedTuple):
    """An attempt's chance to time out by how long it waits, under a fixed and an exponential timeout."""

    waits_for: str
    queue: int
    fixed: float
    exponential: float


def shape_rows() -> list[ShapeRow]:
    """p(n) of the drain check's server at a free worker, at a wait of about T/2, T, 2T and 3T."""
    c, s, t = DRAIN.workers, DRAIN.service_s, DRAIN.timeout_s
    per_s = c / s
    rows = [("a free worker", c - 1)] + [
        (f"≈ {k:g} × T in the queue", c - 1 + round(k * per_s * t)) for k in (0.5, 1.0, 2.0, 3.0)
    ]
    out = []
    for label, n in rows:
        p = [
            float(doom_probability(RetryServer(1.0, c, s, t, timeout_shape=shape), np.array([float(n)]))[0])
            for shape in ("fixed", "exponential")
        ]
        out.append(ShapeRow(label, n, p[0], p[1]))
    return out

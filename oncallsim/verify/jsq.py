"""A finite-N JSQ(2) simulated independently of the engine: the oracle of the p2c check (issue 23, item 10).

The supermarket model's limit (``fleet.supermarket_time``) holds as the servers grow without bound; a fleet has
ten of them. This module simulates the finite system directly, in plain Python and nothing of the engine: N
single-worker FIFO servers, exponential service of mean S, a Poisson stream split uniformly among ``clients``
that each choose a server on their own:

- ``jsq2``: two distinct servers at random, the one with fewer requests *of this client* outstanding there
  (ties at random). With one client that is the queue length itself: Mitzenmacher's JSQ(2). With many, each
  client sees only its own share of every queue, which is all a client-side balancer can count (Kratos's p2c
  counts its in-flight requests per node, and corrects with the CPU and latency the node reports);
- ``jsq2-global``: the same two choices compared by the servers' true queue lengths whatever the client;
- ``random``: a server uniformly (each server is M/M/1);
- ``round-robin``: each client steps through the servers in turn (a server's stream is the superposition of the
  clients' Erlang-N streams, smoother than Poisson with few clients).

A FIFO server needs no event list: a request starts at max(arrival, the moment the first of its server's
``workers`` frees), in arrival order, and departs its service later; a server's queue at an arrival is its
departures still ahead. Each server keeps
its pending departures with the client of each, so a client's outstanding count is exact.
"""

from __future__ import annotations

import heapq
import math
import random
from typing import NamedTuple

import numpy as np

__all__ = ["POLICIES", "Response", "simulate"]

POLICIES = ("jsq2", "jsq2-global", "random", "round-robin")


class Response(NamedTuple):
    """Response times (wait + service) of the requests after the warm-up: their mean and 99th percentile, each
    with the half-width of its 95 % batch-means interval."""

    mean_s: float
    mean_half: float
    p99_s: float
    p99_half: float
    requests: int


def _batches(times: np.ndarray, batches: int = 20) -> Response:
    parts = np.array_split(times, batches)
    means = np.array([p.mean() for p in parts])
    p99s = np.array([np.quantile(p, 0.99) for p in parts])
    t = 2.093  # t(0.975, 19)
    return Response(
        float(times.mean()),
        t * float(means.std(ddof=1)) / math.sqrt(batches),
        float(np.quantile(times, 0.99)),
        t * float(p99s.std(ddof=1)) / math.sqrt(batches),
        len(times),
    )


def simulate(
    policy: str,
    servers: int,
    utilization: float,
    service_s: float,
    requests: int,
    clients: int = 1,
    seed: int = 0,
    warmup: int | None = None,
    workers: int = 1,
) -> Response:
    """``requests`` arrivals at λ = ρ·N·workers/S (after ``warmup`` more, by default a tenth) under ``policy``;
    each server has ``workers`` workers and one FIFO queue."""
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {', '.join(POLICIES)}, got {policy!r}")
    if servers < 2 or clients < 1 or not 0.0 < utilization < 1.0:
        raise ValueError("needs 2 servers or more, a client or more and a utilization in (0, 1)")
    rng = random.Random(seed)
    lam = utilization * servers * workers / service_s
    warm = requests // 10 if warmup is None else warmup
    pending: list[list[tuple[float, int]]] = [[] for _ in range(servers)]  # heaps of (departure, client)
    free = [[0.0] * workers for _ in range(servers)]  # each server's workers: when each is next free
    out = [[0] * servers for _ in range(clients)]  # out[client][server]: that client's requests there
    turn = [rng.randrange(servers) for _ in range(clients)]  # each client's round-robin position
    times = np.empty(requests)
    now = 0.0
    for n in range(warm + requests):
        now += rng.expovariate(lam)
        for i in range(servers):  # the departures up to now leave their queues
            q = pending[i]
            while q and q[0][0] <= now:
                out[heapq.heappop(q)[1]][i] -= 1
        c = rng.randrange(clients) if clients > 1 else 0
        if policy == "random":
            i = rng.randrange(servers)
        elif policy == "round-robin":
            i = turn[c] = (turn[c] + 1) % servers
        else:
            a = rng.randrange(servers)
            b = rng.randrange(servers - 1)
            b += b >= a
            if policy == "jsq2":
                la, lb = out[c][a], out[c][b]
            else:
                la, lb = len(pending[a]), len(pending[b])
            i = a if la < lb or (la == lb and rng.random() < 0.5) else b
        done = max(now, free[i][0]) + rng.expovariate(1.0 / service_s)
        heapq.heapreplace(free[i], done)
        heapq.heappush(pending[i], (done, c))
        out[c][i] += 1
        if n >= warm:
            times[n - warm] = done - now
    return _batches(times)

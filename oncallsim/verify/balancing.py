"""The p2c balancer against a finite-N JSQ(2) simulated independently (``verify/jsq.py``), with 1, 4, 16 and 64
clients, beside random and round robin (issue 23, item 10).

The engine runs in queue-only mode (Poisson arrivals, exponential service of 50 ms, N instances of W workers
each with its own FIFO queue); the oracle simulates the same system in plain Python. Three claims per client
count, each with its tolerance:

- the engine's ``random`` and ``round-robin`` meet the oracle's (their mean response within 3 combined 95 %
  half-widths, or 3 %, whichever is wider): a check of the harness, since both are fully determined by the stream;
- the engine's ``p2c`` sits near JSQ(2) as a client can count it (its own in-flight requests per instance): its
  mean and p99 response within ``TOLERANCE`` of the oracle's;
- it beats random and round robin by the ratios the oracle's JSQ(2) predicts (random ∕ p2c and round robin ∕
  p2c, each within ``TOLERANCE`` of the oracle's random ∕ JSQ(2) and round robin ∕ JSQ(2)).

Kratos's p2c does not compare queue lengths: its load multiplies the in-flight count by the CPU the instance
last reported (a 500 ms reading, the same for every client) and the square root of a latency EWMA. Where each
client's own in-flight counts say little — many clients, few instances — the shared CPU reading decides, and
the clients move together.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from oncallsim.model.request.queue_only import simulate_mmn
from oncallsim.verify.jsq import Response, simulate

__all__ = ["CLIENTS", "TOLERANCE", "BalancePoint", "Setup", "balance_grid", "balance_point"]

SERVICE_S = 0.05
CLIENTS = (1, 4, 16, 64)
TOLERANCE = 0.10  # p2c against JSQ(2): 10 % of the mean, of the p99 and of each ratio
BASELINE_FLOOR = 0.03  # random and round robin against the oracle: at least 3 % (a 10-minute run's own spread)


class Setup(NamedTuple):
    instances: int
    workers: int
    utilization: float


SETUPS = (Setup(10, 4, 0.8),)
SETUPS_FULL = (Setup(10, 4, 0.8), Setup(10, 1, 0.9))


class BalancePoint(NamedTuple):
    setup: Setup
    clients: int
    engine: dict[str, tuple[float, float, float]]  # balancer → (mean s, its 95 % half-width, p99 s)
    oracle: dict[str, Response]  # policy → the independent simulation's response
    tolerance: float = TOLERANCE

    def ratios(self) -> dict[str, tuple[float, float]]:
        """random ∕ p2c and round robin ∕ p2c: (the engine's, JSQ(2)'s in the oracle)."""
        p2c, jsq = self.engine["p2c"][0], self.oracle["jsq2"].mean_s
        return {b: (self.engine[b][0] / p2c, self.oracle[b].mean_s / jsq) for b in ("random", "round-robin")}

    def baseline_ok(self, balancer: str) -> bool:
        mean, half, _ = self.engine[balancer]
        o = self.oracle[balancer]
        allowed = max(3.0 * math.hypot(half, o.mean_half), BASELINE_FLOOR * o.mean_s)
        return abs(mean - o.mean_s) <= allowed

    @property
    def p2c_mean_gap(self) -> float:
        return self.engine["p2c"][0] / self.oracle["jsq2"].mean_s - 1.0

    @property
    def p2c_p99_gap(self) -> float:
        return self.engine["p2c"][2] / self.oracle["jsq2"].p99_s - 1.0

    @property
    def p2c_ok(self) -> bool:
        near = abs(self.p2c_mean_gap) <= self.tolerance and abs(self.p2c_p99_gap) <= self.tolerance
        return near and all(abs(e / o - 1.0) <= self.tolerance for e, o in self.ratios().values())


def _engine(setup: Setup, balancer: str, clients: int, minutes: int, seed: int) -> tuple[float, float, float]:
    servers = setup.instances * setup.workers
    lam = setup.utilization * servers / SERVICE_S
    run = simulate_mmn(
        servers, lam, SERVICE_S, minutes, seed, workers_per_instance=setup.workers, balancer=balancer, clients=clients
    )
    per_minute = run.per_minute[:, 2] / run.per_minute[:, 3] + SERVICE_S
    half = 1.96 * float(per_minute.std(ddof=1)) / math.sqrt(len(per_minute))
    return run.wait_sum_s / run.customers + SERVICE_S, half, run.response_quantile_s(0.99, 10.0)


def balance_point(
    setup: Setup, clients: int, quick: bool = True, seed: int = 11, oracle_utilization: float | None = None
) -> BalancePoint:
    """One client count: the engine's three balancers and the oracle's JSQ(2), random and round robin.
    ``oracle_utilization``: the load the oracle is told (another than the engine's only to show the check fails)."""
    minutes, requests = (5, 100_000) if quick else (20, 400_000)
    rho = setup.utilization if oracle_utilization is None else oracle_utilization
    engine = {b: _engine(setup, b, clients, minutes, seed + clients) for b in ("p2c", "random", "round-robin")}
    oracle = {
        policy: simulate(
            policy, setup.instances, rho, SERVICE_S, requests, clients, seed + clients, workers=setup.workers
        )
        for policy in ("jsq2", "random", "round-robin")
    }
    return BalancePoint(setup, clients, engine, oracle)


def balance_grid(quick: bool) -> list[BalancePoint]:
    return [balance_point(s, c, quick) for s in (SETUPS if quick else SETUPS_FULL) for c in CLIENTS]

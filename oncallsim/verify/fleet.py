"""The fleet's checks (issue 10, point 7): balancers against queueing theory, discovery against its rules.

- With one worker per instance and exponential service, ``random`` splits a Poisson stream into independent
  M/M/1 queues (mean wait ρ·S/(1 − ρ)); ``pooled`` is M/M/N (Erlang C); ``p2c``'s mean time in system
  approaches the supermarket model's limit Σ_{i≥1} ρ^(2^i − 2) service times (Mitzenmacher 2001) as the
  instances grow.
- Discovery: an instance that stops renewing is evicted 90–150 s after its last renewal (30 s renewals, 60 s
  checks, 90 s limit), for every renewal phase; self-protection engages exactly when the last minute's
  renewals fall below 85 % of those expected.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from oncallsim.model.params import Params
from oncallsim.model.request.discovery import register_initial, registry_minute
from oncallsim.model.request.instances import OFFLINE
from oncallsim.model.request.queue_only import QueueRun, simulate_mmn
from oncallsim.model.request.world import new_world
from oncallsim.verify.oracles import mmn_mean_wait_s

__all__ = [
    "BalancerPoint",
    "DiscoveryCheck",
    "balancer_grid",
    "discovery_checks",
    "eviction_delays",
    "protection_engages",
    "supermarket_time",
]

SERVICE_S = 0.05
RHO = 0.8


class BalancerPoint(NamedTuple):
    balancer: str
    instances: int
    mean_time_s: tuple[float, float]  # mean time in system, ± 95 % batch-means half-width
    theory_s: float
    theory: str  # what the theory is

    @property
    def relative_gap(self) -> float:
        return abs(self.mean_time_s[0] - self.theory_s) / self.theory_s


class DiscoveryCheck(NamedTuple):
    what: str
    measured: str
    expected: str
    ok: bool


def supermarket_time(rho: float, d: int = 2) -> float:
    """Mean time in system, in service times, of JSQ(d) as servers → ∞: Σ_{i≥1} ρ^((dⁱ − d)/(d − 1))."""
    return float(sum(rho ** ((d**i - d) / (d - 1)) for i in range(1, 60)))


def _mean_time(run: QueueRun) -> tuple[float, float]:
    waits = run.per_minute[:, 2] / run.per_minute[:, 3] + SERVICE_S
    half = 1.96 * float(waits.std(ddof=1)) / math.sqrt(len(waits))
    return float(waits.mean()), half


def balancer_grid(quick: bool, seed: int = 1) -> list[BalancerPoint]:
    minutes = 10 if quick else 30
    points = []
    for balancer, instances in (("random", 40), ("pooled", 40), ("p2c", 10), ("p2c", 40), ("p2c", 80)):
        if quick and instances == 80:
            continue
        lam = RHO * instances / SERVICE_S
        run = simulate_mmn(instances, lam, SERVICE_S, minutes, seed, workers_per_instance=1, balancer=balancer)
        if balancer == "random":
            theory, what = SERVICE_S / (1 - RHO), "M/M/1: S/(1 − ρ)"
        elif balancer == "pooled":
            theory, what = mmn_mean_wait_s(instances, lam, SERVICE_S) + SERVICE_S, "M/M/N: Erlang C wait + S"
        else:
            theory, what = supermarket_time(RHO) * SERVICE_S, "supermarket limit Σ ρ^(2^i − 2) · S"
        points.append(BalancerPoint(balancer, instances, _mean_time(run), theory, what))
    return points


def eviction_delays(instances: int = 12) -> list[float]:
    """For each renewal phase: seconds from an instance's last renewal to its eviction (it stops at 60 s)."""
    delays = []
    for dead in range(instances):
        params = Params(max_fleet=instances)
        world = new_world(params, 0)
        register_initial(world, instances, params)
        registry_minute(world, 0, instances, params, True)
        world.fleet.health[dead] = OFFLINE
        for t in range(1, 6):
            if any(e.code == "instance_evicted" for e in registry_minute(world, t, instances, params, True)):
                break
        since = float(world.registry.reg_since[dead])
        last = since + math.floor((60.0 - since) / params.renew_interval_s) * params.renew_interval_s
        delays.append(float(world.registry.evict_at[dead]) - last)
    return delays


def protection_engages(instances: int, dead: int) -> bool:
    """Whether self-protection engages when ``dead`` of ``instances`` stop renewing at once."""
    params = Params(max_fleet=instances)
    world = new_world(params, 0)
    register_initial(world, instances, params)
    registry_minute(world, 0, instances, params, True)
    world.fleet.health[:dead] = OFFLINE
    codes = [e.code for t in range(1, 4) for e in registry_minute(world, t, instances, params, True)]
    return "self_protection_engaged" in codes


def discovery_checks() -> list[DiscoveryCheck]:
    delays = np.array(eviction_delays())
    checks = [
        DiscoveryCheck(
            "eviction after the last renewal (12 renewal phases)",
            f"{delays.min():.0f}–{delays.max():.0f} s",
            "in (90, 150] s",
            bool((delays > 90).all() and (delays <= 150).all()),
        )
    ]
    for instances in (20, 40):
        # 85 % of the expected renewals: the largest number of dead that leaves at least that many renewing
        boundary = math.floor(instances * (1 - 0.85) + 1e-9)
        engaged = [protection_engages(instances, d) for d in (boundary, boundary + 1)]
        checks.append(
            DiscoveryCheck(
                f"self-protection, {instances} instances",
                f"{boundary} dead: {'engaged' if engaged[0] else 'not engaged'}; "
                f"{boundary + 1} dead: {'engaged' if engaged[1] else 'not engaged'}",
                "engaged exactly below 85 % of the expected renewals",
                engaged == [False, True],
            )
        )
    return checks

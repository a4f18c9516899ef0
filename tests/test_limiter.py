"""The BBR-like concurrency limiter (issue 11, item 3; reference §3.1): its cap is maxPass × minRT, it sheds only
when the CPU is hot, a database-bound instance does not trip it, and it turns a flash crowd's collapse into
serving at capacity."""

from __future__ import annotations

import math

import numpy as np
import pytest

from oncallsim import Simulation
from oncallsim.model import Params
from oncallsim.model.kernel import from_python
from oncallsim.model.request import cpu, limiter
from oncallsim.model.request.cpu import R_NEXT_TICK
from oncallsim.model.request.limiter import BUCKET_S
from oncallsim.model.request.world import new_world

# steps of the engine, driven from Python here
cap, completed, limited, sample = (
    from_python(f) for f in (limiter.cap, limiter.completed, limiter.limited, cpu.sample)
)


def _world() -> object:
    return new_world(Params(max_fleet=2, hot_objects=10.0), 0)


@pytest.mark.parametrize(
    ("passes", "rt_ms"), [((5, 12, 7), (40.0, 25.0, 90.0)), ((1,), (3.2,)), ((30, 30), (8.0, 2.5))]
)
def test_the_cap_is_max_pass_times_min_rt(passes: tuple[int, ...], rt_ms: tuple[float, ...]) -> None:
    w = _world()
    for bucket, (n, rt) in enumerate(zip(passes, rt_ms, strict=True)):
        for _ in range(n):
            completed(w.limiter, 0, (bucket + 0.5) * BUCKET_S, rt / 1000.0, rt / 1000.0)
    now = (len(passes) + 0.5) * BUCKET_S  # the current bucket is left out
    min_rt = max(1, min(math.ceil(r) for r in rt_ms))  # each bucket's average, in whole ms
    assert cap(w.limiter, 0, now) == math.floor(max(passes) * min_rt * 10 / 1000)
    # no completion yet: aegis's cap is 0 (its minRT of an empty window wraps and is taken as 1 ms, maxPass is 1)
    assert cap(w.limiter, 1, now) == 0


def test_an_empty_window_drops_above_one_in_flight_as_aegis_and_never_under_version_1() -> None:
    w = _world()
    w.cpu.ema[0] = 900.0
    w.workers.inst_busy[0] = 1
    assert not limited(w.limiter, w.cpu, w.workers, w.queues, 0, 1.0)
    w.workers.inst_busy[0] = 2
    assert limited(w.limiter, w.cpu, w.workers, w.queues, 0, 1.0)
    old = new_world(Params(max_fleet=2, hot_objects=10.0), 0, revision=1)
    old.cpu.ema[0] = 900.0
    old.workers.inst_busy[0] = 2
    assert cap(old.limiter, 0, 1.0) == -1 and not limited(old.limiter, old.cpu, old.workers, old.queues, 0, 1.0)


def _gcra(arrivals: list[float], rate: float, burst: int) -> list[bool]:
    """The same contract written as ATM's generic cell rate algorithm (virtual scheduling, ITU-T I.371): a request
    at t conforms unless t < TAT − (burst − 1)/rate; a conforming one moves TAT to max(t, TAT) + 1/rate."""
    tat, tau, admitted = -math.inf, (burst - 1) / rate, []
    for t in arrivals:
        ok = tat == -math.inf or t >= tat - tau - 1e-12
        if ok:
            tat = max(t, tat) + 1.0 / rate
        admitted.append(ok)
    return admitted


@pytest.mark.parametrize(("rate", "burst", "seed"), [(50.0, 1, 1), (50.0, 10, 2), (200.0, 40, 3), (5.0, 3, 4)])
def test_the_token_bucket_admits_what_the_cell_rate_algorithm_admits(rate: float, burst: int, seed: int) -> None:
    w = _world()
    w.limiter.ints[limiter.I_LIMITER] = limiter.TOKEN_BUCKET
    w.limiter.reals[limiter.R_BUCKET_RATE] = rate
    w.limiter.reals[limiter.R_BUCKET_BURST] = burst
    rng = np.random.default_rng(seed)  # bursts and lulls: Poisson at twice the rate, then at a fifth of it
    gaps = np.concatenate([rng.exponential(0.5 / rate, 400), rng.exponential(5.0 / rate, 100)] * 2)
    arrivals = [float(t) for t in np.cumsum(gaps) + 1.0]
    mine = [not limited(w.limiter, w.cpu, w.workers, w.queues, 0, x) for x in arrivals]
    assert mine == _gcra(arrivals, rate, burst)
    assert 0 < sum(mine) < len(mine)


def test_a_token_bucket_tuned_for_yesterdays_fleet_turns_away_what_a_bigger_one_could_serve() -> None:
    """Rate × instances is all it admits, whatever the fleet could do: 20 instances at 60 req/s each admit about
    1,200 of 2,000 req/s while BBR on the same fleet admits nearly all of them."""

    def served(extra: dict[str, object]) -> tuple[float, float]:
        overrides = {"base_requests_per_s": 2000.0, "diurnal_amplitude": 0.0, "floor": 20, "balancer": "p2c", **extra}
        sim = Simulation("free-play", seed=4, minutes=4, engine="request", overrides=overrides)
        records = sim.run()[1:]
        return (
            float(np.mean([r.extras["limited_per_s"] for r in records])),  # type: ignore[index]
            float(np.mean([r.requests_per_s * (1 - r.error_rate) for r in records])),
        )

    limited_bucket, good_bucket = served({"limiter": "token-bucket", "bucket_rate_per_s": 60, "bucket_burst": 60})
    limited_bbr, good_bbr = served({"limiter": "bbr"})
    assert limited_bucket == pytest.approx(2000.0 - 20 * 60, rel=0.1)
    assert good_bucket < 0.65 * 2000.0 and limited_bbr == 0.0 and good_bbr > 0.95 * 2000.0


def test_it_sheds_only_while_the_cpu_is_hot_then_cools_down_for_a_second() -> None:
    w = _world()
    for b in range(20):  # 10 completions per 100 ms at 100 ms: cap = 10 × 100 × 10 / 1000 = 10
        for _ in range(10):
            completed(w.limiter, 0, (b + 0.5) * BUCKET_S, 0.1, 0.1)
    w.workers.inst_busy[0] = 16  # in flight: above the cap
    assert not limited(w.limiter, w.cpu, w.workers, w.queues, 0, 2.05)  # CPU EMA 0: no drop
    for _ in range(60):  # a busy CPU sample every 500 ms: the EMA climbs past 800 ‰ after 32
        w.cpu.acc[0] = 1.0
        sample(w.cpu, w.cpu.reals[R_NEXT_TICK], 1, 1)
    assert w.cpu.ema[0] >= 800.0
    assert limited(w.limiter, w.cpu, w.workers, w.queues, 0, 2.05) and w.limiter.drop_at[0] == 2.05
    w.cpu.ema[0] = 100.0  # cooled: still limited for 1 s after the episode's first drop, then not
    assert limited(w.limiter, w.cpu, w.workers, w.queues, 0, 2.9)
    assert not limited(w.limiter, w.cpu, w.workers, w.queues, 0, 3.1) and w.limiter.drop_at[0] == -1.0


def test_a_database_bound_instance_does_not_trip_it() -> None:
    """Its workers mostly wait on the database: the CPU stays low whatever the load, so no 429."""
    sim = Simulation(
        "free-play",
        seed=2,
        minutes=6,
        engine="request",
        overrides={
            "balancer": "round-robin",
            "limiter": "bbr",
            "app_time_ms": 2.0,
            "feature_app_time_ms": 0.0,
            "ttl_s": 0.0,
            "db_capacity_qps": 2500.0,
            "workers_per_instance": 8,
            "hot_objects": 1000.0,
        },
    )
    records = sim.run()
    assert max(r.db_utilization for r in records) > 0.8 and max(r.utilization for r in records) > 0.5
    assert all(r.extras["limited_per_s"] == 0.0 for r in records)  # type: ignore[index]
    assert max(max(r.extras["instances"]["cpu_permille"]) for r in records) < 800  # type: ignore[index]


def test_on_a_flash_crowd_the_limiter_serves_what_fifo_loses() -> None:
    def goodput(limiter: str) -> float:
        sim = Simulation("flash-crowd", seed=5, minutes=45, overrides={"limiter": limiter})
        records = sim.run()
        surge = [r for r in records if r.requests_per_s > 2500][:8]
        return float(np.mean([r.requests_per_s * (1 - r.error_rate) for r in surge]))

    fifo, bbr = goodput("off"), goodput("bbr")
    assert fifo < 200 and bbr > 1000  # collapse without it; a fleet's worth of answers with it

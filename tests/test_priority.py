"""Request priority in the request engine's queues (issue 23, item 6): the low-priority share of the traffic is
the sheddable class, the rest critical; ``queue_priority`` = strict serves critical requests first and sheds
sheddable ones first.

The oracle for the waits is Cobham's formula for the non-preemptive priority M/M/c queue with one service rate
(Kleinrock, *Queueing Systems* II, §3.6): with class loads σ₁ (critical) and σ₂ = ρ (both) over c servers of
rate μ, W₀ = C(c, a)/(cμ) and the mean wait of class k is W₀ / ((1 − σₖ₋₁)(1 − σₖ)); Erlang's C comes from its
textbook sum in 60-digit arithmetic here (no code shared with the engine's queueing module).
"""

from __future__ import annotations

import math
from typing import Any

import mpmath
import numpy as np
import pytest

from oncallsim import Simulation
from oncallsim.model.controls import Controls
from oncallsim.model.errors import InvalidInput
from oncallsim.model.fields import ST, STATE_SCHEMA
from oncallsim.model.kernel import kernel_params
from oncallsim.model.params import Params
from oncallsim.model.request import outcomes as o
from oncallsim.model.request.drive import run_minute
from oncallsim.model.request.settings import set_world, world_settings
from oncallsim.model.request.world import new_world

SERVERS = 16
SERVICE_S = 0.05
MU = SERVERS / SERVICE_S  # 320 requests/s
LOW = 0.3  # the parameters' low-priority share (the seed page's 30 %)


def erlang_c(a: float, c: int) -> float:
    A = mpmath.mpf(a)
    terms = [A**k / mpmath.factorial(k) for k in range(c)]
    top = A**c / mpmath.factorial(c) * c / (c - A)
    return float(top / (mpmath.fsum(terms) + top))


def cobham(lam: float, low_share: float) -> tuple[float, float]:
    """Mean queue waits (s) of the critical and the sheddable class, strict non-preemptive priority."""
    rho = lam / MU
    sigma1 = (1 - low_share) * rho
    w0 = erlang_c(lam * SERVICE_S, SERVERS) / MU
    return w0 / (1 - sigma1), w0 / ((1 - sigma1) * (1 - rho))


def run(rho: float, minutes: int, seed: int = 5, timeout_s: float = 10.0, **settings: Any) -> list[dict[str, float]]:
    """Queue-only M/M/16 (one instance of 16 workers, exponential service of 50 ms), minute by minute after the
    first: each class's admitted requests, successes and queue waits."""
    params = Params(max_fleet=1, app_time_ms=SERVICE_S * 1000, timeout_s=timeout_s, hot_objects=1.0)
    assert params.low_priority_share == LOW
    p = kernel_params(params)
    world = new_world(params, seed)
    set_world(world, **settings)
    st = np.zeros(len(STATE_SCHEMA))
    st[ST.serving] = 1
    out = []
    for t in range(minutes + 1):
        world = run_minute(p, world, st, t, poisson_rate=rho * MU).world
        m = world.meter.measures
        if t:
            out.append(
                {
                    "admitted": m[o.M_ADMITTED] - m[o.M_LOW_ADMITTED],
                    "low_admitted": m[o.M_LOW_ADMITTED],
                    "ok": m[o.M_OK] - m[o.M_LOW_OK],
                    "low_ok": m[o.M_LOW_OK],
                    "wait_sum": m[o.M_WAIT_SUM] - m[o.M_LOW_WAIT_SUM],
                    "wait_count": m[o.M_WAIT_COUNT] - m[o.M_LOW_WAIT_COUNT],
                    "low_wait_sum": m[o.M_LOW_WAIT_SUM],
                    "low_wait_count": m[o.M_LOW_WAIT_COUNT],
                    "dropped": m[o.M_DROPPED],
                }
            )
    return out


def total(minutes: list[dict[str, float]], key: str) -> float:
    return sum(m[key] for m in minutes)


def test_strict_priority_waits_are_cobhams() -> None:
    """ρ = 0.85: the critical class waits W₀/(1 − σ₁), the sheddable one W₀/((1 − σ₁)(1 − ρ)); batch means over
    the minutes give the tolerance (3 standard errors and 5 %)."""
    rho = 0.85
    minutes = run(rho, 12, queue_priority="strict")
    want_high, want_low = cobham(rho * MU, LOW)
    for key, want in (("", want_high), ("low_", want_low)):
        per_minute = [m[f"{key}wait_sum"] / m[f"{key}wait_count"] for m in minutes]
        mean = total(minutes, f"{key}wait_sum") / total(minutes, f"{key}wait_count")
        error = np.std(per_minute, ddof=1) / math.sqrt(len(per_minute))
        assert abs(mean - want) <= 3 * error + 0.05 * want, (key, mean, want, error)
    # the sheddable share of what arrives is the parameters'
    share = total(minutes, "low_admitted") / (total(minutes, "low_admitted") + total(minutes, "admitted"))
    assert share == pytest.approx(LOW, abs=0.01)


def test_without_priority_both_classes_wait_alike() -> None:
    """The same point with ``none`` (pipeline mode draws the class; queue-only draws it under a priority
    only, so here every request is critical): the FCFS mean wait C/(cμ − λ) — Cobham's classes' weighted mean."""
    rho = 0.85
    minutes = run(rho, 12)
    assert total(minutes, "low_admitted") == 0
    want_high, want_low = cobham(rho * MU, LOW)
    fcfs = erlang_c(rho * MU * SERVICE_S, SERVERS) / (MU - rho * MU)
    assert (1 - LOW) * want_high + LOW * want_low == pytest.approx(fcfs, rel=1e-12)  # Kleinrock's conservation
    mean = total(minutes, "wait_sum") / total(minutes, "wait_count")
    assert mean == pytest.approx(fcfs, rel=0.15)


@pytest.mark.parametrize(
    "settings",
    [
        {"queue_discipline": "fifo", "queue_limit": 30},
        {"queue_discipline": "codel"},
        {"queue_discipline": "adaptive-lifo", "queue_limit": 200},
    ],
    ids=["full-queue", "codel", "adaptive-lifo"],
)
def test_under_overload_strict_priority_keeps_critical_goodput_and_sheds_the_sheddable(settings: Any) -> None:
    """ρ = 1.3, 70 % critical: the critical load is 0.91 of capacity. With strict priority nearly all of it is
    answered in time and the sheddable class takes the losses (it gets what capacity is left, about 0.09, and its
    FIFO line's waits are bounded by the limit): the fleet's goodput stays near capacity. (CoDel and adaptive LIFO
    judge each class's own waits against their 5 ms target: critical waits at 0.91 of 50 ms services pass it
    now and then, so a few critical requests are dropped too.) Without priority — one class here, queue-only
    draws no classes then — the losses fall on everything alike: well under 80 % answered."""
    strict = run(1.3, 2, timeout_s=2.0, queue_priority="strict", **settings)
    alike = run(1.3, 2, timeout_s=2.0, **settings)
    for m in strict:
        assert m["ok"] >= 0.9 * m["admitted"]  # critical: nine in ten answered, or more
        assert m["low_ok"] <= 0.45 * m["low_admitted"]  # sheddable: most of it shed
        assert m["ok"] + m["low_ok"] >= 0.95 * 60 * MU  # the fleet still answers near its capacity
        assert m["dropped"] >= 0.25 * m["low_admitted"]
    for m in alike:
        assert m["ok"] < 0.8 * m["admitted"] and m["ok"] >= 0.95 * 60 * MU


def test_a_retry_keeps_its_requests_class() -> None:
    """Retries of dropped requests wait in their class's line: every waiting attempt's class is its call's."""
    params = Params(max_fleet=2, app_time_ms=SERVICE_S * 1000, timeout_s=2.0, hot_objects=1.0)
    p = kernel_params(params)
    world = new_world(params, 3)
    set_world(
        world, balancer="p2c", queue_priority="strict", queue_limit=50, retries=3, retry_backoff="none"
    )  # fmt: skip
    st = np.zeros(len(STATE_SCHEMA))
    st[ST.serving] = 2
    world = run_minute(p, world, st, 0, poisson_rate=1.5 * 2 * MU).world
    assert world.meter.measures[o.M_RETRIES] > 1000
    q, calls = world.queues, world.calls
    half = q.qs.shape[1] // 2
    seen = {False: 0, True: 0}
    for column in range(q.qs.shape[1]):
        slot = q.qs[0, column]  # Q_HEAD
        while slot >= 0:
            call = q.s_call[slot]
            assert call >= 0 and q.s_low[slot] == calls.c_low[call] == (column >= half)
            seen[bool(q.s_low[slot])] += 1
            slot = q.s_next[slot]
    assert seen[False] > 0 and seen[True] > 0


def test_strict_priority_without_sheddable_traffic_changes_nothing() -> None:
    """In a full run (the pipeline draws every request's class) strict priority with no low-priority traffic
    plays bit for bit as no priority: the lines only part when there is a class to put behind."""
    records = {}
    for priority in ("none", "strict"):
        sim = Simulation(
            "free-play",
            seed=4,
            engine="request",
            minutes=3,
            overrides={"low_priority_share": 0.0, "queue_limit": 20, "queue_priority": priority},
        )
        records[priority] = [
            {k: v for k, v in r.to_dict().items() if k != "extras"}
            | {"extras": {k: v for k, v in r.extras.items() if k != "settings"}}
            for r in sim.run()
        ]
    assert records["none"] == records["strict"]


def test_bad_priorities_are_refused_in_one_line_naming_the_field() -> None:
    world = new_world(Params(max_fleet=1), 0)
    before = world_settings(world)
    for bad in ("critical", "", 1, None):
        with pytest.raises(InvalidInput) as err:
            set_world(world, queue_priority=bad)
        assert err.value.field == "queue_priority"
        assert "none" in str(err.value) and "strict" in str(err.value) and "\n" not in str(err.value)
    assert world_settings(world) == before
    with pytest.raises(InvalidInput) as err:
        Controls(queue_priority="fifo")
    assert err.value.field == "queue_priority"
    sim = Simulation("free-play", seed=1, engine="minute", minutes=2)
    with pytest.raises(InvalidInput) as err:
        sim.step([("queue_priority", "strict")])
    assert err.value.field == "queue_priority" and "belongs to the request engine" in str(err.value)
    assert "\n" not in str(err.value) and sim.minute == 0


def test_a_full_queue_makes_room_for_a_critical_request_by_dropping_the_newest_sheddable_one() -> None:
    """Strict priority, a queue limit of 3 holding (oldest first) critical c0, sheddable s1 and s2: a critical
    arrival drops s2 (503 at once) and joins; a sheddable arrival is refused; once only critical requests wait,
    a critical arrival is refused too. The critical line then holds c0, c3 and the sheddable one s1, each in
    arrival order (which line a worker takes first is the engine's: Cobham's test above)."""
    from oncallsim.model.kernel import from_python
    from oncallsim.model.request import disciplines, queues

    world = new_world(Params(max_fleet=1, hot_objects=1.0), 0)
    set_world(world, queue_priority="strict", queue_limit=3)
    q = world.queues
    join = from_python(queues.enqueue_as)
    room = from_python(disciplines.make_room)
    args = (world.views, world.breaker, world.calls, world.meter, world.fleet, world.gen)
    for n, low in enumerate((False, True, True)):
        join(q, 0, float(n), n, -1, -1, -1, low)
    assert room(q, *args, 0, True, 3.0, 0.0) is False and world.meter.measures[o.M_DROPPED] == 0
    assert room(q, *args, 0, False, 3.0, 0.0) is True and world.meter.measures[o.M_DROPPED] == 1
    join(q, 0, 3.0, 3, -1, -1, -1, False)
    assert from_python(queues.waiting)(q, 0) == 3
    served = []
    for column in (0, 0, from_python(queues.sheddable)(q, 0)):
        slot = from_python(queues.dequeue)(q, column)
        served.append(int(q.s_object[slot]))
    assert served == [0, 3, 1]
    for n in (4, 5, 6):
        join(q, 0, float(n), n, -1, -1, -1, False)
    assert room(q, *args, 0, False, 7.0, 0.0) is False and world.meter.measures[o.M_DROPPED] == 1

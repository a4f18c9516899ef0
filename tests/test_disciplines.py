"""Queue disciplines, queue limits and deadlines in the request engine (issue "Overload control", points 4–5).

One instance of 16 workers, exponential service of 50 ms (μ = 320/s), a Poisson overload of ρ = 1.3
(λ = 416/s): FIFO collapses (every request times out); the others shed about the excess λ − μ at once and
keep the waits of what they serve short.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from oncallsim.model.errors import InvalidInput
from oncallsim.model.fields import EXTRA_SCHEMA, REC, ST, STATE_SCHEMA
from oncallsim.model.kernel import from_python, kernel_params
from oncallsim.model.params import Params
from oncallsim.model.request.drive import run_minute
from oncallsim.model.request.settings import set_world, world_settings
from oncallsim.model.request.world import new_world

MU = 16 / 0.05
NAMES = [f.name for f in EXTRA_SCHEMA]


def run(discipline: str, limit: int = 0, deadlines: bool = False, rho: float = 1.3, minutes: int = 4) -> list[Any]:
    """Per minute after the first: (record vector, extras vector)."""
    params = Params(max_fleet=1, app_time_ms=50.0, timeout_s=2.0, hot_objects=1.0)
    p = kernel_params(params)
    world = new_world(params, 7)
    set_world(world, queue_discipline=discipline, queue_limit=limit, deadline_propagation=deadlines)
    st = np.zeros(len(STATE_SCHEMA))
    st[ST.serving] = 1
    lam = rho * MU
    out = []
    for t in range(minutes):
        minute = run_minute(p, world, st, t, poisson_rate=lam)
        world = minute.world
        if t:
            out.append((minute.record, minute.extras))
    return out


def extra(ext: Any, name: str) -> float:
    return float(ext[NAMES.index(name)])


def test_fifo_past_saturation_collapses() -> None:
    last_rec, last_ext = run("fifo")[-1]
    assert last_rec[REC.error_rate] == 1.0  # every answer comes after its client gave up
    assert extra(last_ext, "wasted_work_share") == 1.0 and extra(last_ext, "queue_at_end") > 10_000


@pytest.mark.parametrize(("discipline", "limit", "mean_wait_ms"), [("codel", 0, 150), ("adaptive-lifo", 200, 40)])
def test_codel_and_adaptive_lifo_shed_the_excess_and_keep_waits_short(
    discipline: str, limit: int, mean_wait_ms: float
) -> None:
    excess = 1.3 * MU - MU  # 96 requests/s
    for rec, ext in run(discipline, limit):
        assert abs(extra(ext, "dropped_per_s") - excess) <= 0.15 * excess
        assert rec[REC.error_rate] == pytest.approx(1 - 1 / 1.3, abs=0.03)  # the drops, nothing else
        assert extra(ext, "mean_wait_ms") < mean_wait_ms and rec[REC.timeout_share] == 0.0
        assert extra(ext, "wasted_work_share") == 0.0


def test_a_queue_limit_drops_arrivals_to_a_full_queue() -> None:
    for rec, ext in run("fifo", limit=200):
        assert extra(ext, "dropped_per_s") == pytest.approx(1.3 * MU - MU, rel=0.15)
        # a full queue of 200 drains in 200/μ = 625 ms: within the 2 s timeout, so nothing served is late
        assert 450 < extra(ext, "mean_wait_ms") < 700 and rec[REC.timeout_share] == 0.0


def test_deadlines_start_no_work_for_a_client_that_gave_up() -> None:
    without = run("fifo")
    with_deadlines = run("fifo", deadlines=True)
    for (_rec, ext), (_, ext_without) in zip(with_deadlines, without, strict=True):
        assert extra(ext, "abandoned_per_s") > 50  # skipped at the head of the queue, no worker spent on them
        assert extra(ext, "queue_at_end") < 0.1 * extra(ext_without, "queue_at_end")  # the backlog stays bounded
        assert extra(ext, "mean_wait_ms") < 2000.0  # whatever starts, starts before its deadline
        # FIFO still serves the oldest first: what starts has waited nearly its 2 s and is mostly cut short at
        # its deadline. That work counts in the share's denominator too, so the share stays a share (it was
        # wasted / answered work, which passed 1 here)
        assert 0.5 < extra(ext, "wasted_work_share") <= 1.0


def test_light_load_is_untouched_by_any_discipline() -> None:
    waits = {d: extra(run(d, 200, rho=0.5)[-1][1], "dropped_per_s") for d in ("fifo", "codel", "adaptive-lifo")}
    assert waits == {"fifo": 0.0, "codel": 0.0, "adaptive-lifo": 0.0}


def test_bad_settings_name_the_field_and_change_nothing() -> None:
    world = new_world(Params(max_fleet=1), 0)
    before = world_settings(world)
    for kwargs, field in (
        ({"queue_discipline": "red"}, "queue_discipline"),
        ({"queue_discipline": "adaptive-lifo"}, "queue_discipline"),  # adaptive LIFO needs a queue limit
        ({"queue_discipline": "adaptive-lifo", "queue_limit": 0}, "queue_discipline"),
        ({"queue_limit": -1}, "queue_limit"),
        ({"queue_limit": 100_001}, "queue_limit"),  # the spec's range, the one every surface checks
        ({"balancer": "p2c", "queue_limit": 2.5}, "queue_limit"),  # one refused: the other is not written either
    ):
        with pytest.raises(InvalidInput) as err:
            set_world(world, **kwargs)
        assert err.value.field == field
    assert world_settings(world) == before


def test_the_queue_pool_shrinks_after_a_burst_and_nothing_changes() -> None:
    """The waiting requests' pool doubles before a minute that could fill it and, once what could wait is an
    eighth of it or less, moves the waiting requests to a smaller pool: their order, links and outcomes are the
    same as in the big pool (a slot's number never matters)."""
    from oncallsim.model.request import queues as q

    params = Params(max_fleet=1, app_time_ms=50.0, timeout_s=2.0, hot_objects=1.0)
    world = new_world(params, 3)
    for n in range(3000):  # a backlog in the balancer's queue and instance 0's, interleaved
        from_python(q.enqueue)(world.queues, n % 2, float(n), n, -1, -1, n)
    grown = q.with_room(world.queues, 1 << 16)
    assert len(grown.s_arrival) == 1 << 17
    big = q.Queues._make(a.copy() for a in grown)  # the pool as it was, to drain beside the small one
    small = q.with_room(grown, 100)  # 3,100 could wait: an eighth of the pool or less
    assert len(small.s_arrival) == q.QUEUE_START * 2 and small.ints[q.I_SFREE] == len(small.s_arrival) - 3000

    def drained(pool: q.Queues) -> list[tuple[int, float, int]]:
        out = []
        for qid in (0, 1):
            while pool.qs[q.Q_LEN, qid] > 0:
                slot = from_python(q.dequeue)(pool, qid)
                out.append((qid, float(pool.s_arrival[slot]), int(pool.s_call[slot])))
        return out

    assert drained(small) == drained(big) == [(i % 2, float(i), i) for i in (*range(0, 3000, 2), *range(1, 3000, 2))]
    assert small.ints[q.I_SFREE] == len(small.s_arrival)  # every slot free again, each once
    assert sorted(small.s_free.tolist()) == list(range(len(small.s_arrival)))

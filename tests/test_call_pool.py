"""The clients' calls after a burst (issue 30, item 6): their arrays grow before a minute that could need more and
shrink back once the burst is over, and the run is the same, bit for bit, as a run whose arrays never shrink."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from oncallsim.model.request import calls as _calls
from oncallsim.model.request.calls import C_FREE, CALLS_START, I_CFREE, I_DHEAD, I_DLEN
from oncallsim.model.request.drive import run_minute
from oncallsim.model.request.instances import REFUSE
from oncallsim.model.request.queue_only import queue_only_world
from oncallsim.model.request.settings import set_world

# 2 instances of 16 workers (50 ms each: ~640 requests/s), one refusing now and then; a minute at 3,000/s (the
# burst: queues, timeouts, retries, attempts abandoned in the queues), then quiet minutes at 40/s
RATES = (40.0, 3000.0, 40.0, 40.0, 40.0, 40.0)
SHRUNK = _calls.shrunk


def play(shrink: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[list[bytes], list[int], list[int]]:
    """Each minute's record and extras (as bytes), and the call slots and deadline ring's size before each."""
    stale_named: list[int] = []

    def watched(calls: Any, arrivals: int, every_request: bool) -> Any:
        if not shrink:
            return calls, None
        out, renumber = SHRUNK(calls, arrivals, every_request)
        if renumber is not None:  # how many deadlines in the ring named a call that had ended
            order = (int(calls.ints[I_DHEAD]) + np.arange(int(calls.ints[I_DLEN]))) % len(calls.d_time)
            stale_named.append(int((calls.c_state[calls.d_call[order]] == C_FREE).sum()))
        return out, renumber

    monkeypatch.setattr(_calls, "shrunk", watched)
    p, world, st = queue_only_world(32, 0.05, seed=7, timeout_s=1.0)
    set_world(world, balancer="p2c", retries=2, retry_backoff="full-jitter", retry_base_ms=50, retry_cap_ms=500)
    sizes, rings, out = [], [], []
    for minute, rate in enumerate(RATES):
        world.fleet.health[1] = REFUSE if minute % 2 else world.fleet.health[0]
        result = run_minute(p, world, st, minute, poisson_rate=rate)
        world = result.world
        sizes.append(len(world.calls.c_state))
        rings.append(len(world.calls.d_time))
        out.append(result.record.tobytes() + result.extras.tobytes() + world.meter.measures.tobytes())
    if shrink:
        assert stale_named and max(stale_named) > 0  # the names of ended calls were moved too (to a free slot)
    return out, sizes, rings


def test_the_calls_shrink_after_a_burst_and_the_run_is_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    kept, kept_sizes, _ = play(False, monkeypatch)
    shrunk, sizes, rings = play(True, monkeypatch)
    assert max(kept_sizes) >= 1 << 18 and kept_sizes[-1] == max(kept_sizes)  # without shrinking: the peak stays
    assert max(sizes) == max(kept_sizes) and 32 * sizes[-1] <= max(sizes)  # with it: a quiet minute's
    assert max(rings) >= 1 << 20 and 16 * rings[-1] <= max(rings)
    assert shrunk == kept  # every record, extra and measure, bit for bit


def test_a_quiet_pool_keeps_its_open_calls_and_free_slots() -> None:
    """The open calls keep their fields in their new slots, in their old order; every other slot is free once."""
    _, world, _ = queue_only_world(32, 0.05, seed=3, timeout_s=1.0)
    set_world(world, balancer="p2c", retries=1)
    grown = _calls.with_room(world.calls, 1 << 16, True)
    opened = np.arange(0, 3000, 3)  # open calls scattered over the grown slots
    free = grown.c_free[: grown.ints[I_CFREE]]
    rest = free[np.isin(free, opened, invert=True)]
    grown.c_free[: len(rest)] = rest
    grown.ints[I_CFREE] = len(rest)
    grown.c_arrival[opened] = opened.astype(float)
    small, renumber = _calls.shrunk(grown, 10, True)
    assert renumber is not None and len(small.c_state) == CALLS_START * 2
    assert small.c_arrival[:1000].tolist() == [float(k) for k in range(0, 3000, 3)]
    assert renumber[[0, 3, 2997, -1]].tolist() == [0, 1, 999, -1]
    free = small.c_free[: small.ints[I_CFREE]]
    assert sorted(free.tolist()) == list(range(1000, len(small.c_state)))

"""Discovery as bilibili/discovery does it, and gRPC's connections (model version 2; issue 23 item 8).

Each behaviour on a small scripted case, against what the Go code does worked out by hand: the registry's long
polls, its 15 % eviction cap and random order, its 3,600 s ceiling, a renewal's 404, the SDK's cached list, and
grpc-go's ready connections (a crash leaves the picker at once; an unreachable instance at its keepalive or its
TCP user timeout, whichever comes first; a reconnection on grpc-go's backoff).
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from oncallsim import Simulation
from oncallsim.model.kernel import from_python
from oncallsim.model.params import Params
from oncallsim.model.request import connections as cn
from oncallsim.model.request.balancers import I_CLIENTS
from oncallsim.model.request.discovery import eviction_order, register_initial, registry_minute
from oncallsim.model.request.instances import OFFLINE, REFUSE, UP, refresh_views
from oncallsim.model.request.world import World, new_world

refresh = from_python(refresh_views)
unacknowledged = from_python(cn.unacknowledged)


def _world(instances: int, clients: int = 1, revision: int = 2) -> tuple[World, Params]:
    params = Params(max_fleet=instances, clients=clients)
    world = new_world(params, 0, revision=revision)
    world.views.ints[I_CLIENTS] = clients
    register_initial(world, instances, params)
    return world, params


def _rotation(world: World, c: int) -> set[int]:
    return set(world.views.rot[c, : world.views.nrot[c]].tolist())


def _minutes(world: World, params: Params, minutes: range, serving: int, protect: bool = True) -> list[list[str]]:
    """The registry's events minute by minute, the connections updated after it (as the engine does)."""
    out = []
    for t in minutes:
        out.append([e.code for e in registry_minute(world, t, serving, params, protect)])
        cn.connections_minute(world, t, serving)
    return out


def test_a_registry_change_reaches_every_long_poll_at_once() -> None:
    """Version 1 spread the clients' polls over 30 s; bilibili/discovery answers every hanging poll at once."""
    for revision, seen_late in ((1, True), (2, False)):
        world, _ = _world(4, clients=4, revision=revision)
        world.registry.evict_at[2] = 60.0  # the registry evicts instance 2 at 60 s
        refresh(world.views, world.registry, world.fleet, world.conns, 60.0, 4)
        late = [c for c in range(4) if 2 in _rotation(world, c)]
        # version 1: client c hears 30 s × (c + ½) / 4 later, so every client still sends to it at 60 s
        assert (late == [0, 1, 2, 3]) is seen_late and (late == []) is not seen_late


def test_at_most_15_percent_of_the_registry_is_evicted_a_round() -> None:
    """20 listed, 8 silent, no self-protection: registry.go evicts size − int(0.85·size) a round: 3 of 20, 3 of 17,
    then the last 2 (14 − int(11.9) = 3 allowed)."""
    world, params = _world(20)
    _minutes(world, params, range(1), 20, protect=False)
    world.fleet.health[:8] = OFFLINE
    rounds = [codes.count("instance_evicted") for codes in _minutes(world, params, range(1, 8), 20, protect=False)]
    assert [n for n in rounds if n] == [3, 3, 2]


def test_the_eviction_order_is_random_seeded_and_uniform() -> None:
    """The partial Knuth shuffle picks each candidate of 8 in a round of 3 with probability 3/8; the same seed gives
    the same order."""
    candidates = list(range(8))
    assert eviction_order(candidates, 3, 42) == eviction_order(candidates, 3, 42)
    picks = Counter(i for seed in range(4000) for i in eviction_order(candidates, 3, seed))
    share = np.array([picks[i] for i in candidates]) / 4000
    assert np.all(np.abs(share - 3 / 8) < 4 * math.sqrt(3 / 8 * 5 / 8 / 4000))
    firsts = {tuple(eviction_order(candidates, 3, seed)) for seed in range(50)}
    assert len(firsts) > 25  # orders differ from seed to seed
    assert eviction_order([5, 6], 3, 1) in ([5, 6], [6, 5])  # fewer than the cap: all of them


def test_an_instance_silent_for_an_hour_is_evicted_even_under_self_protection() -> None:
    """8 of 20 silent keep the registry protected (24 renewals a minute < int(40 × 0.85)); none is evicted until its
    last renewal is more than 3,600 s old, then 3 a round."""
    world, params = _world(20)
    _minutes(world, params, range(1), 20)
    world.fleet.health[:8] = OFFLINE
    since = world.registry.reg_since[:8].copy()
    last = since + np.floor((60.0 - since) / 30.0) * 30.0  # each one's last renewal at or before 60 s
    evicted_at: dict[int, float] = {}
    for t, codes in zip(range(1, 66), _minutes(world, params, range(1, 66), 20), strict=True):
        assert t == 1 or "self_protection_cleared" not in codes
        for i in np.flatnonzero(np.isfinite(world.registry.evict_at[:8])):
            evicted_at.setdefault(int(i), float(world.registry.evict_at[i]))
    first = min(evicted_at.values())
    assert all(at - last[i] > 3600.0 for i, at in evicted_at.items())  # evicted only past the ceiling
    assert first - 60.0 <= last.min() + 3600.0 < first  # and at the first tick past it
    assert sorted(Counter(evicted_at.values()).values())[-1] <= 3  # 15 % of 20 a round


def test_a_renewal_answered_404_re_registers_at_once() -> None:
    """An instance evicted while cut off is listed again at its first renewal after it is reachable (its own
    30 s ticker), not at the minute's start; a crashed process that starts again registers when it starts."""
    world, params = _world(10)
    _minutes(world, params, range(1), 10, protect=False)
    world.fleet.health[3] = OFFLINE
    world.fleet.health[5] = REFUSE
    _minutes(world, params, range(1, 5), 10, protect=False)
    refresh(world.views, world.registry, world.fleet, world.conns, 299.0, 10)
    assert world.registry.reg[3] == 0 and world.registry.reg[5] == 0  # both evicted
    world.fleet.health[3] = UP
    world.fleet.health[5] = UP
    _minutes(world, params, range(5, 6), 10, protect=False)
    since = float(world.registry.reg_since[3])
    assert world.registry.reg_at[3] == since + math.ceil((300.0 - since) / 30.0) * 30.0  # its next renewal: 404
    assert world.registry.reg_at[5] == 300.0 and world.registry.reg_since[5] == 300.0  # started: registered
    refresh(world.views, world.registry, world.fleet, world.conns, 300.0, 10)
    assert (3 in _rotation(world, 0)) == bool(world.registry.reg_at[3] == 300.0) and 5 in _rotation(world, 0)
    refresh(world.views, world.registry, world.fleet, world.conns, float(world.registry.reg_at[3]), 10)
    assert 3 in _rotation(world, 0)  # listed and connected again at its renewal


def test_the_sdk_keeps_its_list_when_an_update_would_empty_it() -> None:
    """naming/client.go skips an update that counts no instance; any smaller drop is taken as it comes."""
    world, _ = _world(4, clients=2)
    world.registry.evict_at[:3] = 10.0  # three of four go: taken
    refresh(world.views, world.registry, world.fleet, world.conns, 10.0, 4)
    assert _rotation(world, 0) == _rotation(world, 1) == {3}
    world.registry.evict_at[3] = 20.0  # the last one: the update would be empty, the cached list stays
    refresh(world.views, world.registry, world.fleet, world.conns, 20.0, 4)
    assert world.registry.reg[:4].tolist() == [0, 0, 0, 0]
    assert _rotation(world, 0) == _rotation(world, 1) == {3}


def test_an_unreachable_instance_leaves_the_picker_at_its_keepalive_or_tcp_timeout() -> None:
    """Warden's keepalive (60 s + 20 s) closes an idle connection 80 s after the last answer; a client that sent a
    request at 65 s loses it at 85 s (grpc-go's TCP_USER_TIMEOUT = the keepalive timeout)."""
    world, params = _world(4, clients=2)
    _minutes(world, params, range(1), 4)
    world.fleet.health[1] = OFFLINE
    _minutes(world, params, range(1, 2), 4)  # off the network from 60 s
    unacknowledged(world.conns, world.views, 0, 1, 65.0)
    for x, in_0, in_1 in ((60.0, True, True), (84.9, True, True), (85.0, False, True), (139.9, False, True)):
        refresh(world.views, world.registry, world.fleet, world.conns, x, 4)
        assert (1 in _rotation(world, 0), 1 in _rotation(world, 1)) == (in_0, in_1), x
    refresh(world.views, world.registry, world.fleet, world.conns, 140.0, 4)
    assert 1 not in _rotation(world, 1)


def test_reconnection_follows_grpc_backoff_unless_the_registry_lists_it_anew() -> None:
    """Attempts 1 s × 1.6ⁿ apart (at most 120 s) from the loss; at an unreachable host each lasts 20 s."""
    starts = [0.0]
    for n in range(12):
        starts.append(starts[-1] + min(1.6**n, 120.0))
    assert cn.reconnected(0.0, 100.0, False) == pytest.approx(next(s for s in starts if s >= 100.0))
    assert cn.reconnected(0.0, 30.0, True) == pytest.approx(40.0)  # 0, 20, 40: each attempt lasts 20 s
    # two of four crash at 60 s (self-protection keeps them listed), one is back at 180 s: the first attempt after
    world, params = _world(4)
    _minutes(world, params, range(1), 4)
    world.fleet.health[2:4] = REFUSE
    _minutes(world, params, range(1, 3), 4)
    refresh(world.views, world.registry, world.fleet, world.conns, 61.0, 4)
    assert 2 not in _rotation(world, 0)  # a crash: out of the picker at once
    world.fleet.health[2] = UP
    _minutes(world, params, range(3, 4), 4)
    back = 60.0 + next(s for s in starts if s >= 120.0)
    assert world.conns.back_at[2] == pytest.approx(back)
    refresh(world.views, world.registry, world.fleet, world.conns, 180.0, 4)
    assert 2 not in _rotation(world, 0)
    refresh(world.views, world.registry, world.fleet, world.conns, back, 4)
    assert 2 in _rotation(world, 0)


def test_a_crashed_instance_gets_no_request_once_it_crashed() -> None:
    """Through the engine: with p2c over gRPC the crashed instance leaves every picker at its crash; version 1 kept
    sending it requests that were refused."""
    refused = {}
    for version in ("1", "2"):
        sim = Simulation(
            "free-play",
            seed=3,
            engine="request",
            minutes=10,
            model_version=version,
            overrides={
                "workers_per_instance": 4,
                "max_fleet": 8,
                "hot_objects": 2000.0,
                "base_requests_per_s": 100.0,
                "floor": 4,
                "autoscaler": False,
                "balancer": "p2c",
                "clients": 2,
            },
        )
        sim.run(until=5)
        sim.inject({"kind": "instance", "what": "crash", "at_between": ["08:06", "08:06"], "instance": 1})
        records = sim.run(until=9)
        # the minutes after the crash's (in that one, what it held when it crashed is refused: its connections reset)
        refused[version] = sum(r.extras["refused_per_s"] for r in records if r.minute > 6 and r.extras)
    assert refused["1"] > 0 and refused["2"] == 0

"""The client's breaker (issue 23, item 4; reference §2): the SRE book's adaptive throttling in Kratos's three
presets, a throttled client settling at sent ≈ K·accepted in front of a capacity-limited backend (§2.3), and the
classic breaker's states on a scripted pattern of answers."""

from __future__ import annotations

import math

import pytest

from oncallsim import Simulation
from oncallsim.model import InvalidInput, Params
from oncallsim.model.kernel import from_python
from oncallsim.model.request import breaker as br
from oncallsim.model.request.balancers import A_DROPPED, A_ERROR, A_LIMITED, A_OK, A_TIMEOUT
from oncallsim.model.request.breaker import (
    CLASSIC,
    CLOSED,
    HALF_OPEN,
    I_BREAKER,
    I_PRESET,
    OPEN,
    PRESETS,
    SRE,
    SRE_BUCKET_S,
)
from oncallsim.model.request.settings import set_parameters
from oncallsim.model.request.world import new_world
from oncallsim.verify.resilience import throttle_ratio

heard, rejects, reject_probability = (from_python(f) for f in (br.heard, br.rejects, br.reject_probability))

# (K, the fewest requests it needs) by preset, from the sources (reference §2.2); v3's K is throttle_k
SOURCES = {"warden": (1.5, 100), "aegis": (1 / 0.6, 100), "v3": (2.0, 20)}


def _breaker(kind: int, preset: str = "v3", revision: int = 2) -> object:
    w = new_world(Params(max_fleet=1, hot_objects=10.0), 0, revision=revision)
    set_parameters(w, Params(max_fleet=1, hot_objects=10.0))
    w.breaker.ints[I_BREAKER] = kind
    w.breaker.ints[I_PRESET] = PRESETS.index(preset)
    return w


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize(("requests", "accepts"), [(150, 30), (150, 80), (60, 0), (19, 0)])
def test_the_reject_probability_is_the_sre_books(preset: str, requests: int, accepts: int) -> None:
    w = _breaker(SRE, preset)
    for n in range(requests):  # spread over the 3 s window
        heard(w.breaker, 0, (n % 10 + 0.5) * SRE_BUCKET_S, 0.01, A_OK if n < accepts else A_ERROR)
    k, least = SOURCES[preset]
    expected = 0.0 if requests < least else max(0.0, (requests - k * accepts) / (requests + 1))
    assert reject_probability(w.breaker, 0, 9.5 * SRE_BUCKET_S) == pytest.approx(expected)
    assert reject_probability(w.breaker, 0, 30.0) == 0.0  # the window has moved on


@pytest.mark.parametrize(("preset", "accepted"), [("warden", False), ("aegis", True), ("v3", True)])
def test_a_429_is_accepted_by_aegis_and_v3_and_not_by_warden(preset: str, accepted: bool) -> None:
    w = _breaker(SRE, preset)
    for n in range(200):
        heard(w.breaker, 0, (n % 10 + 0.5) * SRE_BUCKET_S, 0.0, A_LIMITED)
    assert (reject_probability(w.breaker, 0, 9.5 * SRE_BUCKET_S) == 0.0) == accepted
    w = _breaker(SRE, preset, revision=1)  # version 1: every error was a failure
    for n in range(200):
        heard(w.breaker, 0, (n % 10 + 0.5) * SRE_BUCKET_S, 0.0, A_LIMITED)
    assert reject_probability(w.breaker, 0, 9.5 * SRE_BUCKET_S) > 0.9


@pytest.mark.parametrize(("preset", "counted"), [("warden", False), ("aegis", True), ("v3", True)])
def test_a_local_reject_counts_for_aegis_and_v3_only(preset: str, counted: bool) -> None:
    w = _breaker(SRE, preset)
    for n in range(400):
        heard(w.breaker, 0, (n % 10 + 0.5) * SRE_BUCKET_S, 0.0, A_DROPPED)
    before = w.breaker.thr[0].sum()
    rejected = sum(rejects(w.breaker, w.gen, 0, 9.5 * SRE_BUCKET_S) for _ in range(50))
    assert rejected > 40
    assert w.breaker.thr[0].sum() - before == (rejected if counted else 0)


def test_a_throttled_client_settles_at_k_times_what_is_accepted() -> None:
    unthrottled, throttled = throttle_ratio(False), throttle_ratio(True)
    assert unthrottled > 2.3  # everything offered is sent
    assert throttled == pytest.approx(2.0, rel=0.08)  # K = 2: one rejected by the backend per one accepted


def test_the_classic_breaker_trips_sleeps_probes_and_closes() -> None:
    """Hystrix's defaults: 20 requests in 10 s, half of them failed → open 5 s → one probe → closed or open."""
    w = _breaker(CLASSIC)
    state = w.breaker.state
    for n in range(19):  # 19 answers, all failed: below the volume, still closed
        heard(w.breaker, 0, 0.1 * n, 0.05, A_TIMEOUT)
    assert state[0] == CLOSED and not rejects(w.breaker, w.gen, 0, 1.95)
    heard(w.breaker, 0, 2.0, 0.05, A_OK)  # the 20th: 19 of 20 failed → open until 7.0
    assert state[0] == CLOSED
    heard(w.breaker, 0, 2.05, 0.05, A_ERROR)
    assert state[0] == OPEN and math.isclose(w.breaker.until[0], 7.05)
    assert all(rejects(w.breaker, w.gen, 0, t) for t in (2.1, 4.0, 7.0))  # open: everything rejected itself
    assert not rejects(w.breaker, w.gen, 0, 7.1)  # half-open: this one goes as the probe …
    assert state[0] == HALF_OPEN and rejects(w.breaker, w.gen, 0, 7.2)  # … and the rest wait for it
    heard(w.breaker, 0, 7.3, 0.5, A_OK)  # an answer to a request sent before the probe decides nothing
    assert state[0] == HALF_OPEN
    heard(w.breaker, 0, 7.4, 0.3, A_TIMEOUT)  # the probe failed: open again
    assert state[0] == OPEN and math.isclose(w.breaker.until[0], 12.4)
    assert not rejects(w.breaker, w.gen, 0, 12.5)  # the next probe …
    heard(w.breaker, 0, 12.6, 0.1, A_OK)  # … succeeds: closed, its window empty
    assert state[0] == CLOSED and w.breaker.cls.sum() == 0.0
    assert not rejects(w.breaker, w.gen, 0, 12.7)


def test_the_minute_engine_refuses_the_breaker_and_version1_s_switch_reads_as_it() -> None:
    with pytest.raises(InvalidInput, match="request engine"):
        Simulation("free-play", overrides={"breaker": "sre"}, engine="minute")
    with pytest.raises(InvalidInput, match="request engine"):
        Simulation("free-play", overrides={"client_throttle": True}, engine="minute")
    sim = Simulation("free-play", overrides={"client_throttle": "on"}, engine="request", minutes=1)
    assert sim.state.controls.breaker == "sre"
    sim.step([("client_throttle", False)])
    assert sim.state.controls.breaker == "none" and sim.actions[0].control == "breaker"

"""Adaptive client-side throttling (issue 11, item 2; reference §2): the SRE book's formula, and a throttled
client settling at sent ≈ K·accepted in front of a capacity-limited backend (§2.3)."""

from __future__ import annotations

import pytest

from oncallsim import Simulation
from oncallsim.model import InvalidInput, Params
from oncallsim.model.kernel import from_python
from oncallsim.model.request import throttle
from oncallsim.model.request.throttle import BUCKET_S, MIN_REQUESTS, R_THROTTLE_K
from oncallsim.model.request.world import new_world
from oncallsim.verify.resilience import throttle_ratio

mark = from_python(throttle.mark)  # steps of the engine, driven from Python here
reject_probability = from_python(throttle.reject_probability)


@pytest.mark.parametrize(("requests", "accepts", "k"), [(100, 30, 2.0), (100, 60, 2.0), (19, 0, 2.0), (300, 100, 1.5)])
def test_the_reject_probability_is_the_sre_books(requests: int, accepts: int, k: float) -> None:
    w = new_world(Params(max_fleet=1, hot_objects=10.0), 0)
    w.throttle.reals[R_THROTTLE_K] = k
    for n in range(requests):  # spread over the 3 s window
        mark(w.throttle, 0, (n % 10 + 0.5) * BUCKET_S, n < accepts)
    expected = 0.0 if requests < MIN_REQUESTS else max(0.0, (requests - k * accepts) / (requests + 1))
    assert reject_probability(w.throttle, 0, 9.5 * BUCKET_S) == pytest.approx(expected)
    assert reject_probability(w.throttle, 0, 30.0) == 0.0  # the window has moved on


def test_a_throttled_client_settles_at_k_times_what_is_accepted() -> None:
    unthrottled, throttled = throttle_ratio(False), throttle_ratio(True)
    assert unthrottled > 2.3  # everything offered is sent
    assert throttled == pytest.approx(2.0, rel=0.08)  # K = 2: one rejected by the backend per one accepted


def test_the_minute_engine_refuses_client_throttling() -> None:
    with pytest.raises(InvalidInput, match="request engine"):
        Simulation("free-play", overrides={"client_throttle": True}, engine="minute")

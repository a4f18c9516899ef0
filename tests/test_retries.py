"""Client retries (issue 11, item 1; reference §5, §8): the backoff formulas, the retry budget, the clients'
timers, attempt amplification against Σ fʲ, the retry storm's bistability, live switching, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from oncallsim import Simulation
from oncallsim.model import InvalidInput, Params
from oncallsim.model.kernel import from_python
from oncallsim.model.request import calls
from oncallsim.model.request.calls import BACKOFFS, I_CFREE
from oncallsim.model.request.instances import HANG, REFUSE
from oncallsim.model.request.outcomes import M_ADMITTED, M_RETRIES, S_ERRORS
from oncallsim.model.request.queues import I_QLEN
from oncallsim.model.request.settings import set_parameters, set_world
from oncallsim.model.request.workers import I_BUSY
from oncallsim.model.request.world import new_world
from oncallsim.verify.resilience import _run, amplification_grid, bistability_grid

backoff_delay = from_python(calls.backoff_delay)  # steps of the engine, driven from Python here
open_call = from_python(calls.open_call)


def _delays(kind: str, n: int, draws: int = 4000) -> np.ndarray:
    w = new_world(Params(max_fleet=1, hot_objects=10.0), 11)
    set_world(w, retries=3, retry_backoff=kind, retry_base_ms=100, retry_cap_ms=1000)
    call = open_call(w.calls, 0.0, 0, -1, 0, False)
    out = []
    for _ in range(draws):
        w.calls.c_sleep[call] = 0.1 if kind != "decorrelated-jitter" else w.calls.c_sleep[call]
        out.append(backoff_delay(w.calls, w.gen, call, n))
    return np.array(out)


@pytest.mark.parametrize("n", [1, 2, 4])
def test_the_backoffs_are_the_aws_formulas(n: int) -> None:
    expo = min(1.0, 0.1 * 2.0**n)  # min(cap, base · 2ⁿ), n = 1 for the first retry
    assert (_delays("none", n) == 0.0).all()
    assert (_delays("exponential", n) == expo).all()
    full = _delays("full-jitter", n)
    assert full.min() >= 0.0 and full.max() <= expo and full.mean() == pytest.approx(expo / 2, rel=0.05)
    equal = _delays("equal-jitter", n)
    assert equal.min() >= expo / 2 and equal.max() <= expo and equal.mean() == pytest.approx(0.75 * expo, rel=0.03)


def test_decorrelated_jitter_draws_between_base_and_three_times_the_last_sleep() -> None:
    w = new_world(Params(max_fleet=1, hot_objects=10.0), 5)
    set_world(w, retries=3, retry_backoff="decorrelated-jitter", retry_base_ms=100, retry_cap_ms=1000)
    call = open_call(w.calls, 0.0, 0, -1, 0, False)
    assert w.calls.c_sleep[call] == pytest.approx(0.1)  # sleep₀ = base
    for _ in range(200):
        before = w.calls.c_sleep[call]
        d = backoff_delay(w.calls, w.gen, call, 1)
        assert 0.1 <= d <= min(1.0, 3 * before) and w.calls.c_sleep[call] == d


def test_attempts_and_failures_follow_the_geometric_sums() -> None:
    for a in amplification_grid(quick=True):
        assert a.attempts_per_call == pytest.approx(a.theory, rel=0.02), a
        assert a.call_failure == pytest.approx(a.theory_failure, rel=0.15, abs=0.002), a


def test_the_retry_storm_is_bistable_exactly_when_the_reference_says() -> None:
    points = bistability_grid(quick=True)
    assert {p.amplified > 1.0 for p in points} == {True, False}  # both sides of λ(N + 1) = μ
    for p in points:
        assert p.ok, p


def test_a_retry_budget_caps_retries_at_its_share_of_calls() -> None:
    def setup(w):  # half the instances refuse: without a budget 1.875 attempts a call
        set_world(w, balancer="random", retries=3, retry_backoff="none", retry_budget=0.1)
        set_parameters(w, Params(clients=4, retry_budget_burst=10.0))
        w.fleet.health[:5] = REFUSE

    _, minutes = _run(40, 4, 200.0, 0.05, 3, 2, setup)
    calls = sum(m[M_ADMITTED] for _, _, m in minutes)
    retries = sum(m[M_RETRIES] for _, _, m in minutes)
    assert retries <= 0.1 * calls + 4 * 10.0  # the share, plus each client's saved tokens
    assert retries >= 0.09 * calls  # and the budget is used: many failures want a retry


def test_a_timed_out_attempt_is_retried_at_its_deadline_not_at_the_late_answer() -> None:
    """Every instance hangs: each attempt waits out the 2 s timeout, then the next goes at once; a call with 2
    retries fails 6 s after it opened — no error in the minute's first 6 seconds."""

    def setup(w):
        set_world(w, balancer="round-robin", retries=2, retry_backoff="none")
        w.fleet.health[:] = HANG

    world, minutes = _run(16, 4, 50.0, 0.05, 1, 3, setup)
    errors = world.meter.seconds[S_ERRORS]
    assert errors[:6].sum() == 0 and errors[7:].sum() > 0
    _, _, m = minutes[0]
    assert m[M_RETRIES] > 1.8 * m[M_ADMITTED] * (54 / 60)  # two retries per call that could fail in the minute


@pytest.mark.parametrize("balancer", ["pooled", "round-robin"])
def test_without_retries_a_call_is_only_a_client_side_timer(balancer: str) -> None:
    """No retries: the pooled balancer opens no call; a client that balances on its own keeps one per request for
    its deadline (revision 2), closed with its answer — every attempt is the request itself."""
    sim = Simulation("flash-crowd", seed=1, minutes=3, overrides={"balancer": balancer})
    sim.run()
    world = sim.state.world
    open_calls = len(world.calls.c_state) - world.calls.ints[I_CFREE]
    if balancer == "pooled":
        assert open_calls == 0
    else:
        waiting = int(world.queues.ints[I_QLEN]) + int(world.workers.ints[I_BUSY])
        assert 0 < open_calls <= waiting  # each still waits for its answer or its deadline
    assert all(r.extras["attempts_per_s"] == pytest.approx(r.admitted_per_s) for r in sim.timeline)


def test_retries_switch_live_and_read_back() -> None:
    sim = Simulation("flash-crowd", seed=2, minutes=4)
    sim.step()
    sim.step([("retries", 2), ("retry_backoff", "equal-jitter"), ("retry_budget", 0.2)])
    c = sim.state.controls
    assert (c.retries, c.retry_backoff, c.retry_budget) == (2, "equal-jitter", 0.2)
    assert [e.code for e in sim.timeline[-1].events].count("setting") == 3


def test_same_seed_and_actions_same_run_with_retries() -> None:
    def play() -> list[dict]:
        sim = Simulation("retry-storm", seed=5, minutes=25)
        for m in range(25):
            sim.step([("retry_budget", 0.1)] if m == 20 else [])
        return [r.to_dict() for r in sim.timeline]

    assert play() == play()


@pytest.mark.parametrize(
    ("name", "value", "needle"),
    [
        ("retries", 6, "from 0 to 5"),
        ("retries", 1.5, "whole number"),
        ("retry_backoff", "linear", "one of none, exponential"),
        ("retry_budget", 1.5, "from 0 to 1"),
        ("retry_base_ms", 0, "from 1 to 60000"),
    ],
)
def test_bad_retry_settings_are_refused_naming_the_setting(name: str, value: object, needle: str) -> None:
    sim = Simulation("flash-crowd", seed=1, minutes=2)
    with pytest.raises(InvalidInput, match=name) as err:
        sim.step([(name, value)])
    assert needle in str(err.value)
    assert sim.minute == 0  # nothing changed


def test_the_minute_engine_refuses_retries() -> None:
    with pytest.raises(InvalidInput, match="request engine"):
        Simulation("free-play", overrides={"retries": 3}, engine="minute")


def test_backoffs_listed_once() -> None:
    from oncallsim.model.controls import CONTROL_SPECS

    assert CONTROL_SPECS["retry_backoff"].choices == BACKOFFS


def test_hands_off_the_retry_storm_outlives_its_trigger() -> None:
    """The brownout ends; goodput does not come back: the retries sustain the overload (reference §8)."""
    sim = Simulation("retry-storm", seed=303, minutes=45)
    records = sim.run()
    start, length, _ = sim.plan.brownouts[0]
    before = records[start - 1].extras["goodput_per_s"]
    after = [r.extras["goodput_per_s"] for r in records[start + length + 1 : start + length + 11]]
    assert before > 0.95 * records[start - 1].requests_per_s
    assert max(after) < 0.05 * before  # ten minutes after the trigger, still (nearly) nothing answered in time
    assert all(r.extras["attempts_per_s"] > 3.5 * r.admitted_per_s for r in records[start + length + 1 :])

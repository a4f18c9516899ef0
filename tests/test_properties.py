"""Invariants of both engines under arbitrary operator input (hypothesis).

The request engine costs ~15 ms a minute: it gets shorter runs and fewer examples, the same checks."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from oncallsim import Action, Params, Simulation
from oncallsim.model.cache import hit_ratio
from oncallsim.model.kernel import kernel_params

SCENARIOS = ["free-play", "bad-deploy", "surge", "cache-flush"]
RUN_MINUTES = 90


def action_strategy() -> st.SearchStrategy[Action]:
    minute = st.integers(min_value=0, max_value=RUN_MINUTES - 1)
    return st.one_of(
        st.builds(Action, minute, st.just("floor"), st.integers(1, 40)),
        st.builds(Action, minute, st.just("autoscaler"), st.booleans()),
        st.builds(Action, minute, st.just("target_utilization"), st.floats(0.3, 0.9)),
        st.builds(Action, minute, st.just("ttl_s"), st.floats(0.0, 600.0)),
        st.builds(Action, minute, st.just("shed_share"), st.floats(0.0, 1.0)),
        st.builds(Action, minute, st.just("recommendations"), st.booleans()),
        st.builds(Action, minute, st.just("warmup")),
        st.builds(Action, minute, st.just("rollback")),
    )


runs = st.tuples(
    st.sampled_from(SCENARIOS),
    st.integers(min_value=0, max_value=2**32 - 1),
    st.lists(action_strategy(), max_size=12).map(lambda xs: sorted(xs, key=lambda a: a.minute)),
)


REQUEST_MINUTES = 20


def play(scenario: str, seed: int, actions: list[Action], engine: str = "minute") -> Simulation:
    minutes = RUN_MINUTES if engine == "minute" else REQUEST_MINUTES
    sim = Simulation(scenario, seed=seed, minutes=minutes, engine=engine)
    sim.run([a for a in actions if a.minute < minutes])
    return sim


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs)
def test_invariants_hold_every_minute(run: tuple[str, int, list[Action]]) -> None:
    check_invariants(play(*run))


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs)
@example(("free-play", 0, [Action(0, "ttl_s", 0.0)]))  # found by CI: a saturated minute summed to 1 + 7e-15
def test_invariants_hold_every_minute_on_the_request_engine(run: tuple[str, int, list[Action]]) -> None:
    check_invariants(play(*run, engine="request"))


def check_invariants(sim: Simulation) -> None:
    measured = sim.engine.name == "request"
    budget = sim.plan.budget_start
    cost = 0.0
    for r in sim.timeline:
        # a measured cache can be fuller than the steady state for a minute whose traffic just fell
        assert 0.0 <= r.cache_warm and (measured or r.cache_warm <= 1.0)
        assert 0.0 <= r.cache_hit <= 1.0
        assert 0.0 <= r.wait_probability <= 1.0
        assert 0.0 <= r.utilization <= 1.0
        assert 0.0 <= r.error_rate <= 1.0
        assert abs(r.error_overload + r.error_timeout + r.error_bad_build - r.error_rate) <= 1e-15
        assert 0.0 <= r.p99_ms <= 2000.0
        assert r.requests_per_s >= 0.0 and r.admitted_per_s <= r.requests_per_s
        assert r.budget_left <= budget
        assert r.cost_so_far >= cost
        budget, cost = r.budget_left, r.cost_so_far
        size = r.serving + r.booting
        if r.autoscaler:
            assert r.floor <= size <= 40
        else:
            assert size == r.floor


def _dump(sim: Simulation) -> bytes:
    return "\n".join(json.dumps(r.to_dict()) for r in sim.timeline).encode()


@settings(max_examples=25, deadline=None)
@given(runs)
def test_same_inputs_give_the_same_bytes(run: tuple[str, int, list[Action]]) -> None:
    assert _dump(play(*run)) == _dump(play(*run))


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs)
def test_same_inputs_give_the_same_bytes_on_the_request_engine(run: tuple[str, int, list[Action]]) -> None:
    assert _dump(play(*run, engine="request")) == _dump(play(*run, engine="request"))


@given(
    st.floats(min_value=0.0, max_value=1e5),
    st.floats(min_value=0.0, max_value=600.0),
    st.floats(min_value=0.0, max_value=600.0),
    st.floats(min_value=0.0, max_value=1.0),
)
def test_hit_ratio_is_bounded_and_rises_with_ttl(rate: float, ttl_a: float, ttl_b: float, warm: float) -> None:
    params = Params()
    lo, hi = sorted((ttl_a, ttl_b))
    h_lo = hit_ratio(rate, lo, warm, kernel_params(params))
    h_hi = hit_ratio(rate, hi, warm, kernel_params(params))
    assert 0.0 <= h_lo <= h_hi <= 1.0

"""The chain checks of ``oncallsim validate`` (oncallsim/verify/chain_checks.py): their closed forms against a
Monte Carlo written here (numpy, nothing of the engine), and the quick checks passing on the engine."""

from __future__ import annotations

import numpy as np
import pytest

from oncallsim.verify.chain_checks import (
    chain_checks,
    erlang_c_wait_s,
    expected_leaf_attempts,
    gi_m_1_erlang_wait_s,
    leaf_attempts_second_moment,
)


def monte_carlo(layers: int, retries: int, failure: float, size: int, seed: int) -> np.ndarray:
    """The leaf attempts of ``size`` entry requests through ``layers`` retrying callers, drawn try by try."""
    rng = np.random.default_rng(seed)

    def call(level: int, n: int) -> tuple[np.ndarray, np.ndarray]:
        total, done = np.zeros(n), np.zeros(n, dtype=bool)
        for _ in range(retries + 1):
            waiting = ~done
            m = int(waiting.sum())
            if level == 0:
                attempts, ok = np.ones(m), rng.random(m) >= failure
            else:
                attempts, ok = call(level - 1, m)
            total[waiting] += attempts
            done[np.flatnonzero(waiting)[ok]] = True
        return total, done

    return call(layers - 1, size)[0]


@pytest.mark.parametrize(("layers", "retries", "failure"), [(1, 2, 0.3), (2, 2, 0.3), (3, 3, 0.5), (3, 2, 1.0)])
def test_the_amplification_and_its_spread_match_a_monte_carlo(layers: int, retries: int, failure: float) -> None:
    draws = monte_carlo(layers, retries, failure, 400_000, seed=layers * 10 + retries)
    mean, second = (
        expected_leaf_attempts(layers, retries, failure),
        leaf_attempts_second_moment(layers, retries, failure),
    )
    if failure == 1.0:
        assert mean == (1 + retries) ** layers and second == mean**2 and (draws == mean).all()
        return
    se_mean = draws.std() / np.sqrt(len(draws))
    se_second = (draws**2).std() / np.sqrt(len(draws))
    assert abs(draws.mean() - mean) < 4 * se_mean
    assert abs((draws**2).mean() - second) < 4 * se_second


def test_the_quick_chain_checks_pass_on_the_engine() -> None:
    checks = chain_checks(quick=True)
    assert checks.ok, checks
    assert [r.expected for r in checks.amplification if r.failure == 1.0] == [3.0, 27.0]


def lindley_mean_wait(n: int, rate: float, mean_s: float, customers: int, seed: int) -> tuple[float, float]:
    """One single-worker instance fed every n-th arrival of a Poisson stream, by Lindley's recursion
    W' = max(0, W + S − A): its mean wait, and the standard error from 50 batches."""
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(1.0 / rate, (customers, n)).sum(axis=1)
    work = rng.exponential(mean_s, customers)
    waits = np.zeros(customers)
    wait = 0.0
    for k in range(customers):
        waits[k] = wait
        wait = max(0.0, wait + work[k] - gaps[k])
    batches = waits[customers // 10 :].reshape(50, -1).mean(axis=1)
    return float(batches.mean()), float(batches.std(ddof=1) / np.sqrt(len(batches)))


def test_the_balancers_closed_forms() -> None:
    """Erlang C at one server is M/M/1's ρ/(1 − ρ)·S; at n = 1 the round-robin GI/M/1 is M/M/1 too; at n = 10 it
    matches Lindley's recursion run here on Erlang gaps."""
    assert erlang_c_wait_s(1, 80.0, 0.01) == pytest.approx(0.8 / 0.2 * 0.01, rel=1e-12)
    assert gi_m_1_erlang_wait_s(1, 80.0, 0.01) == pytest.approx(0.04, rel=1e-9)
    mean, se = lindley_mean_wait(10, 800.0, 0.01, 200_000, seed=5)
    assert gi_m_1_erlang_wait_s(10, 800.0, 0.01) == pytest.approx(mean, abs=4 * se)

"""The chain checks of ``oncallsim validate`` (oncallsim/verify/chain_checks.py): their closed forms against a
Monte Carlo written here (numpy, nothing of the engine), and the quick checks passing on the engine."""

from __future__ import annotations

import numpy as np
import pytest

from oncallsim.verify.chain_checks import chain_checks, expected_leaf_attempts, leaf_attempts_second_moment


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

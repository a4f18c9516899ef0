"""Erlang B/C, the waiting tail and p99 against an independent high-precision oracle (mpmath)."""

from __future__ import annotations

import math

import mpmath
import pytest
from hypothesis import given
from hypothesis import strategies as st

from oncallsim.model.queueing import erlang_b, erlang_c, queue_minute

mpmath.mp.dps = 60


def oracle_erlang_c(a: float, n: int) -> float:
    """C(a, N) from its textbook sum definition, in 60-digit arithmetic (no recursion shared with the code)."""
    A = mpmath.mpf(a)
    terms = [A**k / mpmath.factorial(k) for k in range(n)]
    top = A**n / mpmath.factorial(n) * n / (n - A)
    return float(top / (mpmath.fsum(terms) + top))


def oracle_erlang_b(a: float, n: int) -> float:
    A = mpmath.mpf(a)
    terms = [A**k / mpmath.factorial(k) for k in range(n + 1)]
    return float(terms[-1] / mpmath.fsum(terms))


PAIRS = [(83.5, 160), (150, 160), (10, 12), (1500, 1600), (600, 640), (10, 640), (0.5, 1), (155.0, 160)]


@pytest.mark.parametrize(("a", "n"), PAIRS)
def test_erlang_c_matches_mpmath(a: float, n: int) -> None:
    expected = oracle_erlang_c(a, n)
    assert erlang_c(a, n) == pytest.approx(expected, rel=1e-9, abs=1e-300)


@pytest.mark.parametrize(("a", "n"), [*PAIRS, (200.0, 160), (3000.0, 640)])
def test_erlang_b_matches_mpmath(a: float, n: int) -> None:
    assert erlang_b(a, n) == pytest.approx(oracle_erlang_b(a, n), rel=1e-9, abs=1e-300)


def test_published_value() -> None:
    """Iversen's handbook example: 10 Erlangs on 12 servers wait with probability ≈ 0.4494."""
    assert erlang_c(10.0, 12) == pytest.approx(0.4494, abs=5e-5)


@given(st.floats(min_value=0.0, max_value=5000.0), st.integers(min_value=0, max_value=2000))
def test_probabilities_stay_in_bounds(a: float, n: int) -> None:
    assert 0.0 <= erlang_b(a, n) <= 1.0
    assert 0.0 <= erlang_c(a, n) <= 1.0


@given(st.floats(min_value=0.01, max_value=1000.0), st.integers(min_value=1, max_value=1200))
def test_wait_probability_does_not_rise_with_more_servers(a: float, n: int) -> None:
    assert erlang_c(a, n + 1) <= erlang_c(a, n) + 1e-12


@given(st.floats(min_value=1.0, max_value=5000.0), st.integers(min_value=1, max_value=640))
def test_overload_when_offered_load_reaches_servers(a: float, n: int) -> None:
    if a < n:
        a = n + a
    q = queue_minute(arrivals_per_s=a / 0.1, service_s=0.1, servers=n, timeout_s=2.0)
    assert q.wait_probability == 1.0
    assert q.overload_share == pytest.approx(1.0 - n / a)
    assert q.p99_s == 2.0
    assert q.utilization == 1.0


def test_waiting_tail_and_p99_formula() -> None:
    lam, s, n = 2000.0, 0.074, 160
    q = queue_minute(lam, s, n, 2.0)
    c = oracle_erlang_c(lam * s, n)
    drain = n / s - lam
    assert q.timeout_share == pytest.approx(c * math.exp(-drain * 2.0), rel=1e-9)
    assert q.p99_s == pytest.approx(s * math.log(100) + max(0.0, math.log(c / 0.01)) / drain, rel=1e-9)


def test_p99_is_capped_at_the_timeout() -> None:
    q = queue_minute(arrivals_per_s=1599.0, service_s=0.1, servers=160, timeout_s=2.0)
    assert q.overload_share == 0.0
    assert q.p99_s == 2.0
    assert 0.0 < q.timeout_share < 1.0


def test_no_servers_fails_everything() -> None:
    q = queue_minute(500.0, 0.07, 0, 2.0)
    assert q.overload_share == 1.0 and q.utilization == 1.0

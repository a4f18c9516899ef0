"""The retrying server's Markov chain (model/retry_chain.py) against oracles of its own: a tiny chain built again
densely in 40-digit arithmetic (its rates from the model's definition, the timeout probabilities by numerical
integration), and birth–death cases solved by hand (M/M/c/K's stationary law, M/M/1/K's eigenvalues, the mean
time to drain by the first-step recursion in exact fractions)."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from oncallsim.model.errors import InvalidInput
from oncallsim.model.retry_chain import (
    Grid,
    RetryServer,
    doom_probability,
    fluid,
    generator,
    hitting_times,
    relaxation,
    retried_share,
    stationary,
)

mpmath.mp.dps = 40


def _doom_oracle(server: RetryServer, n: int) -> mpmath.mpf:
    """P(an attempt that finds n at the server times out), by integrating over its wait W ~ Erlang(k, cμ) and
    its service S ~ Exp(μ) (fixed timeout), or E[1 − e^(−(W+S)/T)] (exponential timeout)."""
    c, mu, t = server.workers, mpmath.mpf(1) / mpmath.mpf(server.service_s), mpmath.mpf(server.timeout_s)
    k = max(0, n - c + 1)
    a = c * mu
    if server.timeout_shape == "exponential":

        def given_wait(w: mpmath.mpf) -> mpmath.mpf:  # E[1 − e^(−(w+S)/T)] over S
            return 1 - mpmath.exp(-w / t) * mu / (mu + 1 / t)

    else:

        def given_wait(w: mpmath.mpf) -> mpmath.mpf:  # P(S > T − w)
            return mpmath.mpf(1) if w >= t else mpmath.exp(-mu * (t - w))

    if k == 0:
        return given_wait(mpmath.mpf(0))
    density = lambda w: a**k * w ** (k - 1) * mpmath.exp(-a * w) / mpmath.factorial(k - 1)  # noqa: E731
    if server.timeout_shape == "exponential":
        return mpmath.quad(lambda w: density(w) * given_wait(w), [0, t, mpmath.inf])
    return mpmath.quad(lambda w: density(w) * given_wait(w), [0, t]) + mpmath.quad(density, [t, mpmath.inf])


def _dense_oracle(server: RetryServer, top_n: int, top_o: int) -> mpmath.matrix:
    """The generator on unit steps, written from the model's definition state by state: each attempt (a new
    call at λ, a retry at o/D) is served in time, or doomed and retried, or doomed and its call's last."""
    c, mu = server.workers, mpmath.mpf(1) / mpmath.mpf(server.service_s)
    lam, d, big_n = mpmath.mpf(server.arrivals_per_s), mpmath.mpf(server.retry_delay_s), server.retries
    size = (top_n + 1) * (top_o + 1)
    q = mpmath.zeros(size, size)
    index = lambda n, o: n * (top_o + 1) + o  # noqa: E731
    for n in range(top_n + 1):
        admitted = server.queue_limit == 0 or n < c + server.queue_limit
        p = _doom_oracle(server, n) if admitted else mpmath.mpf(1)
        for o in range(top_o + 1):
            here = index(n, o)

            def move(dn: int, do: int, rate: mpmath.mpf, n: int = n, o: int = o, here: int = here) -> None:
                if rate == 0:
                    return
                n2 = n + dn if 0 <= n + dn <= top_n else n  # past an edge: that part of the move is lost
                o2 = o + do if 0 <= o + do <= top_o else o
                if (n2, o2) != (n, o):
                    q[here, index(n2, o2)] += rate

            def r(retries: int, p: mpmath.mpf = p) -> mpmath.mpf:  # (1 − pᴺ)/(1 − pᴺ⁺¹)
                if retries <= 0:
                    return mpmath.mpf(0)
                return mpmath.mpf(retries) / (retries + 1) if p == 1 else (1 - p**retries) / (1 - p ** (retries + 1))

            fresh_share = mpmath.mpf(1) if big_n > 0 else mpmath.mpf(0)
            orbit_share = r(big_n - 1)
            retry_rate = o / d
            if server.retry_budget > 0 and big_n > 0:
                wanted = p * (lam * fresh_share + retry_rate * orbit_share)
                allowed = mpmath.mpf(server.retry_budget) * lam
                if wanted > allowed:
                    fresh_share *= allowed / wanted
                    orbit_share *= allowed / wanted
            joins = 1 if admitted and not server.deadlines else 0
            for rate, leaves, share in ((lam, 0, fresh_share), (retry_rate, -1, orbit_share)):
                move(1, leaves, rate * (1 - p))
                move(joins, leaves + 1, rate * p * share)
                move(joins, leaves, rate * p * (1 - share))
            move(-1, 0, min(n, c) * mu)
            q[here, here] = -sum(q[here, j] for j in range(size))
    return q


SMALL = RetryServer(3.0, 2, 0.25, 0.6, retries=2, backoff_s=0.3, timeout_shape="fixed")
SMALL_CASES = [
    SMALL,
    RetryServer(3.0, 2, 0.25, 0.6, retries=2, backoff_s=0.3, timeout_shape="exponential"),
    RetryServer(4.0, 2, 0.25, 0.5, retries=3, retry_budget=0.2, queue_limit=3),
    RetryServer(2.5, 1, 0.3, 0.8, retries=1, deadlines=True),
]


@pytest.mark.parametrize("server", SMALL_CASES, ids=["fixed", "exponential", "budget-limit", "deadlines"])
def test_the_generator_is_the_model_written_again_in_40_digits(server: RetryServer) -> None:
    grid = Grid(7, 4)
    q = generator(server, grid).toarray()
    oracle = _dense_oracle(server, 7, 4)
    assert np.allclose(q, np.array(oracle.tolist(), dtype=float), rtol=1e-9, atol=1e-12)
    assert np.allclose(q.sum(axis=1), 0.0, atol=1e-12)
    assert (q - np.diag(np.diag(q)) >= 0).all()


def test_stationary_law_hitting_times_and_second_eigenvalue_match_the_dense_oracle() -> None:
    grid = Grid(7, 4)
    q = generator(SMALL, grid)
    oracle = _dense_oracle(SMALL, 7, 4)
    size = grid.states
    # π: πQ = 0 with Σπ = 1, solved densely
    a = oracle.T.copy()
    for j in range(size):
        a[0, j] = 1
    b = mpmath.zeros(size, 1)
    b[0] = 1
    pi = mpmath.lu_solve(a, b)
    assert np.allclose(stationary(q), [float(x) for x in pi], rtol=1e-8, atol=1e-14)
    # the mean time to drain (n ≤ c) from every state, and its second moment
    target = grid.queue_of_states() <= SMALL.workers
    rest = [i for i in range(size) if not target[i]]
    block = mpmath.matrix([[oracle[i, j] for j in rest] for i in rest])
    h = mpmath.lu_solve(block, mpmath.matrix([-1] * len(rest)))
    m2 = mpmath.lu_solve(block, -2 * h)
    mine, mine2 = hitting_times(q, target, moments=2)
    assert np.allclose(mine[rest], [float(x) for x in h], rtol=1e-9)
    assert np.allclose(mine2[rest], [float(x) for x in m2], rtol=1e-9)
    assert (mine[target] == 0).all()
    # λ₂: the eigenvalue of largest real part after 0
    values = sorted(mpmath.eig(oracle, left=False, right=False), key=lambda v: -float(mpmath.re(v)))
    assert abs(float(mpmath.re(values[0]))) < 1e-20
    spectrum = relaxation(q)
    assert spectrum.second.real == pytest.approx(float(mpmath.re(values[1])), rel=1e-7)
    assert spectrum.relaxation_s == pytest.approx(-1.0 / float(mpmath.re(values[1])), rel=1e-7)


@pytest.mark.parametrize("server", SMALL_CASES[:2], ids=["fixed", "exponential"])
def test_the_timeout_probability_is_the_integral_over_the_wait(server: RetryServer) -> None:
    ns = np.arange(0, 12)
    assert np.allclose(doom_probability(server, ns), [float(_doom_oracle(server, int(n))) for n in ns], rtol=1e-10)
    big = RetryServer(1200.0, 160, 0.0737, 2.0, timeout_shape=server.timeout_shape)  # retry-storm's size
    queue = np.array([0, 100, 159, 160, 4000, 4500, 5000, 9000, 10**6])
    p = doom_probability(big, queue)
    assert np.all(np.diff(p) >= -1e-15) and p[-1] == pytest.approx(1.0)
    assert p[0] == pytest.approx(math.exp(-2.0 / 0.0737) if server.timeout_shape == "fixed" else 0.0737 / 2.0737)
    assert float(doom_probability(big, np.array([4500]))[0]) == pytest.approx(float(_doom_oracle(big, 4500)), rel=1e-8)


def test_no_retries_is_m_m_c_k_solved_by_hand() -> None:
    """N = 0: nothing enters the orbit and n is the birth–death chain of M/M/c/K (arrivals at K are lost)."""
    lam, mu, c, k = 3.0, 1.0, 2, 9
    server = RetryServer(lam, c, 1.0 / mu, 0.01)
    grid = Grid(k, 1)
    q = generator(server, grid)
    pi = stationary(q).reshape(grid.shape)
    assert pi[:, 1].sum() == pytest.approx(0.0, abs=1e-15)  # the orbit stays empty
    a = lam / mu
    weights = [a**n / math.factorial(n) if n <= c else a**n / (math.factorial(c) * c ** (n - c)) for n in range(k + 1)]
    assert np.allclose(pi[:, 0], np.array(weights) / sum(weights), rtol=1e-10)
    # the mean time from K to 0: m_j = E[time from j down to j − 1] = (1 + λ m_(j+1))/μ_j, from the top down
    m: dict[int, Fraction] = {}
    for j in range(k, 0, -1):
        rate_down = Fraction(min(j, c)) * Fraction(mu)
        m[j] = (1 + (Fraction(lam) * m[j + 1] if j < k else 0)) / rate_down
    (h,) = hitting_times(q, grid.queue_of_states() == 0)
    assert h[grid.index(k, 0)] == pytest.approx(float(sum(m.values())), rel=1e-10)


def test_m_m_1_k_second_eigenvalue_by_hand() -> None:
    """M/M/1/K's eigenvalues are −(λ + μ) + 2√(λμ) cos(jπ/(K + 1)), j = 1…K (a tridiagonal Toeplitz chain)."""
    lam, mu, k = 0.6, 1.0, 12
    server = RetryServer(lam, 1, 1.0 / mu, 0.01)  # D = 0.01 s: the orbit's own modes decay far faster
    spectrum = relaxation(generator(server, Grid(k, 1)))
    expected = -(lam + mu) + 2 * math.sqrt(lam * mu) * math.cos(math.pi / (k + 1))
    assert spectrum.second.real == pytest.approx(expected, rel=1e-9)
    assert spectrum.second.imag == pytest.approx(0.0, abs=1e-9)


def test_the_share_of_failed_attempts_that_are_retried() -> None:
    p = np.array([0.0, 0.3, 0.9, 1.0])
    assert np.allclose(retried_share(p, 0), 0.0)
    assert np.allclose(retried_share(p, 1), [1.0, 1 / 1.3, 1 / 1.9, 0.5])
    # a call that fails every attempt makes N + 1 of them: N of its N + 1 failures are retried
    assert retried_share(np.array([1.0]), 3)[0] == pytest.approx(0.75)
    # counting a call's attempts directly: of the failures, those before its (N + 1)-th attempt
    for x in (0.2, 0.7):
        failed = sum(x**j for j in range(1, 5))
        assert retried_share(np.array([x]), 3)[0] == pytest.approx(sum(x**j for j in range(1, 4)) / failed)


def test_the_fluid_limit_is_the_bad_modes_balance() -> None:
    """In the bad mode every attempt times out: the orbit settles where it sends λN retries a second, and the
    queue grows at λ(N + 1) − cμ (or drains at that rate when it is negative)."""
    for lam, n, grows in ((1200.0, 3, True), (400.0, 3, False)):
        server = RetryServer(lam, 160, 0.0737, 2.0, retries=n)
        grid = Grid(400_000, 15_000, growth=0.05)
        path = fluid(generator(server, grid), grid, 200_000, 0.0, 60)
        assert path.orbit[-1] == pytest.approx(lam * n * server.retry_delay_s, rel=0.03)
        rate = (path.queue[-1] - path.queue[-11]) / 10.0
        assert rate == pytest.approx(lam * (n + 1) - server.capacity_per_s, rel=0.03)
        assert (rate > 0) == grows
    budget = RetryServer(1200.0, 160, 0.0737, 2.0, retries=3, retry_budget=0.1)
    grid = Grid(400_000, 1_000, growth=0.05)
    path = fluid(generator(budget, grid), grid, 200_000, 0.0, 30)
    assert path.orbit[-1] == pytest.approx(0.1 * 1200.0 * budget.retry_delay_s, rel=0.05)  # retries ≤ b·λ


def test_a_bistable_server_mixes_slowly_and_a_safe_one_drains() -> None:
    grid = Grid(1_500_000, 12_000, growth=0.05)
    stuck = generator(RetryServer(1200.0, 160, 0.0737, 2.0, retries=3), grid)
    safe = generator(RetryServer(400.0, 160, 0.0737, 2.0, retries=3), grid)
    healthy = grid.queue_of_states() <= 4000
    start = grid.index(1_000_000, 7000)
    assert hitting_times(stuck, healthy)[0][start] == math.inf  # the backlog never drains
    assert relaxation(stuck).relaxation_s > 1e9
    drain = hitting_times(safe, healthy)[0][start]
    assert drain == pytest.approx(1_000_000 / (2170.9 - 1600.0), rel=0.1)  # backlog / (cμ − λ(N + 1))


def test_bad_parameters_are_refused_by_name() -> None:
    with pytest.raises(InvalidInput, match="retries"):
        RetryServer(1.0, 1, 1.0, 1.0, retries=6)
    with pytest.raises(InvalidInput, match="timeout_s"):
        RetryServer(1.0, 1, 1.0, 0.0)
    with pytest.raises(InvalidInput, match="timeout_shape"):
        RetryServer(1.0, 1, 1.0, 1.0, timeout_shape="gamma")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="grid"):
        Grid(10**7, 10**4)

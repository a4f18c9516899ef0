"""The instances as an M/M/N queue: Erlang B and C, the waiting tail, p99 (MODEL.md §3.6).

Erlang B uses the Poisson closed form B = pmf(N; a)/cdf(N; a), with ln N! from a log-gamma table and the
cdf from SciPy's ``pdtr`` (no factorials or powers, stable for N in the thousands); above a > N, where that
cdf can underflow, the stable recursion. Sources: Iversen, *Teletraffic Engineering Handbook* (Erlang C,
M/M/n waiting time); Harchol-Balter (2013).

The ``*_k`` functions are the compiled formulas the engines call; ``erlang_b``, ``erlang_c`` and
``queue_minute`` are their checked entry points for Python callers.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from oncallsim.model.kernel import compiled, lgamma_table, pdtr

__all__ = ["QueueResult", "erlang_b", "erlang_b_k", "erlang_c", "queue_k", "queue_minute"]

_LN100 = math.log(100.0)


@compiled
def erlang_b_k(a: float, n: int, ln_factorial: Any) -> float:
    """Blocking probability of M/M/N/N with offered load ``a`` and ``n`` servers (ln_factorial[k] = ln k!)."""
    if n == 0:
        return 1.0
    if a == 0.0:
        return 0.0
    if a > n:
        # Overload: the Poisson cdf may underflow; the recursion B_k = a·B_{k−1}/(k + a·B_{k−1}) is stable.
        b = 1.0
        for k in range(1, n + 1):
            b = a * b / (k + a * b)
        return b
    cdf = pdtr(float(n), a)
    log_pmf = n * math.log(a) - a - ln_factorial[n]
    return min(1.0, math.exp(log_pmf) / cdf)


@compiled
def erlang_c_k(a: float, n: int, ln_factorial: Any) -> float:
    """Probability that an arrival waits (M/M/N): C = B/(1 − (a/N)(1 − B)); 1 when a ≥ N (no steady state)."""
    if n <= 0 or a >= n:
        return 1.0
    b = erlang_b_k(a, n, ln_factorial)
    return b / (1.0 - (a / n) * (1.0 - b))


@compiled
def queue_k(
    arrivals_per_s: float, service_s: float, servers: int, timeout_s: float, ln_factorial: Any
) -> tuple[float, float, float, float, float]:
    """One minute of the instance pool, treated as stable within the minute.

    Returns (wait probability, timeout share, overload share, p99 in s, utilization):
    - no server: every request fails (overload);
    - a ≥ N: the excess fails, overload share 1 − N/a; p99 is the timeout;
    - a < N: timeouts = P(W > timeout) = C·e^(−(N/S − λ)·timeout);
      p99 ≈ S·ln 100 + max(0, ln(C/0.01))/(N/S − λ), capped at the timeout.
    """
    if servers <= 0:
        return 1.0, 0.0, 1.0 if arrivals_per_s > 0 else 0.0, timeout_s, 1.0
    a = arrivals_per_s * service_s
    if a >= servers:
        return 1.0, 0.0, 1.0 - servers / a, timeout_s, 1.0
    c = erlang_c_k(a, servers, ln_factorial)
    drain = servers / service_s - arrivals_per_s  # rate at which the waiting tail decays, 1/s
    timeout_share = c * math.exp(-drain * timeout_s)
    wait_q = math.log(c / 0.01) / drain if c > 0.01 else 0.0
    p99 = min(timeout_s, service_s * _LN100 + wait_q)
    return c, timeout_share, 0.0, p99, a / servers


def _check(a: float, n: int) -> None:
    if n < 0 or a < 0:
        raise ValueError(f"need a >= 0 and n >= 0, got a={a!r}, n={n!r}")


def erlang_b(a: float, n: int) -> float:
    """Erlang B (blocking probability of a loss system)."""
    _check(a, n)
    return erlang_b_k(float(a), int(n), lgamma_table(int(n)))  # type: ignore[no-any-return]


def erlang_c(a: float, n: int) -> float:
    """Erlang C (probability of waiting in M/M/N)."""
    _check(a, n)
    return erlang_c_k(float(a), int(n), lgamma_table(max(int(n), 0)))  # type: ignore[no-any-return]


class QueueResult(NamedTuple):
    wait_probability: float
    timeout_share: float
    overload_share: float
    p99_s: float
    utilization: float


def queue_minute(arrivals_per_s: float, service_s: float, servers: int, timeout_s: float) -> QueueResult:
    """``queue_k`` for one minute, with its result named."""
    table = lgamma_table(max(int(servers), 0))
    return QueueResult(*queue_k(float(arrivals_per_s), float(service_s), int(servers), float(timeout_s), table))

"""The instances as an M/M/N queue: Erlang B and C, the waiting tail, p99 (MODEL.md §3.6).

Erlang B uses the Poisson closed form B = pmf(N; a)/cdf(N; a), with the pmf from log-gamma and the cdf from
``scipy.special.pdtr`` (no factorials or powers, stable for N in the thousands); above a > N, where that cdf
can underflow, the stable recursion. Sources: Iversen,
*Teletraffic Engineering Handbook* (Erlang C, M/M/n waiting time); Harchol-Balter (2013).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from scipy.special import pdtr

__all__ = ["QueueResult", "erlang_b", "erlang_c", "queue_minute"]

_LN100 = math.log(100.0)


def erlang_b(a: float, n: int) -> float:
    """Blocking probability of an M/M/N/N loss system with offered load ``a`` Erlangs and ``n`` servers."""
    if n < 0 or a < 0:
        raise ValueError(f"need a >= 0 and n >= 0, got a={a!r}, n={n!r}")
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
    cdf = float(pdtr(n, a))
    log_pmf = n * math.log(a) - a - math.lgamma(n + 1.0)
    return min(1.0, math.exp(log_pmf) / cdf)


def erlang_c(a: float, n: int) -> float:
    """Probability that an arrival waits (M/M/N): C = B/(1 − (a/N)(1 − B)); 1 when a ≥ N (no steady state)."""
    if n <= 0 or a >= n:
        return 1.0
    b = erlang_b(a, n)
    return b / (1.0 - (a / n) * (1.0 - b))


class QueueResult(NamedTuple):
    wait_probability: float
    timeout_share: float
    overload_share: float
    p99_s: float
    utilization: float


def queue_minute(arrivals_per_s: float, service_s: float, servers: int, timeout_s: float) -> QueueResult:
    """One minute of the instance pool, treated as stable within the minute.

    - no server: every request fails (overload);
    - a ≥ N: the excess fails, overload share 1 − N/a; p99 is the timeout;
    - a < N: timeouts = P(W > timeout) = C·e^(−(N/S − λ)·timeout);
      p99 ≈ S·ln 100 + max(0, ln(C/0.01))/(N/S − λ), capped at the timeout.
    """
    if servers <= 0:
        return QueueResult(1.0, 0.0, 1.0 if arrivals_per_s > 0 else 0.0, timeout_s, 1.0)
    a = arrivals_per_s * service_s
    if a >= servers:
        return QueueResult(1.0, 0.0, 1.0 - servers / a, timeout_s, 1.0)
    c = erlang_c(a, servers)
    drain = servers / service_s - arrivals_per_s  # rate at which the waiting tail decays, 1/s
    timeout_share = c * math.exp(-drain * timeout_s)
    wait_q = math.log(c / 0.01) / drain if c > 0.01 else 0.0
    p99 = min(timeout_s, service_s * _LN100 + wait_q)
    return QueueResult(c, timeout_share, 0.0, p99, a / servers)

"""The formulas the request engine is checked against, computed independently of the engine's code.

M/M/N (Iversen, *Teletraffic Engineering Handbook*; Harchol-Balter 2013): the waiting time is 0 with
probability 1 − C and exponential of rate Nμ − λ otherwise, so the response time R = W + service has
P(R > x) = e^{−μx} + C·μ/(Nμ − λ − μ)·(e^{−μx} − e^{−(Nμ−λ)x}). Its 0.99 quantile is found by bisection in
mpmath (50 digits), so the cancellation near Nμ − λ = μ costs nothing. TTL cache: rT/(1 + rT) (Jung, Berger,
Balakrishnan 2003). Database partition: M/M/1, mean sojourn time base/(1 − ρ).
"""

from __future__ import annotations

import math

import mpmath

from oncallsim.model.queueing import erlang_c, queue_minute

__all__ = [
    "approx_p99_s",
    "cache_hit_ratio",
    "db_query_time_s",
    "mmn_mean_wait_s",
    "mmn_response_exceeds",
    "mmn_response_quantile_s",
    "mmn_wait_exceeds",
    "mmn_wait_probability",
]


def mmn_wait_probability(servers: int, arrivals_per_s: float, service_s: float) -> float:
    """Erlang C for offered load a = λS on N servers."""
    return erlang_c(arrivals_per_s * service_s, servers)


def mmn_wait_exceeds(servers: int, arrivals_per_s: float, service_s: float, t_s: float) -> float:
    """P(W > t) = C·e^(−(Nμ − λ)t)."""
    drain = servers / service_s - arrivals_per_s
    return mmn_wait_probability(servers, arrivals_per_s, service_s) * math.exp(-drain * t_s)


def mmn_mean_wait_s(servers: int, arrivals_per_s: float, service_s: float) -> float:
    """E[W] = C/(Nμ − λ)."""
    return mmn_wait_probability(servers, arrivals_per_s, service_s) / (servers / service_s - arrivals_per_s)


def mmn_response_exceeds(servers: int, arrivals_per_s: float, service_s: float, x_s: float) -> mpmath.mpf:
    """P(R > x) for the M/M/N response time (wait + service), in 50-digit arithmetic."""
    with mpmath.workdps(50):
        mu = mpmath.mpf(1) / service_s
        drain = servers * mu - arrivals_per_s
        c = mpmath.mpf(mmn_wait_probability(servers, arrivals_per_s, service_s))
        x = mpmath.mpf(x_s)
        if abs(drain - mu) < mpmath.mpf(10) ** -30:  # the limit Nμ − λ → μ
            return +(mpmath.exp(-mu * x) * (1 + c * mu * x))
        return +(mpmath.exp(-mu * x) + c * mu / (drain - mu) * (mpmath.exp(-mu * x) - mpmath.exp(-drain * x)))


def mmn_response_quantile_s(servers: int, arrivals_per_s: float, service_s: float, q: float = 0.99) -> float:
    """The exact q-quantile of the M/M/N response time: P(R > x) = 1 − q, by bisection to 1e-12 s."""
    if arrivals_per_s * service_s >= servers:
        raise ValueError("no steady state: a >= N")
    tail = 1.0 - q
    lo, hi = 0.0, service_s
    while mmn_response_exceeds(servers, arrivals_per_s, service_s, hi) > tail:
        lo, hi = hi, 2.0 * hi
    while hi - lo > 1e-12:
        mid = 0.5 * (lo + hi)
        if mmn_response_exceeds(servers, arrivals_per_s, service_s, mid) > tail:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def approx_p99_s(servers: int, arrivals_per_s: float, service_s: float) -> float:
    """The minute model's p99 (``queueing.queue_k``): S·ln 100 + max(0, ln(C/0.01))/(N/S − λ), no timeout cap."""
    return queue_minute(arrivals_per_s, service_s, servers, 1e9).p99_s


def cache_hit_ratio(arrivals_per_s: float, ttl_s: float, objects: float, refill_s: float = 0.0) -> float:
    """Steady-state hit ratio of a TTL cache under uniform Poisson requests: rT/(1 + rT), r = λ/objects.

    ``refill_s``: mean time from a miss's lookup to its store (a cache-aside stores after the read). An
    object's cycle is then T present, 1/r until the next request, ``refill_s`` more absent, so
    hit = rT/(1 + r(T + refill)); requests in the refill window miss too."""
    r = arrivals_per_s / objects
    return r * ttl_s / (1.0 + r * (ttl_s + refill_s))


def db_query_time_s(utilization: float, base_s: float) -> float:
    """Mean query time of an M/M/1 partition: base/(1 − ρ)."""
    return base_s / (1.0 - utilization)

"""The instance pool of many runs at once: ``oncallsim.model.queueing.queue_minute``, vectorized.

The same formulas in the same order (Erlang B by the Poisson closed form, C, the waiting tail, p99), so
every run's numbers match the scalar model's (to the last bits of log-gamma).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from scipy.special import gammaln, pdtr

__all__ = ["erlang_b", "queue"]

F = npt.NDArray[np.float64]
I = npt.NDArray[np.int64]  # noqa: E741
_LN100 = math.log(100.0)


def queue(arrivals: F, service_s: F, servers: I, timeout_s: float) -> tuple[F, F, F, F, F]:
    """``queue_minute`` for every run: wait probability, timeout share, overload share, p99 (s), utilization."""
    n = arrivals.shape[0]
    wait = np.ones(n)
    timeout = np.zeros(n)
    overload = np.zeros(n)
    p99 = np.full(n, timeout_s)
    util = np.ones(n)
    none = servers <= 0
    overload[none] = np.where(arrivals[none] > 0, 1.0, 0.0)
    a = arrivals * service_s
    has = ~none
    saturated = has & (a >= servers)
    overload[saturated] = 1.0 - servers[saturated] / a[saturated]
    ok = has & ~saturated
    if ok.any():
        a_ok, n_ok, s_ok, lam = a[ok], servers[ok].astype(np.float64), service_s[ok], arrivals[ok]
        b = erlang_b(a_ok, n_ok)
        c = b / (1.0 - (a_ok / n_ok) * (1.0 - b))
        drain = n_ok / s_ok - lam
        wait[ok] = c
        timeout[ok] = c * np.exp(-drain * timeout_s)
        with np.errstate(divide="ignore", invalid="ignore"):
            wait_q = np.where(c > 0.01, np.log(np.where(c > 0.01, c, 1.0) / 0.01) / drain, 0.0)
        p99[ok] = np.minimum(timeout_s, s_ok * _LN100 + wait_q)
        util[ok] = a_ok / n_ok
    return wait, timeout, overload, p99, util


def erlang_b(a: F, n: F) -> F:
    """Erlang B for a < N (the only case the minute needs): pmf(N; a)/cdf(N; a), as the scalar model."""
    out = np.zeros_like(a)
    positive = a > 0
    if positive.any():
        ap, np_ = a[positive], n[positive]
        cdf = pdtr(np_, ap)
        log_pmf = np_ * np.log(ap) - ap - gammaln(np_ + 1.0)
        out[positive] = np.minimum(1.0, np.exp(log_pmf) / cdf)
    return out

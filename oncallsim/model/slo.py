"""The 99.9 % SLO: error rate by cause, burn rate, error budget, the multiwindow page (MODEL.md §3.7–3.8).

Sources: SRE book ch. 3–4 (error budgets); SRE workbook ch. 5 (burn-rate alerts: 14.4× over 1 h spends 2 %
of a 30-day budget).
"""

from __future__ import annotations

from typing import Any

from oncallsim.model.kernel import P, compiled, step

__all__ = ["burn", "page_state", "push_window", "split_errors"]


@compiled
def split_errors(overload: float, timeout: float, bad_build_share: float, p: Any) -> tuple[float, float, float]:
    """Error rate among admitted requests, attributed along the request's path: (overload, timeout, bad build).

    A request is first rejected by overload, else it may time out, else the bad build may fail it. The
    three causes are independent, e = 1 − (1 − o)(1 − t)(1 − 0.05·b), and the shares add up to e exactly,
    so the budget burned can be split by cause without a remainder.
    """
    survived_overload = 1.0 - overload
    timeout_part = survived_overload * timeout
    served = survived_overload * (1.0 - timeout)
    return overload, timeout_part, served * p[P.bad_build_error_rate] * bad_build_share


@step
def push_window(window: Any, error_rate: float, opening: bool) -> None:
    """The last minutes' error rates, oldest first; the opening minute fills it, so both windows are full."""
    n = len(window)
    if opening:
        for k in range(n):
            window[k] = error_rate
        return
    for k in range(n - 1):
        window[k] = window[k + 1]
    window[n - 1] = error_rate


@compiled
def burn(window: Any, minutes: int, p: Any) -> float:
    """Mean error rate over the last ``minutes`` minutes, as a multiple of the error budget (oldest first)."""
    total = 0.0
    for k in range(len(window) - minutes, len(window)):
        total += window[k]
    return total / minutes / p[P.error_budget]


@compiled
def page_state(firing: bool, burn_long: float, burn_short: float, p: Any) -> bool:
    """Fires when both windows burn at ≥ the threshold; clears when the short window drops below it."""
    threshold = p[P.page_burn_threshold]
    if firing:
        return burn_short >= threshold
    return burn_long >= threshold and burn_short >= threshold

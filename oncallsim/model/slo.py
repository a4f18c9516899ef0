"""The 99.9 % SLO: error rate by cause, burn rate, error budget, the multiwindow page (MODEL.md §3.7–3.8).

Sources: SRE book ch. 3–4 (error budgets); SRE workbook ch. 5 (burn-rate alerts: 14.4× over 1 h spends 2 %
of a 30-day budget).
"""

from __future__ import annotations

from typing import NamedTuple

from oncallsim.model.params import Params

__all__ = ["BurnWindows", "ErrorSplit", "page_state", "split_errors"]


class ErrorSplit(NamedTuple):
    """Error rate among admitted requests, attributed along the request's path.

    A request is first rejected by overload, else it may time out, else the bad build may fail it. The
    three causes are independent, e = 1 − (1 − o)(1 − t)(1 − 0.05·b), and the shares add up to e exactly,
    so the budget burned can be split by cause without a remainder.
    """

    overload: float
    timeout: float
    bad_build: float

    @property
    def total(self) -> float:
        return self.overload + self.timeout + self.bad_build


def split_errors(overload: float, timeout: float, bad_build_share: float, params: Params) -> ErrorSplit:
    survived_overload = 1.0 - overload
    timeout_part = survived_overload * timeout
    served = survived_overload * (1.0 - timeout)
    return ErrorSplit(overload, timeout_part, served * params.bad_build_error_rate * bad_build_share)


class BurnWindows(NamedTuple):
    """The last minutes' error rates, newest last, as many as the longer window needs.

    Pre-filled with the opening minute, so both windows are full from the first minute on.
    """

    rates: tuple[float, ...]

    @classmethod
    def opening(cls, error_rate: float, params: Params) -> BurnWindows:
        return cls((error_rate,) * max(params.burn_long_window_min, params.burn_short_window_min))

    def push(self, error_rate: float) -> BurnWindows:
        return BurnWindows(self.rates[1:] + (error_rate,))  # noqa: RUF005  (concatenation is the faster)

    def burn(self, minutes: int, params: Params) -> float:
        """Mean error rate over the last ``minutes`` minutes, as a multiple of the error budget."""
        rates = self.rates if minutes == len(self.rates) else self.rates[-minutes:]
        return sum(rates) / minutes / params.error_budget


def page_state(firing: bool, burn_long: float, burn_short: float, params: Params) -> bool:
    """Fires when both windows burn at ≥ the threshold; clears when the short window drops below it."""
    threshold = params.page_burn_threshold
    if firing:
        return burn_short >= threshold
    return burn_long >= threshold and burn_short >= threshold

"""Arrivals: the diurnal curve, the surge wave, and the per-minute noise (MODEL.md §3.1)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from oncallsim.model.params import Params
from oncallsim.model.rng import Mulberry32

__all__ = ["Surge", "diurnal_rate", "expected_rate", "noisy_rate"]

_TWO_PI = 2.0 * math.pi


@dataclass(frozen=True, slots=True)
class Surge:
    """A traffic wave: linear rise from ×1 to ×peak over ``rise_min``, then exponential decay back to ×1.

    ``onset_min`` is in minutes since the run's start (a float: the draw is continuous).
    """

    onset_min: float
    peak: float
    rise_min: float
    decay_min: float

    def factor(self, t: float) -> float:
        if t < self.onset_min:
            return 1.0
        since = t - self.onset_min
        if since < self.rise_min:
            return 1.0 + (self.peak - 1.0) * since / self.rise_min
        return 1.0 + (self.peak - 1.0) * math.exp(-(since - self.rise_min) / self.decay_min)


def diurnal_rate(t_min: float, clock_min: float, params: Params) -> float:
    """λ(t) = base·(1 + A·sin(2π(t + clock − (peak − 6 h))/24 h)), in req/s; peaks at ``diurnal_peak_hour``."""
    phase_min = t_min + clock_min - (params.diurnal_peak_hour - 6.0) * 60.0
    return params.base_requests_per_s * (1.0 + params.diurnal_amplitude * math.sin(_TWO_PI * phase_min / 1440.0))


def expected_rate(t_min: float, clock_min: float, params: Params, surge: Surge | None) -> float:
    rate = diurnal_rate(t_min, clock_min, params)
    return rate * surge.factor(t_min) if surge is not None else rate


def noisy_rate(expected: float, rng: Mulberry32, params: Params) -> float:
    """Observed rate = count/60 with count ≈ N(60λ, √(60λ))·(1 + N(0, cv)); never below 0.

    Always draws one Box–Muller pair (two uniforms): the cosine variate for the count, the sine variate for
    the multiplicative noise, so the stream stays aligned whatever the traffic.
    """
    per_minute = 60.0 * expected
    z_count, z_scale = rng.normal_pair()
    count = (per_minute + math.sqrt(per_minute) * z_count) * (1.0 + params.traffic_noise_cv * z_scale)
    return max(0.0, count) / 60.0

"""Arrivals: the diurnal curve, the surge wave, and the per-minute noise (MODEL.md §3.1)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from oncallsim.model.kernel import P, compiled, step

__all__ = ["Surge", "diurnal_rate", "noisy_rate", "surge_factor"]

_TWO_PI = 2.0 * math.pi


@compiled
def surge_factor(t: float, onset: float, peak: float, rise: float, decay: float) -> float:
    """Linear rise from ×1 to ×peak over ``rise`` minutes from ``onset``, then exponential decay back to ×1."""
    if t < onset:
        return 1.0
    since = t - onset
    if since < rise:
        return 1.0 + (peak - 1.0) * since / rise
    return 1.0 + (peak - 1.0) * math.exp(-(since - rise) / decay)


@dataclass(frozen=True, slots=True)
class Surge:
    """A traffic wave. ``onset_min`` is in minutes since the run's start (a float: the draw is continuous)."""

    onset_min: float
    peak: float
    rise_min: float
    decay_min: float

    def factor(self, t: float) -> float:
        return surge_factor(float(t), self.onset_min, self.peak, self.rise_min, self.decay_min)  # type: ignore[no-any-return]


@compiled
def diurnal_rate(t_min: float, clock_min: float, p: Any) -> float:
    """λ(t) = base·(1 + A·sin(2π(t + clock − (peak − 6 h))/24 h)), in req/s; peaks at ``diurnal_peak_hour``."""
    phase_min = t_min + clock_min - (p[P.diurnal_peak_hour] - 6.0) * 60.0
    return p[P.base_requests_per_s] * (1.0 + p[P.diurnal_amplitude] * math.sin(_TWO_PI * phase_min / 1440.0))


@step
def noisy_rate(expected: float, z_count: float, z_scale: float, p: Any) -> float:
    """Observed rate = count/60 with count ≈ N(60λ, √(60λ))·(1 + N(0, cv)); never below 0.

    The two standard normals are one Box–Muller pair (two uniforms a minute, whatever the traffic): the
    cosine variate for the count, the sine variate for the multiplicative noise.
    """
    per_minute = 60.0 * expected
    count = (per_minute + math.sqrt(per_minute) * z_count) * (1.0 + p[P.traffic_noise_cv] * z_scale)
    return max(0.0, count) / 60.0

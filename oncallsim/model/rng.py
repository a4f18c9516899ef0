"""The run's one random generator: mulberry32, as the reference uses, bit for bit.

32-bit state, the standard constants (0x6D2B79F5; shifts 15, 7, 14) with JavaScript ``Math.imul``
semantics done by explicit 32-bit masking. Draw order is part of the model's contract (docs/model.md).
"""

from __future__ import annotations

import math

__all__ = ["Mulberry32"]

_MASK = 0xFFFFFFFF
_TWO32 = 4294967296.0
_TWO_PI = 2.0 * math.pi
_sqrt, _log, _cos, _sin = math.sqrt, math.log, math.cos, math.sin
# Knuth's product method needs e^-λ to stay well above the smallest float; larger means are drawn as a
# sum of Poisson variates of at most this mean (the sum of independent Poissons is Poisson).
_POISSON_CHUNK = 30.0


class Mulberry32:
    """mulberry32 with the distributions of MODEL.md §4. Its whole state is one 32-bit integer."""

    __slots__ = ("state",)

    def __init__(self, seed: int) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"seed must be an int, got {seed!r}")
        self.state = seed & _MASK

    def next_uint32(self) -> int:
        self.state = t = (self.state + 0x6D2B79F5) & _MASK
        t = ((t ^ (t >> 15)) * (t | 1)) & _MASK
        t ^= (t + (((t ^ (t >> 7)) * (t | 61)) & _MASK)) & _MASK
        return (t ^ (t >> 14)) & _MASK

    def random(self) -> float:
        """Uniform on [0, 1): next / 2^32 (next_uint32 inlined: this is the hot path of every run)."""
        # the masks Math.imul needs, and no more: t stays below 2^32 between lines, so XORs need none
        self.state = t = (self.state + 0x6D2B79F5) & _MASK
        t = ((t ^ (t >> 15)) * (t | 1)) & _MASK
        t ^= (t + (t ^ (t >> 7)) * (t | 61)) & _MASK
        return (t ^ (t >> 14)) / _TWO32

    def uniform(self, low: float, high: float) -> float:
        return low + (high - low) * self.random()

    def exponential(self, rate: float) -> float:
        """Inverse CDF: −ln(1 − u)/rate (1 − u is in (0, 1], so the log is finite)."""
        if not rate > 0:
            raise ValueError(f"rate must be > 0, got {rate!r}")
        return -math.log(1.0 - self.random()) / rate

    def normal(self, mean: float = 0.0, sd: float = 1.0) -> float:
        """Box–Muller, cosine branch; two uniforms per variate, nothing cached (the state stays one int)."""
        u1 = 1.0 - self.random()
        u2 = self.random()
        return mean + sd * _sqrt(-2.0 * _log(u1)) * _cos(_TWO_PI * u2)

    def normal_pair(self) -> tuple[float, float]:
        """Both Box–Muller variates of one pair of uniforms: (R·cos θ, R·sin θ), two standard normals."""
        u1 = 1.0 - self.random()
        u2 = self.random()
        radius = _sqrt(-2.0 * _log(u1))
        angle = _TWO_PI * u2
        return radius * _cos(angle), radius * _sin(angle)

    def poisson(self, mean: float) -> int:
        """Knuth's product of uniforms, in chunks of mean ≤ 30 so e^-mean never underflows."""
        if not mean >= 0 or math.isinf(mean):
            raise ValueError(f"mean must be finite and >= 0, got {mean!r}")
        total = 0
        remaining = mean
        while remaining > 0:
            chunk = min(remaining, _POISSON_CHUNK)
            remaining -= chunk
            limit = math.exp(-chunk)
            k = 0
            p = self.random()
            while p > limit:
                k += 1
                p *= self.random()
            total += k
        return total

    def get_state(self) -> int:
        return self.state

    def set_state(self, state: int) -> None:
        self.state = state & _MASK

    def __repr__(self) -> str:
        return f"Mulberry32(state={self.state:#010x})"

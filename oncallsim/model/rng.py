"""The run's one random generator: mulberry32, as the reference uses, bit for bit.

32-bit state, the standard constants (0x6D2B79F5; shifts 15, 7, 14) with JavaScript ``Math.imul``
semantics done by explicit 32-bit masking. Draw order is part of the model's contract (docs/model.md).

The arithmetic is compiled once (``next_u32_k``, ``uniform_k``, ``normal_pair_k``): the Python class and the
batch engine's compiled loop call the same functions.
"""

from __future__ import annotations

import math

import numpy as np

from oncallsim.model.kernel import compiled

__all__ = ["Mulberry32", "normal_pair_k", "uniform_k"]

_MASK = 0xFFFFFFFF
_M32 = np.uint64(_MASK)
_INCREMENT = np.uint64(0x6D2B79F5)
_S15, _S7, _S14 = np.uint64(15), np.uint64(7), np.uint64(14)
_ONE, _SIXTY_ONE = np.uint64(1), np.uint64(61)
_TWO32 = 4294967296.0
_TWO_PI = 2.0 * math.pi
# Knuth's product method needs e^-λ to stay well above the smallest float; larger means are drawn as a
# sum of Poisson variates of at most this mean (the sum of independent Poissons is Poisson).
_POISSON_CHUNK = 30.0


@compiled
def next_u32_k(state: int) -> tuple[int, int]:
    """(next state, next output); products wrap modulo 2^64 and are masked to 32 bits, as Math.imul."""
    s = (np.uint64(state) + _INCREMENT) & _M32
    t = ((s ^ (s >> _S15)) * (s | _ONE)) & _M32
    t ^= (t + (t ^ (t >> _S7)) * (t | _SIXTY_ONE)) & _M32
    return int(s), int((t ^ (t >> _S14)) & _M32)


@compiled
def uniform_k(state: int) -> tuple[int, float]:
    """(next state, uniform on [0, 1)) = next / 2^32."""
    state, out = next_u32_k(state)
    return state, out / _TWO32


@compiled
def normal_pair_k(state: int) -> tuple[int, float, float]:
    """Both Box–Muller variates of one pair of uniforms: (state, R·cos θ, R·sin θ)."""
    state, u = uniform_k(state)
    u1 = 1.0 - u
    state, u2 = uniform_k(state)
    radius = math.sqrt(-2.0 * math.log(u1))
    angle = _TWO_PI * u2
    return state, radius * math.cos(angle), radius * math.sin(angle)


class Mulberry32:
    """mulberry32 with the distributions of MODEL.md §4. Its whole state is one 32-bit integer."""

    __slots__ = ("state",)

    def __init__(self, seed: int) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"seed must be an int, got {seed!r}")
        self.state = seed & _MASK

    def next_uint32(self) -> int:
        self.state, out = next_u32_k(self.state)
        return out  # type: ignore[no-any-return]

    def random(self) -> float:
        """Uniform on [0, 1): next / 2^32."""
        self.state, out = uniform_k(self.state)
        return out  # type: ignore[no-any-return]

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
        return mean + sd * math.sqrt(-2.0 * math.log(u1)) * math.cos(_TWO_PI * u2)

    def normal_pair(self) -> tuple[float, float]:
        """Both Box–Muller variates of one pair of uniforms: (R·cos θ, R·sin θ), two standard normals."""
        self.state, z_cos, z_sin = normal_pair_k(self.state)
        return z_cos, z_sin

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

"""The request engine's generator: xoshiro256** (Blackman & Vigna 2018), seeded by splitmix64.

The minute model draws once a minute from the run's mulberry32; the request engine draws millions of times a
minute, which needs a generator with a long period and good equidistribution. Its four 64-bit words are
seeded from the run's seed through splitmix64 (the seeding its authors recommend), after mixing in a fixed
stream constant, so the two generators never share a stream. Nothing touches numpy's or Python's global
random state; the state lives in the run's ``World`` and is advanced in a fixed order (docs/requests.md).

Doubles are the top 53 bits / 2^53 (uniform on [0, 1)); exponentials are −ln(1 − u)·mean.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from oncallsim.model.kernel import JIT, from_python, step, unmanaged

__all__ = ["STREAM", "exponential", "next_u64", "seeded", "splitmix64", "uniform", "uniform_int"]

STREAM = 0x5EED_0F_2E9_0E57  # mixed into the run's seed: the request engine's own stream
_S17, _S45, _S7, _S11, _S64_7, _S64_45 = (
    np.uint64(17),
    np.uint64(45),
    np.uint64(7),
    np.uint64(11),
    np.uint64(57),
    np.uint64(19),
)
_FIVE, _NINE = np.uint64(5), np.uint64(9)
_TWO53 = 1.0 / 9007199254740992.0


_MASK64 = 0xFFFF_FFFF_FFFF_FFFF


def splitmix64(x: int) -> tuple[int, int]:
    """(next state, output) of splitmix64 (Steele, Lea, Flood 2014), in Python integers masked to 64 bits."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    z = x
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x, z ^ (z >> 31)


def seeded(seed: int) -> npt.NDArray[np.uint64]:
    """The generator's four words for a run's seed (never all zero: splitmix64 outputs are a bijection)."""
    x = (int(seed) ^ STREAM) & _MASK64
    words = []
    for _ in range(4):
        x, out = splitmix64(x)
        words.append(out)
    return np.array(words, dtype=np.uint64)


@step
def _rotl(x: Any, k: Any, back: Any) -> Any:
    return (x << k) | (x >> back)


@step
def _next_u64(s: Any) -> Any:
    """The next 64-bit output; advances the four words in ``s`` in place (uint64 arithmetic wraps)."""
    result = _rotl(s[1] * _FIVE, _S7, _S64_7) * _NINE
    t = s[1] << _S17
    s[2] ^= s[0]
    s[3] ^= s[1]
    s[1] ^= s[2]
    s[0] ^= s[3]
    s[2] ^= t
    s[3] = _rotl(s[3], _S45, _S64_45)
    return result


def _next_u64_python(s: Any) -> int:
    """The same step in Python integers masked to 64 bits: what runs when numba is off (numpy's uint64
    scalars would warn on every wrap)."""
    s0, s1, s2, s3 = (int(v) for v in s)
    x = (s1 * 5) & _MASK64
    result = ((((x << 7) | (x >> 57)) & _MASK64) * 9) & _MASK64
    t = (s1 << 17) & _MASK64
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = ((s3 << 45) | (s3 >> 19)) & _MASK64
    s[0], s[1], s[2], s[3] = s0, s1, s2, s3
    return result


next_u64 = from_python(_next_u64) if JIT else _next_u64_python  # for Python callers (tests); the engine calls _next_u64


@unmanaged
def uniform(s: Any) -> float:
    """Uniform on [0, 1): the top 53 bits."""
    return float(next_u64(s) >> _S11) * _TWO53 if JIT else float(next_u64(s) >> 11) * _TWO53


@unmanaged
def uniform_int(s: Any, n: int) -> int:
    """Uniform on {0, …, n − 1} (n ≤ 2^53; the bias of the product method is below 2^−53·n)."""
    return int(uniform(s) * n)


@unmanaged
def exponential(s: Any, mean: float) -> float:
    """Exponential of the given mean: −ln(1 − u)·mean, u uniform on [0, 1)."""
    return -math.log(1.0 - uniform(s)) * mean

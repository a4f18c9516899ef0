"""mulberry32 for many runs at once: one 32-bit state per run, advanced in vectorized uint32 arithmetic.

Bit for bit the scalar ``Mulberry32`` of each run (numpy's uint32 products wrap modulo 2^32, as Math.imul).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["Mulberry32Array"]

_INCREMENT = np.uint32(0x6D2B79F5)
_TWO32 = 4294967296.0


class Mulberry32Array:
    def __init__(self, states: npt.ArrayLike) -> None:
        self.state = np.asarray(states, dtype=np.uint32).copy()

    def next_uint32(self) -> npt.NDArray[np.uint32]:
        with np.errstate(over="ignore"):
            self.state += _INCREMENT
            t = self.state.copy()
            t = (t ^ (t >> np.uint32(15))) * (t | np.uint32(1))
            t ^= t + (t ^ (t >> np.uint32(7))) * (t | np.uint32(61))
            out: npt.NDArray[np.uint32] = t ^ (t >> np.uint32(14))
            return out

    def random(self) -> npt.NDArray[np.float64]:
        return self.next_uint32().astype(np.float64) / _TWO32

    def normal_pair(self) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """Box–Muller on each run's next two uniforms: (R·cos θ, R·sin θ), as ``Mulberry32.normal_pair``."""
        u1 = 1.0 - self.random()
        u2 = self.random()
        radius = np.sqrt(-2.0 * np.log(u1))
        angle = 2.0 * np.pi * u2
        return radius * np.cos(angle), radius * np.sin(angle)

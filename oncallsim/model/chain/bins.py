"""The chain's latency histogram bins (world.py ``HIST_*``): ``log_bin`` is the definition (a logarithm),
``hist_bin`` the compiled loop's reading of it from two tables, built once at import, that give the same bin
for every float without a logarithm (which was an eighth of a busy chain minute). measure.py reads the bins
back into quantiles; the tables live here, apart from the loop, so the definition and its fast form sit side
by side with the check that they agree (``hist_bin``'s doctest).
"""

from __future__ import annotations

import math
import struct

import numpy as np
import numpy.typing as npt

from oncallsim.model.chain.world import HIST_BINS, HIST_FLOOR_S, HIST_RATIO
from oncallsim.model.kernel import float_bits, step

__all__ = ["hist_bin", "log_bin"]

_LOG_RATIO = math.log(HIST_RATIO)


def log_bin(seconds: float) -> int:
    """A latency's histogram bin by its definition: bin k ≥ 1 holds HIST_FLOOR_S·HIST_RATIO^(k−1) up to the next
    (as ``math.log`` rounds), bin 0 all below, the last all past."""
    if seconds <= HIST_FLOOR_S:
        return 0
    b = int(math.log(seconds / HIST_FLOOR_S) / _LOG_RATIO) + 1
    return b if b < HIST_BINS else HIST_BINS - 1


def _bin_tables() -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64], int]:
    """``log_bin`` without a logarithm (it was an eighth of a busy chain minute): the least latency of each bin
    (found by bisection on the floats' bit patterns, so the bins are exactly ``log_bin``'s), and for each of
    ``_SUBS`` slices of each binary order of magnitude, the bin of the slice's least latency. A latency's bin is
    then its slice's, or the next if that starts inside the slice before it."""
    lows = np.full(HIST_BINS + 1, math.inf)
    lows[0] = -math.inf
    for k in range(1, HIST_BINS):
        guess = HIST_FLOOR_S * HIST_RATIO ** (k - 1)
        lo = struct.unpack("<q", struct.pack("<d", guess * (1.0 - 1e-9)))[0]
        hi = struct.unpack("<q", struct.pack("<d", guess * (1.0 + 1e-9)))[0]
        assert log_bin(_as_float(lo)) < k <= log_bin(_as_float(hi))
        while hi - lo > 1:  # log_bin(lo) < k <= log_bin(hi)
            mid = (lo + hi) // 2
            if log_bin(_as_float(mid)) < k:
                lo = mid
            else:
                hi = mid
        lows[k] = _as_float(hi)
    _, e_low = math.frexp(HIST_FLOOR_S)
    _, e_high = math.frexp(lows[HIST_BINS - 1])
    first = np.zeros((e_high - e_low + 1) * _SUBS, dtype=np.int64)
    for e in range(e_low, e_high + 1):
        for j in range(_SUBS):
            least = math.ldexp(0.5 + j / (2 * _SUBS), e)
            first[(e - e_low) * _SUBS + j] = int(np.searchsorted(lows, least, side="right")) - 1
    assert (np.diff(first) <= 1).all()  # a slice narrower than a bin: at most one bin starts inside it
    return lows, first, e_low


def _as_float(bits: int) -> float:
    return float(struct.unpack("<d", struct.pack("<q", bits))[0])


_SUBS = 128  # slices of a binary order of magnitude: each under 0.8 % wide, so at most one bin starts inside one
_SUB_BITS = 7  # 2**7 == _SUBS: a slice is the top 7 bits of the float's mantissa
_BIN_LOW, _BIN_FIRST, _E_LOW = _bin_tables()
# A positive float's bits shifted right by 52 − 7 are its biased exponent, then the top 7 bits of its mantissa: its
# slice, counted from slice 0 of order 2**_E_LOW (math.frexp's exponent e is the biased one less 1022).
_SLICE_BASE = (1022 + _E_LOW) << _SUB_BITS


@step
def hist_bin(seconds: float) -> int:
    """``log_bin(seconds)``, read from the tables by the float's bits (its slice: a shift; frexp was a call
    into numba's helpers, and the bin feeds every answer's count): the same bin at each bin's least latency, at
    the float just below it, and across the range.

    >>> from oncallsim.model.kernel import from_python
    >>> fast = from_python(hist_bin)
    >>> lows = [float(x) for x in _BIN_LOW[1:-1]]
    >>> xs = lows + [math.nextafter(x, 0.0) for x in lows] + [1e-6 * 1.0001**k for k in range(200_000)]
    >>> [x for x in xs if fast(x) != log_bin(x)]
    []
    """
    if seconds <= HIST_FLOOR_S:
        return 0
    if seconds >= _BIN_LOW[HIST_BINS - 1]:
        return HIST_BINS - 1
    b = _BIN_FIRST[(float_bits(seconds) >> (52 - _SUB_BITS)) - _SLICE_BASE]  # no frexp: its slice from its bits
    return b + int(_BIN_LOW[b + 1] <= seconds)  # without a branch: a coin toss for the predictor

"""The minute's response-time histogram as a record carries it: counts at OpenTelemetry's bounds.

The meter keeps response times in 0.1 ms bins (``outcomes.HIST_BIN_S``, timeouts in the last bin, at the
timeout); a record keeps only the cumulative counts at the advisory bucket bounds of OpenTelemetry's
``http.server.request.duration`` and the sum, so that ``http_server_request_duration_seconds`` (docs/metrics.md)
is built from records alone, on every surface, without the engine's insides.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from oncallsim.model.request.outcomes import HIST_BIN_S

__all__ = ["LATENCY_BOUNDS_S", "latency_buckets"]

# OpenTelemetry's advisory bucket boundaries for http.server.request.duration (s); +Inf follows.
LATENCY_BOUNDS_S = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)


def latency_buckets(hist: Any) -> tuple[list[int], float]:
    """The cumulative counts at each bound of ``LATENCY_BOUNDS_S`` and at +Inf (every decided request with a
    response time), and the sum of the response times in seconds: each bin at its middle, a timeout at the
    timeout (the histogram's last bin). Every bound is a whole number of 0.1 ms bins, so a count is exact for the
    times below its bound (a time exactly at a bound counts above it); the sum is within 0.05 ms a request, and the
    same to the bit on every machine."""
    counts = np.asarray(hist, dtype=np.int64)
    answered = counts[:-1]
    timeouts = int(counts[-1])
    timeout_s = (len(counts) - 2) * HIST_BIN_S  # bins = timeout / bin + 1, then the timeouts' bin
    running = np.cumsum(answered)
    out: list[int] = []
    for bound in LATENCY_BOUNDS_S:
        whole_bins = min(round(bound / HIST_BIN_S), len(answered))
        below = int(running[whole_bins - 1]) if whole_bins > 0 else 0
        out.append(below + (timeouts if timeout_s <= bound + 1e-12 else 0))
    out.append(int(running[-1]) + timeouts if len(running) else timeouts)
    # Σ count × (i + ½) bins, summed in whole half-bins: an integer sum is exact in any order, so the figure is the
    # same on every machine (a float dot product goes through BLAS, whose order of additions depends on the CPU).
    half_bins = int((answered * (2 * np.arange(len(answered), dtype=np.int64) + 1)).sum())
    total_s = half_bins * (HIST_BIN_S / 2.0) + timeouts * timeout_s
    return out, total_s

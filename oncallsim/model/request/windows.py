"""Rolling windows of time buckets kept in a ring (the limiter's 100 × 100 ms, throttling's 10 × 300 ms)."""

from __future__ import annotations

from typing import Any

from oncallsim.model.kernel import step

__all__ = ["ring_bucket"]


@step
def ring_bucket(stamps: Any, number: int) -> tuple[int, bool]:
    """The ring slot of time bucket ``number`` (time // bucket width), and whether it held an older bucket that
    the caller must reset (the slot is stamped with ``number`` now)."""
    b = number % len(stamps)
    if stamps[b] != number:
        stamps[b] = number
        return b, True
    return b, False

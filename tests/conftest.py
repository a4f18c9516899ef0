"""Shared helpers for the tests: deterministic, no clocks, no network."""

from __future__ import annotations

import pytest

from oncallsim import Simulation


@pytest.fixture
def quiet_morning() -> Simulation:
    """Free play at 08:00 with the expected traffic (no noise): the reference's opening state."""
    return Simulation("free-play", seed=0, noise=False, clock="08:00")

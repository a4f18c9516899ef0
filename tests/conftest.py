"""Shared helpers for the tests: deterministic, no clocks, no network."""

from __future__ import annotations

import pytest

from oncallsim import Simulation


@pytest.fixture
def quiet_morning() -> Simulation:
    """Free play at 08:00 with the expected traffic (no noise): the reference's opening state."""
    return Simulation("free-play", seed=0, noise=False, clock="08:00")


# Hypothesis explores the same examples on every run (its own seed fixed): a test that fails, fails every
# time, never one CI run in ten. The examples found so far are pinned beside their tests with @example.
from hypothesis import settings as _hypothesis_settings  # noqa: E402

# No deadline: a test never times anything (an example slowed by a loaded machine is not a failure).
_hypothesis_settings.register_profile("deterministic", derandomize=True, print_blob=True, deadline=None)
_hypothesis_settings.load_profile("deterministic")


def pytest_sessionstart(session: pytest.Session) -> None:
    """Both engines (and the chain of services) compiled before the first test, once per version of the compiled
    code, by the preparer process as `make run` does (``oncallsim.readiness``): a cold cache costs its compile
    here, with a progress line, instead of inside whichever test happens to come first."""
    import sys

    from oncallsim.readiness import ensure_ready, print_progress

    ensure_ready(["minute", "request", "chain"], print_progress(sys.stderr))

"""Mulberry32 against the standard algorithm's test vectors, and its distributions by their moments."""

from __future__ import annotations

import math
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oncallsim.model import Mulberry32

VECTORS = {
    1: [0.6270739405881613, 0.002735721180215478, 0.5274470399599522, 0.9810509674716741, 0.9683778982143849],
    42: [0.6011037519201636, 0.44829055899754167, 0.8524657934904099, 0.6697340414393693, 0.17481389874592423],
}


@pytest.mark.parametrize("seed", sorted(VECTORS))
def test_first_five_match_the_standard_algorithm(seed: int) -> None:
    rng = Mulberry32(seed)
    assert [rng.random() for _ in range(5)] == VECTORS[seed]


def _js_mulberry32(seed: int, n: int) -> list[int]:
    """An independent transcription of the JavaScript original, with Math.imul written out."""

    def imul(a: int, b: int) -> int:
        return ((a & 0xFFFFFFFF) * (b & 0xFFFFFFFF)) & 0xFFFFFFFF

    a = seed & 0xFFFFFFFF
    out = []
    for _ in range(n):
        a = (a + 0x6D2B79F5) & 0xFFFFFFFF
        t = a
        t = imul(t ^ (t >> 15), t | 1)
        t = (t ^ ((t + imul(t ^ (t >> 7), t | 61)) & 0xFFFFFFFF)) & 0xFFFFFFFF
        out.append((t ^ (t >> 14)) & 0xFFFFFFFF)
    return out


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_matches_an_independent_transcription(seed: int) -> None:
    rng = Mulberry32(seed)
    assert [rng.next_uint32() for _ in range(20)] == _js_mulberry32(seed, 20)


def test_state_saves_and_restores() -> None:
    rng = Mulberry32(99)
    for _ in range(10):
        rng.random()
    saved = rng.get_state()
    ahead = [rng.random() for _ in range(5)]
    rng.set_state(saved)
    assert [rng.random() for _ in range(5)] == ahead


def test_uniform_stays_in_its_interval() -> None:
    rng = Mulberry32(5)
    draws = [rng.uniform(2.0, 4.0) for _ in range(5000)]
    assert min(draws) >= 2.0 and max(draws) < 4.0
    assert statistics.fmean(draws) == pytest.approx(3.0, abs=0.03)


def test_normal_moments() -> None:
    rng = Mulberry32(7)
    draws = [rng.normal(10.0, 2.0) for _ in range(20000)]
    assert statistics.fmean(draws) == pytest.approx(10.0, abs=0.05)
    assert statistics.stdev(draws) == pytest.approx(2.0, rel=0.03)


def test_exponential_mean_and_positivity() -> None:
    rng = Mulberry32(8)
    draws = [rng.exponential(4.0) for _ in range(20000)]
    assert min(draws) >= 0.0
    assert statistics.fmean(draws) == pytest.approx(0.25, rel=0.03)
    with pytest.raises(ValueError):
        rng.exponential(0.0)


@pytest.mark.parametrize("mean", [0.5, 3.0, 29.0, 75.0, 400.0])
def test_poisson_mean_and_variance(mean: float) -> None:
    rng = Mulberry32(11)
    draws = [rng.poisson(mean) for _ in range(4000)]
    assert statistics.fmean(draws) == pytest.approx(mean, rel=0.05, abs=0.05)
    assert statistics.pvariance(draws) == pytest.approx(mean, rel=0.12, abs=0.1)


def test_poisson_of_zero_is_zero_and_bad_means_are_refused() -> None:
    rng = Mulberry32(1)
    assert rng.poisson(0.0) == 0
    for bad in (-1.0, math.inf, math.nan):
        with pytest.raises(ValueError):
            rng.poisson(bad)


def test_seed_must_be_an_int() -> None:
    with pytest.raises(TypeError):
        Mulberry32(1.5)  # type: ignore[arg-type]

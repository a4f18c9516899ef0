"""The request engine against the formulas, with statistical tolerances from the sample sizes.

Every run is seeded, so each check is deterministic; the tolerances say how far a correct engine may fall
from its formula. "SE" is the batch-means standard error (20 batches for the queue, 10 for the cache and the
database). A 95 % interval is ±2.09 SE; the checks use 3 SE so that a correct engine whose draw order changes
still passes with probability above 99.5 % per check, while the effects they must catch (a wrong queue
discipline, a lost request, a biased service time) are many SE wide: each test shows its own power.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import typer
from scipy import integrate, stats
from typer.testing import CliRunner

from oncallsim.cli_common import guarded
from oncallsim.cli_validate import validate
from oncallsim.model import MODEL_VERSION, InvalidInput
from oncallsim.model.queueing import erlang_c
from oncallsim.verify import oracles
from oncallsim.verify.pipeline import cache_grid, db_grid
from oncallsim.verify.queue import BATCHES, Estimate, run_queue_point


def se(e: Estimate, batches: int = BATCHES) -> float:
    return e.half / float(stats.t.ppf(0.975, batches - 1))


def within(e: Estimate, target: float, k: float = 3.0, batches: int = BATCHES) -> bool:
    return abs(e.value - target) <= k * se(e, batches)


def test_exact_quantile_oracle_matches_the_worked_number_and_a_numeric_convolution() -> None:
    # REQUESTS.md: a = 136, N = 160, S = 75 ms: 345.5 ms exact, 348.6 ms by the minute model's formula.
    lam, s, n = 136 / 0.075, 0.075, 160
    assert oracles.mmn_response_quantile_s(n, lam, s) * 1000 == pytest.approx(345.5, abs=0.05)
    assert oracles.approx_p99_s(n, lam, s) * 1000 == pytest.approx(348.6, abs=0.05)
    # Independently: R = W + service, W = 0 w.p. 1 − C else Exp(Nμ − λ); P(R > x) by quadrature.
    for n, lam, s in ((4, 60.0, 0.05), (16, 288.0, 0.05), (2, 20.0, 0.05)):  # the last: Nμ − λ = μ
        c, mu = erlang_c(lam * s, n), 1 / s
        d = n * mu - lam
        x = oracles.mmn_response_quantile_s(n, lam, s)
        both, _ = integrate.quad(lambda w, x=x, d=d, mu=mu: d * math.exp(-d * w - mu * (x - w)), 0, x)
        tail = (1 - c) * math.exp(-mu * x) + c * (both + math.exp(-d * x))
        assert tail == pytest.approx(0.01, rel=1e-8)


# (N, ρ, customers): few servers, many, and heavy traffic; about 1 s of simulation each.
POINTS = [(16, 0.7, 1_000_000), (160, 0.9, 2_000_000), (640, 0.95, 3_000_000)]


@pytest.fixture(scope="module")
def queue_points() -> list:
    return [run_queue_point(n, u, c, seed=7 + i) for i, (n, u, c) in enumerate(POINTS)]


def test_wait_probability_tail_and_mean_wait_within_3_se_of_the_formulas(queue_points: list) -> None:
    for q in queue_points:
        assert q.customers >= 0.99 * dict(((n, u), c) for n, u, c in POINTS)[(q.servers, q.utilization)]
        assert within(q.wait_probability, q.erlang_c), q
        assert within(q.wait_exceeds, q.wait_exceeds_formula), q
        assert within(q.mean_wait_s, q.mean_wait_formula_s), q
        assert abs(q.measured_utilization - q.utilization) <= 0.01  # the offered load is the load served
        # power: the intervals are tight enough to tell Erlang C from Erlang C × 1.1 (a 10 % error)
        assert 3 * se(q.wait_probability) < 0.1 * q.erlang_c, q


def test_p99_within_3_se_of_the_exact_quantile_and_not_of_the_approximation(queue_points: list) -> None:
    for q in queue_points:
        assert within(q.p99_s, q.p99_exact_s), q
        assert 3 * se(q.p99_s) < 0.02 * q.p99_exact_s  # ±2 %: the minute model's error is larger at ρ ≥ 0.9
    mid = queue_points[1]  # N = 160, ρ = 0.9: the approximation is 3 % high, well outside the interval
    assert not within(mid.p99_s, mid.p99_approx_s)


def test_cache_hit_ratio_within_3_se_of_the_ttl_formula_with_its_refill_time() -> None:
    # 10 batches of 2 minutes; the refill (lookup → store: CPU 50 ms + 2 reads of 5 ms) costs r·60 ms of hits.
    points = cache_grid(quick=True)
    assert {(c.arrivals_per_s, c.ttl_s) for c in points} >= {(200.0, 300.0), (2500.0, 30.0)}
    for c in points:
        assert within(c.hit, c.formula_refill, batches=10), c
        r = c.arrivals_per_s / 20_000
        assert 0 <= c.formula - c.hit.value <= r * c.refill_s + 3 * se(c.hit, 10), c
    busy = next(c for c in points if c.arrivals_per_s == 2500.0 and c.ttl_s == 30.0)
    assert 3 * se(busy.hit, 10) < 0.001  # tight enough to see the refill's 0.0012


def test_database_query_time_within_3_se_of_mm1() -> None:
    for d in db_grid(quick=True):  # ρ = 0.5 and 0.9, 20 minutes each
        assert abs(d.measured_utilization - d.utilization) <= 0.01
        assert within(d.query_ms, d.formula_ms, batches=10), d
        assert 3 * se(d.query_ms, 10) < 0.05 * d.formula_ms


def _app() -> typer.Typer:
    app = typer.Typer()
    app.command()(guarded(validate))
    return app


def test_quick_report_is_written_with_its_tables_and_plots(tmp_path: Path) -> None:
    out = tmp_path / "validation.md"
    result = CliRunner().invoke(_app(), ["--quick", "--out", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text(encoding="utf-8")
    for heading in ("## Findings", "## 1. Queue only", "## 2. Cache", "## 3. Database", "## 4. Full pipeline"):
        assert heading in text
    assert "| N | ρ | customers | P(wait) | Erlang C |" in text
    assert "| cache-flush | hands-off |" in text and "| surge | textbook |" in text
    assert "FIFO past saturation" in text and "M/G/N" in text
    assert re.search(
        rf"^Generated by `oncallsim validate --quick` on \d{{4}}-\d\d-\d\d under model version {MODEL_VERSION} ",
        text,
        re.M,
    )
    assert "**Kratos's mechanisms against oracles written apart from the engine**: p2c holds within 10 %" in text
    kratos = text.split("## Kratos's mechanisms against oracles", 1)[1].split("## The cliff's chain", 1)[0]
    assert kratos.count("| p2c |") == 4 and "CoDel against RFC 8289" in kratos and "the classic breaker" in kratos
    chain = text.split("## The cliff's chain against the engine", 1)[1].split("**Where an exponential", 1)[0]
    rows = [line for line in chain.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert len(rows) == 3 and all("| yes |" in row for row in rows), rows  # no retries, N = 2, past the cliff
    assert "| 0 of 10 |" in rows[0] and "| 10 of 10 | never (> 10⁹ s) |" in rows[2]
    for name in ("queue", "cache_db", "cache-flush", "surge"):
        png = tmp_path / "images" / "validation" / f"{name}.png"
        assert png.read_bytes()[:4] == b"\x89PNG"
        assert f"images/validation/{name}.png" in text


def test_bad_out_is_one_line_and_exit_2(tmp_path: Path) -> None:
    for bad in (tmp_path / "missing" / "v.md", tmp_path / "v.txt", tmp_path):
        result = CliRunner().invoke(_app(), ["--quick", "--out", str(bad)])
        assert result.exit_code == 2
        assert "--out" in result.output and len(result.output.strip().splitlines()) == 1
    with pytest.raises(InvalidInput, match="does not exist"):
        validate(quick=True, out=tmp_path / "missing" / "v.md")
    assert list(tmp_path.iterdir()) == []

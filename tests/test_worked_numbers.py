"""The worked numbers of MODEL.md §6–7, to 4 significant digits, and the reference's opening table."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from oncallsim import Action, Simulation


def sig4(x: float) -> float:
    return float(f"{x:.4g}")


def flush_minute(*actions: Action) -> dict:
    """The minute of the flush (12:00) in the cache-flush scenario, without noise."""
    sim = Simulation("cache-flush", seed=3, noise=False)
    sim.run(list(actions), until=31)
    return sim.timeline[30].to_dict()


def test_opening_0800(quiet_morning: Simulation) -> None:
    r = quiet_morning.step()
    assert r.clock == "08:00"
    assert r.requests_per_s == 1125.0
    assert sig4(r.cache_hit) == 0.7714
    assert sig4(r.db_utilization) == 0.1929
    assert sig4(r.service_time_ms) == 74.25
    assert sig4(r.erlangs) == 83.53
    assert r.servers == 160
    assert round(r.p99_ms) == 342


def test_flush_at_peak_feature_on() -> None:
    r = flush_minute()
    assert r["clock"] == "12:00" and r["events"][0] == "cache flushed"
    assert r["requests_per_s"] == 1250.0 and r["cache_hit"] == 0.0
    assert sig4(r["db_utilization"]) == 0.9375
    assert sig4(r["query_time_ms"]) == 80.0
    assert sig4(r["service_time_ms"]) == 310.0
    assert sig4(r["erlangs"]) == 387.5
    assert sig4(r["overload_share"]) == sig4(1 - 160 / 387.5) == 0.5871
    assert sig4(r["error_rate"]) == 0.5871


def test_flush_at_peak_feature_off() -> None:
    r = flush_minute(Action(30, "recommendations", False))
    assert sig4(r["db_utilization"]) == 0.625
    assert sig4(r["service_time_ms"]) == 76.67
    assert sig4(r["erlangs"]) == 95.83
    assert r["error_rate"] == 0.0


def test_flush_at_peak_with_warmup() -> None:
    r = flush_minute(Action(30, "warmup"))
    assert r["db_utilization"] == pytest.approx(1.0875, rel=1e-9)  # (3750 + 600)/4000
    assert r["query_time_ms"] == 250.0
    assert sig4(r["overload_share"]) == 0.8439
    assert r["warmup_active"] is True


def test_cache_flush_opens_at_85_percent_hits_at_the_peak() -> None:
    sim = Simulation("cache-flush", seed=0, noise=False)
    sim.run(until=30)
    assert round(sim.timeline[29].cache_hit, 2) == 0.85


def test_cli_reproduces_the_reference_opening_table() -> None:
    """MODEL.md §6: 1125 req/s, 10 serving, 0 booting, hit 77 %, DB 19 %, shed 0 %, $4.00/h, burn 0.0×, age 30 s."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "oncallsim",
            "run",
            "free-play",
            "--clock",
            "08:00",
            "--minutes",
            "1",
            "--no-noise",
            "--format",
            "jsonl",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1
    r = json.loads(lines[0])
    assert f"{r['burn_1h']:.1f}" == "0.0"
    assert round(r["requests_per_s"]) == 1125
    assert (r["serving"], r["booting"]) == (10, 0)
    assert f"{r['cache_hit']:.0%}" == "77%"
    assert f"{r['db_utilization']:.0%}" == "19%"
    assert f"{r['shed_share']:.0%}" == "0%"
    assert f"{r['cost_per_hour']:.2f}" == "4.00"
    assert r["cost_so_far"] == pytest.approx(4.00 / 60)  # the table's $0.00 is before the first minute
    assert r["mean_age_s"] == 30.0
    assert r["bad_build_share"] == 0.0
    assert r["recommendations_available"] == 1.0

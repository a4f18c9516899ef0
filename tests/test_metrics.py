"""Runs as Prometheus metrics: every field named once, the names linted by promtool, the export backfilled into
a real Prometheus and answered through its API against the records themselves."""

from __future__ import annotations

import importlib.util
import math
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from oncallsim import Simulation
from oncallsim.cli import app
from oncallsim.metrics import Accumulator, current_text, openmetrics_export, parse_start
from oncallsim.metrics.grafana import queries
from oncallsim.metrics.names import METRICS, NOT_EXPORTED, markdown_table
from oncallsim.model import InvalidInput
from oncallsim.model.fields import EXTRA_SCHEMA, RECORD_SCHEMA
from oncallsim.model.request.histogram import LATENCY_BOUNDS_S, latency_buckets
from oncallsim.model.request.outcomes import HIST_BIN_S
from tests.prometheus import PROMTOOL, prometheus_server, query, require_prometheus

ROOT = Path(__file__).resolve().parent.parent
runner = CliRunner()


def test_every_numeric_field_is_a_metric_or_says_why_not() -> None:
    covered = {f for m in METRICS for f in m.fields}
    for field in (*RECORD_SCHEMA, *EXTRA_SCHEMA):
        if field.role == "label":
            continue
        assert (field.name in covered) != (field.name in NOT_EXPORTED), field.name
    names = [m.name for m in METRICS]
    assert len(names) == len(set(names))
    for m in METRICS:
        assert m.name.startswith(("oncallsim_", "http_server_")), m.name
        assert not m.name.endswith("_total"), m.name
        assert not m.unit or m.name.endswith("_" + m.unit), m.name
        assert not any(m.name.endswith(s) for s in ("_ms", "_percent", "_per_s")), m.name


def test_docs_list_every_metric() -> None:
    text = (ROOT / "docs" / "metrics.md").read_text()
    assert markdown_table() in text, "docs/metrics.md's table differs from metrics/names.py: regenerate it"


def test_histogram_counts_against_a_direct_count() -> None:
    """The record's buckets against counting the response times themselves (binned as the meter bins them)."""
    rng = np.random.default_rng(5)
    timeout = 2.0
    hist = np.zeros(round(timeout / HIST_BIN_S) + 2, dtype=np.int64)
    times = np.concatenate([rng.exponential(0.08, 5000), rng.uniform(0.2, 1.9, 300)])
    for t in times:
        hist[min(int(t / HIST_BIN_S), len(hist) - 2)] += 1
    hist[-1] += 7  # seven timeouts, at the timeout
    counts, total = latency_buckets(hist)
    binned = np.floor(times / HIST_BIN_S) * HIST_BIN_S  # a time's bin's lower edge: below a bound or not
    for bound, count in zip(LATENCY_BOUNDS_S, counts, strict=False):
        assert count == int((binned < bound - 1e-12).sum()) + (7 if bound >= timeout else 0), bound
    assert counts[-1] == len(times) + 7
    assert abs(total - (times.sum() + 7 * timeout)) <= len(times) * HIST_BIN_S / 2 + 1e-9


def _lint(text: str) -> None:
    require_prometheus()
    done = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("engine", ["minute", "request"])
def test_promtool_lints_the_live_text(engine: str) -> None:
    sim = Simulation("bad-deploy", seed=4, engine=engine, minutes=12)
    sim.run()
    acc = Accumulator()
    acc.feed(sim.timeline)
    _lint(current_text(acc, "web", openmetrics=False))
    text = current_text(acc, "web")
    assert text.endswith("# EOF\n")
    # the requests by class and cause add up to the record's arrivals, minute by minute
    total = sum(r.requests_per_s * 60.0 for r in sim.timeline)
    counted = sum(
        float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith("http_server_requests_total{")
    )
    assert math.isclose(counted, total, rel_tol=1e-9)


def test_start_is_checked() -> None:
    assert parse_start("2026-03-02T09:00:00Z") == datetime(2026, 3, 2, 9, tzinfo=UTC)
    for bad, says in (("tomorrow", "ISO 8601"), ("2026-03-02T09:00:00", "time zone"), ("1900-01-01T00:00Z", "1970")):
        with pytest.raises(InvalidInput, match=says):
            parse_start(bad)


def test_export_command_refuses_a_bad_service(tmp_path: Path) -> None:
    result = runner.invoke(app, ["export", "nothing.json", "--openmetrics", str(tmp_path / "x"), "--service", "a b"])
    assert result.exit_code == 2
    assert "service: must be 1 to 64 letters" in result.output


def test_export_backfills_into_a_real_prometheus(tmp_path: Path) -> None:
    """`oncallsim export` → `promtool tsdb create-blocks-from openmetrics` → a Prometheus on 127.0.0.1 answers
    PromQL with the records' own numbers."""
    require_prometheus()
    sim = Simulation("bad-deploy", seed=4, minutes=60)
    sim.run()
    run_file = tmp_path / "bad-deploy.json"
    sim.run_file().save(run_file)
    exported = tmp_path / "bad-deploy.om"
    result = runner.invoke(
        app, ["export", str(run_file), "--openmetrics", str(exported), "--start", "2026-03-02T09:00:00Z"]
    )
    assert result.exit_code == 0, result.output
    assert exported.read_text() == openmetrics_export(sim.timeline, parse_start("2026-03-02T09:00:00Z"), "oncallsim")
    storage = tmp_path / "tsdb"
    done = subprocess.run(
        [PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", str(exported), str(storage)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    start = parse_start("2026-03-02T09:00:00Z").timestamp()
    with prometheus_server(storage) as base:
        end = start + 60 * 60
        (errors,) = query(base, 'sum(http_server_requests_total{status_class="5xx"})', end)
        expected = sum(r.admitted_per_s * r.error_rate * 60.0 for r in sim.timeline)
        assert math.isclose(float(errors["value"][1]), expected, rel_tol=1e-9)
        # the SLI over the last 5 minutes against the records' own errors and admitted requests
        ratio = query(
            base,
            'sum(increase(http_server_requests_total{status_class="5xx"}[5m]))'
            ' / sum(increase(http_server_requests_total{cause!="shed"}[5m]))',
            end,
        )
        last = sim.timeline[-5:]
        oracle = sum(r.admitted_per_s * r.error_rate for r in last) / sum(r.admitted_per_s for r in last)
        assert math.isclose(float(ratio[0]["value"][1]), oracle, rel_tol=1e-9)
        # a gauge at the end of minute 30 is minute 30's record
        (burn,) = query(base, 'oncallsim_burn_rate{window="1h"}', start + 31 * 60)
        assert math.isclose(float(burn["value"][1]), sim.timeline[30].burn_1h, rel_tol=1e-12)
        (page,) = query(base, "max_over_time(oncallsim_page_firing[1h])", end)
        assert float(page["value"][1]) == float(any(r.page_firing for r in sim.timeline))


def test_the_dashboard_and_the_rules_name_only_metrics_that_exist() -> None:
    import re

    spec = importlib.util.spec_from_file_location("update_dashboard", ROOT / "scripts" / "update_dashboard.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert (ROOT / "examples" / "grafana" / "oncallsim.json").read_text() == module.text(), (
        "examples/grafana/oncallsim.json is out of date: python scripts/update_dashboard.py"
    )
    known = {m.sample_name for m in METRICS} | {
        m.name + part for m in METRICS if m.kind == "histogram" for part in ("_bucket", "_sum", "_count")
    }
    for path in (ROOT / "examples" / "rules").glob("*.yml"):
        for name in re.findall(r"\b(?:oncallsim|http_server)_[a-z0-9_]+", path.read_text()):
            assert name in known, (path.name, name)


def test_every_dashboard_query_answers_on_a_backfilled_request_engine_run(tmp_path: Path) -> None:
    require_prometheus()
    sim = Simulation("bad-deploy", seed=4, engine="request", minutes=20)
    sim.run()
    start = parse_start("2026-03-02T09:00:00Z")
    exported = tmp_path / "run.om"
    exported.write_text(openmetrics_export(sim.timeline, start, "checkout"))
    storage = tmp_path / "tsdb"
    done = subprocess.run(
        [PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", str(exported), str(storage)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    end = start.timestamp() + 20 * 60
    with prometheus_server(storage) as base:
        for expr in queries():
            promql = expr.replace("$service", "checkout").replace("$__rate_interval", "5m")
            assert query(base, promql, end), promql
        # the histogram's count is the requests answered or timed out: the record's own histogram total
        (count,) = query(base, "http_server_request_duration_seconds_count", end)
        assert float(count["value"][1]) == sum(r.extras["latency_buckets"][-1] for r in sim.timeline if r.extras)

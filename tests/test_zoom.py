"""Zoom into a minute: either engine's runs, re-simulated request by request from the minute's record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oncallsim import InvalidInput, Simulation
from oncallsim.cli import app
from oncallsim.zoom import zoom_run


@pytest.fixture(scope="module", params=["minute", "request"])
def run(request: pytest.FixtureRequest) -> Simulation:
    sim = Simulation("bad-deploy", seed=2, minutes=40, engine=request.param)
    sim.run()
    return sim


def test_a_stable_minute_zooms_to_its_own_numbers(run: Simulation) -> None:
    minute = 30  # the bad build is live: errors of their own cause
    z = zoom_run(run, minute)
    r = run.timeline[minute]
    assert z.source_engine == run.engine.name and z.warmed_up
    n = r.requests_per_s * 60
    assert z.measured["requests_per_s"] == pytest.approx(r.requests_per_s, abs=1 / 60)
    # binomial tolerances: 4 standard errors of a share over the minute's requests
    for field in ("cache_hit", "error_rate"):
        p = getattr(r, field)
        assert abs(z.measured[field] - p) <= 4 * (p * (1 - p) / n) ** 0.5 + 1e-9, field
    assert z.measured["p50_ms"] <= z.measured["p99_ms"] <= z.measured["p999_ms"] <= z.timeout_ms
    assert sum(z.histogram_counts) + z.timeouts == pytest.approx(n * (1 - r.shed_per_s / r.requests_per_s), rel=0.02)
    assert 350 <= len(z.samples) <= 450 and {s["outcome"] for s in z.samples} <= {"ok", "bad_build", "pending"}
    assert len(z.instances["served"]) == r.serving and len(z.seconds["arrivals"]) == 60


def test_the_opening_minute_zooms_too(run: Simulation) -> None:
    z = zoom_run(run, 0)  # its warm-up minute comes before the run's first: the zoom keeps its own clock
    r = run.timeline[0]
    assert z.warmed_up and z.timeouts == 0 and z.measured["error_rate"] == pytest.approx(r.error_rate, abs=0.01)
    assert z.measured["cache_hit"] == pytest.approx(r.cache_hit, abs=0.01) and max(z.seconds["queue"]) < 50


def test_zoom_is_reproducible(run: Simulation) -> None:
    assert zoom_run(run, 12).to_dict() == zoom_run(run, 12).to_dict()


def test_a_minute_outside_the_run_is_refused(run: Simulation) -> None:
    for bad in (-1, 40, 10**6):
        with pytest.raises(InvalidInput) as err:
            zoom_run(run, bad)
        assert err.value.field == "minute" and "0 to 39" in str(err.value)


def test_cli_writes_json_and_an_offline_page(tmp_path: Path) -> None:
    runner = CliRunner()
    saved = tmp_path / "run.json"
    done = runner.invoke(
        app, ["run", "surge", "--minutes", "20", "--engine", "request", "--save-run", str(saved), "--format", "csv"]
    )
    assert done.exit_code == 0, done.output
    page, data = tmp_path / "zoom.html", tmp_path / "zoom.json"
    done = runner.invoke(app, ["zoom", str(saved), "--minute", "7", "--html", str(page), "--json", str(data)])
    assert done.exit_code == 0, done.output
    assert "minute 7" in done.output and "p99" in done.output
    z = json.loads(data.read_text())
    assert z["minute"] == 7 and z["source_engine"] == "request" and len(z["histogram_counts"]) == 80
    html = page.read_text()
    assert "Plotly.newPlot" in html and '<script src="http' not in html and "Sampled requests" in html


def test_cli_bad_minute_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    runner = CliRunner()
    saved = tmp_path / "run.json"
    assert (
        runner.invoke(app, ["run", "surge", "--minutes", "5", "--save-run", str(saved), "--format", "csv"]).exit_code
        == 0
    )
    page = tmp_path / "zoom.html"
    done = runner.invoke(app, ["zoom", str(saved), "--minute", "5", "--html", str(page)])
    assert done.exit_code == 2
    assert done.output.strip().splitlines() == ["error: --minute: must be a minute of the run, 0 to 4; got 5"]
    assert not page.exists()


def test_the_zoom_page_carries_the_console_s_diagram_for_the_minute_and_its_seconds(run: Simulation) -> None:
    """The served page links the console's own diagram.js (no copy) with the data in a data attribute and no
    inline script (its Content Security Policy); the offline file inlines the same scripts."""
    import html
    import re

    from oncallsim.zoom.html import diagram_data, render_zoom_html

    z = zoom_run(run, 30)
    data = diagram_data(z)
    r = run.timeline[30]
    assert len(data["seconds"]) == 60 and data["clock"] == r.clock
    assert data["minute"]["serving"] == r.serving and data["minute"]["capacity_per_s"] == r.capacity_per_s
    assert [s["requests_per_s"] for s in data["seconds"]] == z.seconds["arrivals"]
    assert all(0.0 <= s["utilization"] <= 1.0 for s in data["seconds"])
    served = render_zoom_html(z, served=True)
    scripts = re.findall(r"<script([^>]*)>", served)
    assert all("src=" in attrs or 'type="application/json"' in attrs for attrs in scripts)
    assert [re.search(r'src="([^"]+)"', a).group(1) for a in scripts if "src=" in a] == [  # type: ignore[union-attr]
        "/vendor/plotly.min.js",
        "/static/js/i18n.js",
        "/static/js/diagram.js",
        "/static/js/zoom_page.js",
    ]
    attribute = re.search(r'data-diagram="([^"]*)"', served)
    assert attribute is not None and json.loads(html.unescape(attribute.group(1))) == json.loads(json.dumps(data))
    assert served.count('class="instance') == r.serving
    offline = render_zoom_html(z)
    assert "window.diagram = { show };" in offline and "/static/js/" not in offline


def test_a_retry_storm_minute_zooms_with_its_retries_and_its_slow_database() -> None:
    """The record carries the request engine's settings and the brownout: the zoom retries as the run's clients
    did and reads from a database as slow as the run's was (seed 3: the brownout is 10:20–10:22, 6.4× slower)."""
    from oncallsim.zoom.minute import zoom_record

    sim = Simulation("retry-storm", seed=3, minutes=23)
    sim.run()
    record = sim.timeline[21]
    extras = record.extras or {}
    assert extras["settings"]["retries"] == 3 and extras["settings"]["retry_backoff"] == "none"
    assert extras["db_slowdown"] == pytest.approx(round(sim.plan.brownouts[0][2] * 100) / 100)
    assert sim.timeline[10].extras["db_slowdown"] == 1.0  # before it
    z = zoom_record(record, sim.params, sim.seed, "request")
    assert z.measured["attempts_per_s"] > 1.5 * z.measured["admitted_per_s"]  # its clients retried
    # the same record without what this change keeps: no retries, the database at its own speed
    bare = record._replace(extras={k: v for k, v in extras.items() if k not in ("settings", "db_slowdown")})
    plain = zoom_record(bare, sim.params, sim.seed, "request")
    assert plain.measured["attempts_per_s"] == pytest.approx(plain.measured["admitted_per_s"])
    assert z.measured["query_time_ms"] > 4 * plain.measured["query_time_ms"]
    # and its page says so
    from oncallsim.zoom.html import render_zoom_html

    page = " ".join(render_zoom_html(z).split())
    assert "The database is in a brownout: every read takes 6.37× as long." in page
    assert "In force: the p2c balancer; FIFO queues; up to 3 retries per request; retried at once." in page
    assert "in a brownout" not in " ".join(render_zoom_html(plain).split())

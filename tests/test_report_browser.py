"""The HTML report opens in real headless Chromium with no network and draws its charts."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlparse

import pytest
from typer.testing import CliRunner

from oncallsim import Action, Simulation
from oncallsim.cli import app
from tests.browser import chromium_page

# Wall-clock pacing (a browser at 16×, latency bounds): runs alone, after the parallel part of `make test`.
pytestmark = pytest.mark.serial


def test_html_report_is_self_contained_and_draws(tmp_path: Path) -> None:
    sim = Simulation("cache-flush", seed=6)
    sim.run([Action(31, "recommendations", False), Action(34, "warmup"), Action(70, "recommendations", True)])
    run_file, html = tmp_path / "run.json", tmp_path / "report.html"
    sim.run_file().save(run_file)
    done = CliRunner().invoke(app, ["debrief", str(run_file), "--html", str(html)])
    assert done.exit_code == 0, done.output
    requests: list[str] = []
    errors: list[str] = []
    with chromium_page() as page:
        page.on("request", lambda r: requests.append(r.url))
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(html.as_uri())
        page.wait_for_selector("#debrief-chart .main-svg")
        assert page.locator("#debrief-chart .subplot").count() >= 1
        titles = page.eval_on_selector_all("#debrief-chart .annotation-text", "els => els.map(e => e.textContent)")
        assert any("Burn rate" in t for t in titles) and any("Error budget left" in t for t in titles)
        assert page.locator("#debrief-chart .scatterlayer .trace").count() >= 20  # run + counterfactual lines
        assert page.locator("#scorecard tr").count() == 6  # a header and five objectives (users turned away too)
        assert page.locator("#score").inner_text().isdigit()
        assert "hands-off" in page.locator("#counterfactuals").inner_text()
        if Path("artifacts").is_dir():
            page.screenshot(path="artifacts/debrief-report.png", full_page=True)
    assert errors == []
    for url in requests:
        parsed = urlparse(url)
        assert parsed.scheme in {"file", "data", "blob"} or parsed.hostname in {"127.0.0.1", "localhost"}, url


def test_a_hostile_title_runs_no_script_in_the_report(tmp_path: Path) -> None:
    hostile = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>'
    spec = tmp_path / "hostile.toml"
    spec.write_text(
        f'id = "hostile"\nversion = 1\ntitle = {json.dumps(hostile)}\nsummary = "s"\nbriefing = "b"\n'
        'start = "10:00"\nminutes = 20\n'
    )
    run_file, html = tmp_path / "run.json", tmp_path / "report.html"
    done = CliRunner().invoke(app, ["run", str(spec), "--save-run", str(run_file), "--format", "csv"])
    assert done.exit_code == 0, done.output
    done = CliRunner().invoke(app, ["debrief", str(run_file), "--html", str(html)])
    assert done.exit_code == 0, done.output
    with chromium_page() as page:
        page.goto(html.as_uri())
        page.wait_for_selector("#debrief-chart .main-svg")
        assert page.evaluate("() => window.pwned === undefined")
        assert page.locator("h1").inner_text().endswith(hostile)  # shown as text, not markup

"""Pages as PagerDuty Events v2, posted to a local receiver: a trigger when the built-in page fires, a resolve
with the same dedup_key when it clears; a team's own rules' pages from ``oncallsim alerts``; nothing without a
configured URL; the setting checked."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from oncallsim.alerting.pagerduty import PagerConfig, check_url
from oncallsim.cli import app as cli
from oncallsim.model import InvalidInput
from oncallsim.simulation import RunFile, Simulation
from oncallsim.web.app import create_app
from tests.prometheus import require_prometheus, wait_for

BASE = "http://testserver"
KEY = "R0123456789abcdefR0123456789abcd"


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A PagerDuty stand-in on 127.0.0.1: keeps what it is sent, answers 202 as PagerDuty does."""
    got: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            got.append({"path": self.path, "type": self.headers["Content-Type"], **json.loads(body)})
            self.send_response(202)
            self.end_headers()
            self.wfile.write(b'{"status":"success"}')

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v2/enqueue", got
    finally:
        server.shutdown()
        server.server_close()


def test_the_page_triggers_then_resolves(tmp_path: Path, receiver: tuple[str, list[dict[str, Any]]]) -> None:
    url, got = receiver
    config = PagerConfig.checked(url, KEY)
    with TestClient(
        create_app(tmp_path / "runs.sqlite3", allow_hosts=["testserver"], pagerduty=config),
        base_url=BASE,
        headers={"Origin": BASE},
    ) as client:
        run = client.post("/api/runs", json={"scenario": "bad-deploy", "seed": 4, "minutes": 60, "paused": True})
        run_id = run.json()["id"]
        for step in range(60):
            if step == 30:
                assert client.post(f"/api/runs/{run_id}/actions", json={"control": "rollback"}).status_code == 200
            assert client.post(f"/api/runs/{run_id}/control", json={"type": "step"}).status_code == 200
        exported = client.get(f"/api/runs/{run_id}/runfile")
    replayed = Simulation.replay(RunFile.model_validate(exported.json()))
    firing = [r.minute for r in replayed.timeline if r.page_firing]
    began, cleared = firing[0], firing[-1] + 1
    assert firing == list(range(began, cleared)) and cleared < 60  # one page, over before the end
    wait_for(lambda: len(got) == 2, "the trigger and the resolve")  # the app closed: every event was posted
    trigger, resolve = got
    assert trigger["event_action"] == "trigger" and resolve["event_action"] == "resolve"
    assert trigger["dedup_key"] == resolve["dedup_key"] == f"oncallsim-{run_id}-page-{began}"
    assert trigger["routing_key"] == resolve["routing_key"] == KEY
    assert trigger["path"] == "/v2/enqueue" and trigger["type"] == "application/json"
    payload = trigger["payload"]
    assert payload["severity"] == "critical" and payload["source"] == f"oncallsim run {run_id}"
    assert payload["custom_details"]["simulated_minute"] == began
    assert payload["custom_details"]["burn_1h"] == replayed.timeline[began].burn_1h


def test_nothing_is_sent_without_a_url(tmp_path: Path) -> None:
    with TestClient(create_app(tmp_path / "runs.sqlite3", allow_hosts=["testserver"])) as client:
        assert client.app.state.pager is None  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("ftp://example.com/x", "http:// or https://"),
        ("https:///nohost", "with a host"),
        ("https://user:pw@example.com/", "no user, password"),
        ("https://example.com:99999/", "bad port"),
        ("https://example.com/" + "x" * 3000, "at most 2048"),
    ],
)
def test_the_url_setting_is_checked(url: str, says: str) -> None:
    with pytest.raises(InvalidInput, match=says):
        check_url(url)


def test_serve_refuses_a_bad_setting_in_one_line() -> None:
    runner = CliRunner()
    for args, says in (
        (["--pagerduty-url", "ftp://x"], "pagerduty-url: must be an http:// or https:// URL"),
        (["--pagerduty-url", "https://example.com/v2/enqueue"], "go together"),
        (["--pagerduty-url", "https://example.com/", "--pagerduty-routing-key", "a b"], "1 to 64 letters"),
    ):
        result = runner.invoke(cli, ["serve", "--port", "1", *args])
        assert result.exit_code == 2 and says in result.output and len(result.output.strip().splitlines()) == 1, (
            result.output
        )


def test_a_rooms_run_pages_through_the_same_pager(tmp_path: Path, receiver: tuple[str, list[dict[str, Any]]]) -> None:
    url, _ = receiver
    app = create_app(tmp_path / "runs.sqlite3", allow_hosts=["testserver"], pagerduty=PagerConfig.checked(url, KEY))
    with TestClient(app, base_url=BASE, headers={"Origin": BASE}) as client:
        room = client.post("/api/gameday/rooms", json={"scenario": "bad-deploy", "seed": 4, "minutes": 30}).json()
        assert app.state.rooms.rooms[room["id"]].live.pager is app.state.pager is not None


def test_oncallsim_alerts_sends_your_rules_pages_in_simulated_order(
    tmp_path: Path, receiver: tuple[str, list[dict[str, Any]]]
) -> None:
    """A surge that pages and recovers: each paging rule's trigger at its firing minute and its resolve at its
    resolved minute (those promtool gave, written by --json), in simulated order; the ticket pages no one."""
    require_prometheus()
    url, got = receiver
    rules = Path(__file__).resolve().parent.parent / "examples" / "rules" / "slo-99.9.yml"
    out = tmp_path / "alerts.json"
    args = ["alerts", str(rules), "--scenario", "surge", "--first-seed", "2", "--json", str(out)]
    result = CliRunner().invoke(cli, [*args, "--pagerduty-url", url, "--pagerduty-routing-key", KEY])
    wrong = CliRunner().invoke(cli, [*args, "--pagerduty-url", "ftp://x", "--pagerduty-routing-key", KEY])
    assert wrong.exit_code == 2 and "pagerduty-url: must be an http:// or https:// URL" in wrong.output
    assert result.exit_code == 0, result.output
    (run,) = json.loads(out.read_text())["runs"]
    expected = []
    for e in run["alerts"]:
        if e["page"] and e["firing"] is not None:
            dedup = f"oncallsim-alerts-0-{e['rule'].replace(' (', '-').rstrip(')')}-{e['firing']}"
            expected.append((e["firing"], "trigger", dedup))
            if e["resolved"] is not None:
                expected.append((e["resolved"], "resolve", dedup))
    paged = {e["rule"] for e in run["alerts"] if e["page"] and e["firing"] is not None}
    assert paged == {"HighErrorRate (page)", "OncallsimAvailabilitySLO (page)"}  # the ticket pages no one
    assert [action for _, action, _ in expected].count("resolve") == 2  # the surge passes: both pages resolve
    expected.sort(key=lambda x: x[0])
    assert [(e["event_action"], e["dedup_key"]) for e in got] == [(a, d) for _, a, d in expected]
    triggers = [e for e in got if e["event_action"] == "trigger"]
    assert all(e["routing_key"] == KEY and e["payload"]["severity"] == "critical" for e in triggers)
    assert triggers[0]["payload"]["custom_details"]["simulated_minute"] == expected[0][0]
    assert f"sent {len(expected)} of {len(expected)} PagerDuty event(s)" in result.output

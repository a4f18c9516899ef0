"""The console against a hostile page, a careless user and the network (issue 13, findings 1-3, 8-10).

In process (Starlette's TestClient runs the real app and its middleware), plus one real uvicorn server on
loopback for the WebSocket handshake and the access token as a browser meets them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from oncallsim import Simulation
from oncallsim.debrief.html import render_html
from oncallsim.scenarios.registry import scenario_from_text
from oncallsim.web.app import create_app
from oncallsim.web.security import allowed_hosts_for

BASE = "http://testserver"
SAME = {"Origin": BASE}
SCENARIO = 'id = "mine"\nversion = 1\ntitle = "Mine"\nsummary = "s"\nbriefing = "b"\nstart = "10:00"\nminutes = 30\n'


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(tmp_path / "runs.sqlite3", allow_hosts=["testserver"]), base_url=BASE) as c:
        yield c


def new_run(client: TestClient, **body: Any) -> str:
    response = client.post("/api/runs", json={"scenario": "bad-deploy", "seed": 7, "speed": 16, **body})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def assert_error(response: Any, status: int, field: str) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error", "field"} and field in body["field"], body


# --- finding 1: the web never reads a path ----------------------------------------------------------------


@pytest.mark.parametrize("ref", ["/dev/zero", "/etc/passwd", "/etc/shadow", "../../etc/hosts", "x.toml", "/tmp"])
def test_scenario_paths_are_refused_on_the_web(client: TestClient, ref: str) -> None:
    response = client.post("/api/runs", json={"scenario": ref, "seed": 1})
    assert_error(response, 422, "scenario")
    assert "unknown scenario" in response.json()["error"] and "No such file" not in response.text
    form = client.post("/runs", data={"scenario": ref, "seed": "1"}, headers=SAME)
    assert form.status_code == 422 and "unknown scenario" in form.text


def test_a_scenario_is_sent_as_content(client: TestClient) -> None:
    response = client.post("/api/runs", json={"scenario": "mine", "scenario_toml": SCENARIO, "seed": 1, "paused": True})
    assert response.status_code == 201, response.text
    too_big = client.post("/api/runs", json={"scenario": "mine", "scenario_toml": SCENARIO + "#" * 70_000})
    assert too_big.status_code in (413, 422)


def run_file_with(**changes: Any) -> bytes:
    sim = Simulation("bad-deploy", seed=3)
    sim.run(until=20)
    data = json.loads(sim.run_file().model_dump_json())
    data.update(changes)
    return json.dumps(data).encode()


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"scenario": "/dev/zero"}, "scenario"),
        ({"scenario": "/etc/passwd.toml"}, "scenario"),
        ({"played": 10_000}, "played"),
        ({"actions": [{"minute": 25, "control": "rollback"}]}, "actions"),
        ({"seed": True}, "seed"),
        ({"model_version": "0"}, "model_version"),
    ],
)
def test_tampered_run_files_are_refused(client: TestClient, changes: dict[str, Any], field: str) -> None:
    response = client.post("/api/runs/import", files={"file": ("run.json", run_file_with(**changes))}, headers=SAME)
    assert_error(response, 422, field)


def test_a_run_file_upload_is_capped(client: TestClient) -> None:
    response = client.post("/api/runs/import", files={"file": ("big.json", b" " * (6 * 1024 * 1024))}, headers=SAME)
    assert_error(response, 413, "body")


def test_cli_reads_a_path_only_when_named_and_never_a_device(tmp_path: Path) -> None:
    run = [sys.executable, "-m", "oncallsim", "run", "--minutes", "2"]
    device = subprocess.run([*run, "/dev/zero"], capture_output=True, text=True, timeout=60)
    assert device.returncode == 2 and "not a regular file" in device.stderr and "Traceback" not in device.stderr
    path = tmp_path / "mine.toml"
    path.write_text(SCENARIO)
    ok = subprocess.run([*run, str(path)], capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr
    runfile = tmp_path / "run.json"
    runfile.write_bytes(run_file_with(scenario="/dev/zero"))
    debrief = subprocess.run(
        [sys.executable, "-m", "oncallsim", "debrief", str(runfile)], capture_output=True, text=True, timeout=60
    )
    assert debrief.returncode == 2 and "unknown scenario" in debrief.stderr and "Traceback" not in debrief.stderr


# --- finding 2: cross-origin protection ---------------------------------------------------------------------


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8000", "localhost.evil.example", ""])
def test_a_foreign_host_is_refused(client: TestClient, host: str) -> None:
    for path in ("/", "/api/scenarios", "/api/runs"):
        assert_error(client.get(path, headers={"Host": host}), 400, "host")


def test_host_allow_list_is_derived_from_the_bind_address() -> None:
    assert allowed_hosts_for("127.0.0.1") >= {"127.0.0.1", "localhost"}
    assert "ops.example" in allowed_hosts_for("127.0.0.1", ["ops.example"])
    assert "evil.example" not in allowed_hosts_for("0.0.0.0")


@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://testserver.evil.example", "file://"])
def test_a_foreign_origin_cannot_open_the_socket(client: TestClient, origin: str) -> None:
    run_id = new_run(client, paused=True)
    with pytest.raises(WebSocketDisconnect) as info:
        with client.websocket_connect(f"/api/runs/{run_id}/ws", headers={"Origin": origin}):
            pass
    assert info.value.code == 4403
    with client.websocket_connect(f"/api/runs/{run_id}/ws", headers=SAME) as ws:
        assert ws.receive_json()["type"] == "snapshot"


def test_json_posts_need_application_json(client: TestClient) -> None:
    body = json.dumps({"scenario": "bad-deploy", "seed": 1})
    for ctype in ("text/plain", "application/x-www-form-urlencoded", "", "application/jsonx"):
        response = client.post("/api/runs", content=body, headers={"Content-Type": ctype})
        assert response.status_code in (403, 415), (ctype, response.text)
        assert "field" in response.json()
    assert client.get("/api/runs").json() == []  # nothing was started


def test_a_delete_needs_no_body_and_keeps_the_origin_rules(client: TestClient) -> None:
    """DELETE /api/runs/{id} as curl or fetch() sends it, no body and no Content-Type: accepted. A foreign
    Origin or Sec-Fetch-Site is still refused, and a DELETE that sends a body must say it is JSON."""
    first, second, third = (new_run(client, paused=True) for _ in range(3))
    for headers in ({"Origin": "http://evil.example"}, {"Origin": "null"}, {"Sec-Fetch-Site": "cross-site"}):
        assert_error(client.delete(f"/api/runs/{first}", headers=headers), 403, "origin")
    text = client.request("DELETE", f"/api/runs/{first}", content=b"{}", headers={**SAME, "Content-Type": "text/plain"})
    assert_error(text, 415, "content-type")
    assert {first, second, third} <= {r["id"] for r in client.get("/api/runs").json()}
    bare = client.delete(f"/api/runs/{first}")  # no Content-Type, no Content-Length
    assert bare.status_code == 200 and bare.json() == {"deleted": first}, bare.text
    same = client.delete(f"/api/runs/{second}", headers={**SAME, "Content-Length": "0"})
    assert same.status_code == 200 and same.json() == {"deleted": second}, same.text
    assert client.request("DELETE", f"/api/runs/{third}", json={}).status_code == 200  # with a JSON body, as before
    assert_error(client.delete(f"/api/runs/{first}"), 422, "run")  # gone
    assert not {first, second, third} & {r["id"] for r in client.get("/api/runs").json()}


def test_a_content_length_is_ascii_digits(client: TestClient) -> None:
    """HTTP's digits: "³" is a digit to str.isdigit() (and int() fails on it), so it is refused like "1e3"."""
    for length in ("³".encode("latin-1"), "١٢".encode(), b"-1", b"1e3"):
        headers = {"Content-Type": "application/json", "Content-Length": length}
        assert_error(client.post("/api/runs", content=b"", headers=headers), 400, "body")


def test_cross_site_posts_are_refused(client: TestClient) -> None:
    run_id = new_run(client, paused=True)
    for headers in ({"Origin": "http://evil.example"}, {"Origin": "null"}, {"Sec-Fetch-Site": "cross-site"}):
        response = client.post(f"/api/runs/{run_id}/actions", json={"control": "rollback"}, headers=headers)
        assert_error(response, 403, "origin")
        form = client.post("/runs", data={"scenario": "surge"}, headers=headers)
        assert_error(form, 403, "origin")
    assert client.get(f"/api/runs/{run_id}").json()["actions"] == []


def test_a_form_without_origin_is_refused(client: TestClient) -> None:
    assert_error(client.post("/runs", data={"scenario": "surge", "seed": "1"}), 403, "origin")
    assert_error(client.post("/runs/import", files={"file": ("r.json", run_file_with())}), 403, "origin")
    ok = client.post("/runs", data={"scenario": "surge", "seed": "1"}, headers={"Sec-Fetch-Site": "same-origin"})
    assert ok.status_code == 200 and "/runs/" in str(ok.url)


def test_the_access_token(tmp_path: Path) -> None:
    app = create_app(tmp_path / "runs.sqlite3", allow_hosts=["testserver"], token="t" * 24)
    with TestClient(app, base_url=BASE) as client:
        assert_error(client.get("/api/scenarios"), 401, "token")
        assert_error(client.get("/api/scenarios", headers={"Authorization": "Bearer wrong"}), 401, "token")
        assert client.get("/api/scenarios", headers={"Authorization": "Bearer " + "t" * 24}).status_code == 200
        first = client.get("/?token=" + "t" * 24, follow_redirects=False)
        assert first.status_code == 303 and first.headers["location"] == "/"
        assert "HttpOnly" in first.headers["set-cookie"] and "SameSite=Strict" in first.headers["set-cookie"]
        assert client.get("/").status_code == 200  # the cookie now
        with pytest.raises(WebSocketDisconnect):
            with TestClient(app, base_url=BASE).websocket_connect("/api/runs/x/ws"):
                pass


def test_serve_beyond_loopback_warns_and_requires_a_token(tmp_path: Path) -> None:
    from tests.server import free_port

    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "oncallsim", "serve", "--host", "0.0.0.0", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={"XDG_DATA_HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)},
    )
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(3)]
    finally:
        process.terminate()
        process.wait(timeout=10)
    text = "".join(lines)
    assert "warning" in text and "every network interface" in text
    assert re.search(r"\?token=[A-Za-z0-9_-]{20,}", text), text


# --- finding 3: the HTML report escapes everything ---------------------------------------------------------

HOSTILE = "<script>alert(1)</script><img src=x onerror=alert(2)>\"'</title>"


def test_the_html_report_escapes_a_hostile_title(tmp_path: Path) -> None:
    scenario = scenario_from_text(
        SCENARIO.replace('title = "Mine"', f"title = {json.dumps(HOSTILE)}").replace(
            'summary = "s"', f"summary = {json.dumps(HOSTILE)}"
        ),
        "hostile.toml",
    )
    sim = Simulation(scenario, seed=1)
    sim.run()
    from oncallsim.cli_debrief import make_debrief

    report, others = make_debrief(sim, with_runs=True)
    page = render_html(
        report, sim.timeline, sim.plan, sim.params, sim.actions, {name: o.timeline for name, o in others.items()}
    )
    assert "<script>alert(1)" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_pages_escape_a_hostile_scenario_title(client: TestClient) -> None:
    toml = SCENARIO.replace('title = "Mine"', f"title = {json.dumps(HOSTILE)}").replace("minutes = 30", "minutes = 3")
    run_id = client.post("/api/runs", json={"scenario": "mine", "scenario_toml": toml, "seed": 1}).json()["id"]
    with client.websocket_connect(f"/api/runs/{run_id}/ws", headers=SAME) as ws:
        while ws.receive_json()["type"] != "finished":
            pass
    for path in (f"/runs/{run_id}", f"/runs/{run_id}/debrief", "/runs"):
        page = client.get(path).text
        assert "<script>alert(1)" not in page and "<img src=x" not in page, path


# --- findings 8, 9: strict, finite numbers at the edge ------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"seed": True}, "seed"),
        ({"seed": "16"}, "seed"),
        ({"seed": 2**32}, "seed"),
        ({"seed": -1}, "seed"),
        ({"seed": 10**30}, "seed"),
        ({"speed": True}, "speed"),
        ({"speed": "16"}, "speed"),
        ({"speed": 3}, "speed"),
        ({"minutes": True}, "minutes"),
        ({"minutes": 1.5}, "minutes"),
        # a number of any size reaches the core, which names the parameter or control and its range
        ({"overrides": {"boot_delay_min": float("nan")}}, "boot_delay_min"),
        ({"overrides": {"ttl_s": float("inf")}}, "ttl_s"),
        ({"overrides": {"ttl_s": 10**400}}, "ttl_s"),
        ({"clock": "25:00"}, "clock"),
        ({"extra": 1}, "extra"),
    ],
)
def test_loose_values_are_refused(client: TestClient, body: dict[str, Any], field: str) -> None:
    text = json.dumps({"scenario": "bad-deploy", **body})  # NaN and Infinity as Python's json writes them
    response = client.post("/api/runs", content=text, headers={"Content-Type": "application/json"})
    assert response.status_code == 422, response.text
    assert field in response.json()["field"] or field in response.json()["error"], response.json()


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_non_finite_numbers_in_scenario_files_are_refused(value: str) -> None:
    surge = (
        '[[events]]\nkind = "surge"\nonset_between = ["10:05", "10:10"]\n'
        f"peak = {{ low = 2.0, high = {value} }}\nrise_min = {{ low = 5, high = 5 }}\n"
        "decay_min = { low = 5, high = 5 }\n"
    )
    with pytest.raises(ValueError, match="finite"):
        scenario_from_text(SCENARIO + surge, "nan.toml")
    with pytest.raises(ValueError, match="finite"):
        scenario_from_text(SCENARIO + f"budget_start = {value}\n", "nan.toml")


def test_several_surges_are_refused() -> None:
    surge = (
        '[[events]]\nkind = "surge"\nonset_between = ["10:05", "10:10"]\npeak = { low = 2, high = 3 }\n'
        "rise_min = { low = 5, high = 5 }\ndecay_min = { low = 5, high = 5 }\n"
    )
    with pytest.raises(ValueError, match="at most one surge"):
        scenario_from_text(SCENARIO + surge + surge, "two.toml")


def test_strict_types_in_scenario_files() -> None:
    with pytest.raises(ValueError, match="minutes"):
        scenario_from_text(SCENARIO.replace("minutes = 30", 'minutes = "30"'), "s.toml")
    with pytest.raises(ValueError, match="version"):
        scenario_from_text(SCENARIO.replace("version = 1", "version = true"), "s.toml")


@pytest.mark.parametrize("seed", ["4294967296", "-1", "99999999999999999999999", "1e3", "true"])
def test_share_links_with_bad_seeds_are_refused(client: TestClient, seed: str) -> None:
    response = client.get(f"/play?scenario=surge&seed={seed}")
    assert response.status_code == 422 and "seed" in response.text
    assert client.get("/play?scenario=surge&seed=4294967295").status_code == 200


def test_a_form_with_a_bad_speed_gets_the_error_page(client: TestClient) -> None:
    response = client.post("/runs", data={"scenario": "surge", "speed": "fast"}, headers=SAME)
    assert response.status_code == 422 and "speed" in response.text and "<html" in response.text


def test_a_stored_run_of_another_model_version_is_flagged(client: TestClient, tmp_path: Path) -> None:
    import sqlite3

    run_id = new_run(client, paused=True)
    store = client.app.state.store  # type: ignore[attr-defined]
    client.app.state.manager.runs.clear()  # type: ignore[attr-defined]
    with sqlite3.connect(store.path) as db:
        db.execute("UPDATE runs SET model_version = '0.0' WHERE id = ?", (run_id,))
    run = client.get(f"/api/runs/{run_id}").json()["run"]
    assert run["model_version"] == "0.0" and run["current_model"] is False


# --- finding 10: headers, no outside fetch -------------------------------------------------------------------


def test_security_headers_on_every_answer(client: TestClient) -> None:
    for path in ("/", "/model", "/runs", "/api/scenarios", "/static/css/app.css", "/nope"):
        response = client.get(path)
        csp = response.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in csp and "script-src 'self'" in csp, path
        assert response.headers["x-frame-options"] == "DENY"
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["referrer-policy"] == "same-origin"


def test_no_docs_ui_from_a_cdn_but_the_schema_is_there(client: TestClient) -> None:
    assert client.get("/api/docs").status_code == 404
    schema = client.get("/api/openapi.json").json()
    assert "NewRun" in schema["components"]["schemas"] and "ActionBody" in schema["components"]["schemas"]
    for path in ("/", "/model", "/runs"):
        assert not re.search(r"(src|href)=\"https?://", client.get(path).text), path


@pytest.mark.parametrize(
    ("args", "field"), [(["--port", "0"], "--port"), (["--port", "70000"], "--port"), (["--token", "short"], "--token")]
)
def test_serve_refuses_bad_options_in_one_line(args: list[str], field: str) -> None:
    from typer.testing import CliRunner

    from oncallsim.cli import app

    result = CliRunner().invoke(app, ["serve", *args])
    assert result.exit_code == 2 and field in result.output and "Traceback" not in result.output


def test_hostile_input_echoed_in_error_pages_is_escaped(client: TestClient) -> None:
    pages = [
        client.post("/runs", data={"scenario": HOSTILE, "seed": HOSTILE}, headers=SAME),
        client.post("/runs", data={"scenario": "surge", "speed": HOSTILE}, headers=SAME),
        client.get("/play", params={"scenario": HOSTILE, "seed": "1"}),
        client.get("/runs/" + "%3Cscript%3Ealert(1)%3C%2Fscript%3E"),
        client.post("/runs/import", files={"file": (HOSTILE, b"{" + HOSTILE.encode())}, headers=SAME),
    ]
    for page in pages:
        assert page.status_code in (404, 422), page.text[:200]
        assert "<script>alert(1)" not in page.text and "<img src=x" not in page.text


def test_cli_actions_file_is_bounded_and_never_a_device(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from oncallsim.cli import app

    device = CliRunner().invoke(app, ["run", "surge", "--minutes", "2", "--actions", "/dev/zero"])
    assert device.exit_code == 2 and "not a regular file" in device.output
    big = tmp_path / "big.json"
    big.write_text("[" + " " * (5 * 1024 * 1024) + "]")
    too_big = CliRunner().invoke(app, ["run", "surge", "--minutes", "2", "--actions", str(big)])
    assert too_big.exit_code == 2 and "at most" in too_big.output

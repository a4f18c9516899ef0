"""A live run's and a game-day room's /runs/{id}/metrics: the values of the last minute, behind the run's access
rules, scraped by a real Prometheus from a real server."""

from __future__ import annotations

import json
import math
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from oncallsim.simulation import RunFile, Simulation
from oncallsim.web.app import create_app
from tests.prometheus import prometheus_server, query, require_prometheus, wait_for
from tests.server import start_server

BASE = "http://testserver"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    app = create_app(tmp_path / "runs.sqlite3", allow_hosts=["testserver"])
    with TestClient(app, base_url=BASE, headers={"Origin": BASE}) as c:
        yield c


def _values(text: str) -> dict[str, float]:
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def test_a_console_runs_metrics_are_its_last_minute(client: TestClient) -> None:
    run = client.post("/api/runs", json={"scenario": "bad-deploy", "seed": 4, "paused": True}).json()
    for _ in range(3):
        assert client.post(f"/api/runs/{run['id']}/control", json={"type": "step"}).status_code == 200
    response = client.get(f"/runs/{run['id']}/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    values = _values(response.text)
    replayed = Simulation.replay(RunFile.model_validate(client.get(f"/api/runs/{run['id']}/runfile").json()))
    last = replayed.timeline[-1]
    assert len(replayed.timeline) == 3
    assert values['oncallsim_burn_rate{service="oncallsim",window="1h"}'] == last.burn_1h
    assert values['oncallsim_serving_instances{service="oncallsim"}'] == last.serving
    total = sum(v for k, v in values.items() if k.startswith("http_server_requests_total{"))
    assert math.isclose(total, sum(r.requests_per_s * 60 for r in replayed.timeline), rel_tol=1e-9)
    om = client.get(f"/runs/{run['id']}/metrics?service=checkout", headers={"Accept": "application/openmetrics-text"})
    assert om.headers["content-type"].startswith("application/openmetrics-text")
    assert om.text.endswith("# EOF\n") and 'service="checkout"' in om.text
    bad = client.get(f"/runs/{run['id']}/metrics?service=a%20b")
    assert bad.status_code == 422 and "service: must be 1 to 64" in bad.json()["error"]
    assert client.get("/runs/0123456789ab/metrics").status_code == 422


def test_a_rooms_metrics_need_one_of_its_tokens(client: TestClient) -> None:
    room = client.post("/api/gameday/rooms", json={"scenario": "free-play", "seed": 5, "minutes": 30}).json()
    player = room["player_url"].split("#key=", 1)[1]
    refused = client.get(f"/runs/{room['id']}/metrics")
    assert refused.status_code == 422 and refused.json()["field"] == "token"
    assert client.get(f"/runs/{room['id']}/metrics?room_token=nope").status_code == 422
    assert client.get(f"/runs/{room['id']}/metrics", params={"room_token": player}).status_code == 200


def _post(base: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        base + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return dict(json.load(response))


def test_a_real_prometheus_scrapes_a_game_day_room(tmp_path: Path) -> None:
    require_prometheus()
    from websockets.sync.client import connect

    process, base, log = start_server(tmp_path / "runs.sqlite3")
    try:
        room = _post(base, "/api/gameday/rooms", {"scenario": "bad-deploy", "seed": 4, "minutes": 40})
        facilitator = room["facilitator_url"].split("#key=", 1)[1]
        with connect(base.replace("http", "ws") + f"/gameday/{room['id']}/ws", open_timeout=30) as ws:
            ws.send(json.dumps({"type": "join", "token": facilitator}))
            for step in range(12):
                ws.send(json.dumps({"type": "step"}))
                while True:  # the condition: the minute this step computed has been sent
                    message = json.loads(ws.recv(timeout=30))
                    if message.get("type") == "minute" and message["record"]["minute"] == step:
                        break
        config = (
            "global: {scrape_interval: 1s, scrape_timeout: 1s}\n"
            "scrape_configs:\n"
            "- job_name: gameday\n"
            "  honor_labels: true\n"
            f"  metrics_path: /runs/{room['id']}/metrics\n"
            f"  params: {{room_token: ['{facilitator}'], service: [checkout]}}\n"
            f"  static_configs: [{{targets: ['{base.removeprefix('http://')}']}}]\n"
        )
        storage = tmp_path / "prometheus"
        with prometheus_server(storage, config) as prometheus:

            def scraped() -> list[dict[str, Any]]:
                return query(prometheus, 'oncallsim_burn_rate{service="checkout",window="1h"}', time.time())

            (burn,) = wait_for(scraped, "Prometheus to scrape the room")
            exported = _post(base, f"/api/gameday/rooms/{room['id']}/export", {"token": facilitator, "what": "run"})
            replayed = Simulation.replay(RunFile.model_validate(exported))
            assert len(replayed.timeline) == 12
            assert float(burn["value"][1]) == replayed.timeline[-1].burn_1h
            assert burn["metric"]["job"] == "gameday"
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def test_real_time_is_a_speed_of_a_minute_a_minute(client: TestClient) -> None:
    from oncallsim.web.pacing import REALTIME, minute_seconds

    assert minute_seconds(REALTIME) == 60.0 and minute_seconds(4) == 0.25
    run = client.post("/api/runs", json={"scenario": "free-play", "seed": 1, "speed": REALTIME, "paused": True})
    assert run.status_code == 201, run.text
    page = client.get(f"/runs/{run.json()['id']}")
    compact = f'<option value="{REALTIME}" data-minute-ms="60000" selected title="real time (a minute a minute)">1:1<'
    assert compact in page.text  # the console's top bar: every button of a run on one line
    assert ">real time</option>" in client.get("/gameday").text  # roomier lists name it in full
    refused = client.post(f"/api/runs/{run.json()['id']}/control", json={"type": "speed", "value": -1})
    assert refused.status_code == 422 and "0: real time" in refused.json()["error"]

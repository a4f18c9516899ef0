"""The console's zoom: a minute of a run re-simulated request by request, as JSON and as a page."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from oncallsim import Simulation
from oncallsim.web.app import create_app

BASE = "http://testserver"


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    db = tmp_path_factory.mktemp("zoom") / "runs.sqlite3"
    app = create_app(db, allow_hosts=["testserver"])
    with TestClient(app, base_url=BASE, headers={"Origin": BASE}) as c:
        yield c


@pytest.fixture(scope="module", params=["minute", "request"])
def run_id(client: TestClient, request: pytest.FixtureRequest) -> str:
    sim = Simulation("bad-deploy", seed=4, minutes=30, engine=request.param)
    sim.run()
    files = {"file": ("run.json", sim.run_file().model_dump_json(), "application/json")}
    response = client.post("/api/runs/import", files=files)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def test_zoom_json_of_a_played_minute(client: TestClient, run_id: str) -> None:
    response = client.get(f"/api/runs/{run_id}/zoom", params={"minute": 25})
    assert response.status_code == 200, response.text
    z = response.json()
    assert z["minute"] == 25 and z["record"]["minute"] == 25
    assert sum(z["histogram_counts"]) > 1000 and len(z["seconds"]["arrivals"]) == 60
    assert z["measured"]["p50_ms"] <= z["measured"]["p99_ms"] <= z["timeout_ms"]
    assert len(z["samples"]) > 100


@pytest.mark.parametrize("minute", ["30", "-1", "abc", "1e3", "99999999999"])
def test_a_bad_minute_is_a_422_naming_it(client: TestClient, run_id: str, minute: str) -> None:
    response = client.get(f"/api/runs/{run_id}/zoom", params={"minute": minute})
    assert response.status_code == 422
    assert response.json()["field"] == "minute" and response.json()["error"].startswith("minute")


def test_an_unknown_run_is_refused(client: TestClient) -> None:
    response = client.get("/api/runs/nope/zoom", params={"minute": 1})
    assert response.status_code == 422 and response.json()["field"] == "run"
    assert client.get("/runs/nope/zoom", params={"minute": 1}).status_code == 404


def test_zoom_page_loads_plotly_from_the_console_itself(client: TestClient, run_id: str) -> None:
    response = client.get(f"/runs/{run_id}/zoom", params={"minute": 3})
    assert response.status_code == 200
    page = response.text
    assert '<script src="/vendor/plotly.min.js"></script>' in page and "Sampled requests" in page
    assert '<script src="/static/js/zoom_page.js"></script>' in page and "Plotly.newPlot" not in page
    assert "http://" not in page.split("<body>")[0].replace(BASE, "")  # nothing from outside
    bad = client.get(f"/runs/{run_id}/zoom", params={"minute": 31})
    assert bad.status_code == 422 and "minute" in bad.text


def test_the_engines_are_prepared_in_the_background(client: TestClient) -> None:
    """Each engine says whether it is ready, or how far its preparer is (the session prepared both first)."""
    import time

    deadline = time.monotonic() + 300  # a cold machine's preparer compiles the request engine once
    while True:
        listed = client.get("/api/engines").json()
        assert [e["name"] for e in listed] == ["minute", "request", "chain"]
        assert all(e["state"] in ("ready", "preparing", "missing") and e["message"] == "" for e in listed), listed
        assert all(0.0 <= e["share"] <= 1.0 for e in listed)
        if all(e["ready"] for e in listed) or time.monotonic() > deadline:
            break
        time.sleep(0.05)  # polling a condition, not waiting a fixed time
    assert all(e["ready"] and e["state"] == "ready" for e in listed)


def test_the_model_page_says_what_the_minute_hides(client: TestClient) -> None:
    page = client.get("/model").text
    assert 'id="what-the-minute-hides"' in page and "oncallsim validate" in page and "Erlang C" in page

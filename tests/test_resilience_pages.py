"""The pages of issue 11 item 7, in process: the console's Resilience group rendered from the registry, the model
page's section anchors its links land on, a choice control set through the API, and the debrief page of a
request-engine run with its split causes, attempts, wasted work and the mechanism it lacked."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from oncallsim.model import CONTROL_SPECS
from oncallsim.policies.counterfactual import MECHANISMS
from oncallsim.web.labels import RESILIENCE_SECTIONS, resilience_controls
from tests.test_web import console, new_run, receive_until


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with console(tmp_path / "runs.sqlite3") as c:
        yield c


def test_the_group_is_rendered_from_the_registry_and_links_to_the_model_page(client: TestClient) -> None:
    run_id = new_run(client, scenario="flash-crowd", seed=3, paused=True)
    page = client.get(f"/runs/{run_id}").text
    group = resilience_controls("request")
    assert group == [
        n for n, s in CONTROL_SPECS.items() if s.section in RESILIENCE_SECTIONS and s.kind not in ("button", "instance")
    ]
    assert f'data-controls="{" ".join(group)}"' in page
    start = page.index('<details id="resilience"')
    body = page[start : page.index("</details>", start)]
    assert re.findall(r'data-control="([^"]+)"', body) == group
    for name in group:
        assert f'href="/model#{CONTROL_SPECS[name].section}"' in body
    model = client.get("/model").text
    for section in {s.section for s in CONTROL_SPECS.values() if s.section}:
        assert f'id="{section}"' in model, section
    for name in group:
        assert f'id="control-{name}"' in model


def test_a_minute_engine_console_has_no_group(client: TestClient) -> None:
    run_id = new_run(client, scenario="bad-deploy", seed=3, paused=True, engine="minute")
    page = client.get(f"/runs/{run_id}").text
    assert 'id="resilience"' not in page and 'id="chart-goodput"' not in page


def test_a_choice_is_set_by_its_name_and_text_is_refused_elsewhere(client: TestClient) -> None:
    run_id = new_run(client, scenario="flash-crowd", seed=3, paused=True)
    accepted = client.post(f"/api/runs/{run_id}/actions", json={"control": "queue_discipline", "value": "codel"})
    assert accepted.status_code == 200 and accepted.json()["accepted"]["value"] == "codel"
    refused = client.post(f"/api/runs/{run_id}/actions", json={"control": "queue_limit", "value": "200"})
    assert refused.status_code == 422 and "not text" in refused.json()["error"]
    unknown = client.post(f"/api/runs/{run_id}/actions", json={"control": "limiter", "value": "warp"})
    assert unknown.status_code == 422 and "limiter" in unknown.json()["error"]


def test_the_debrief_page_splits_the_causes_and_names_the_mechanism(client: TestClient) -> None:
    run_id = new_run(client, scenario="flash-crowd", seed=3, minutes=35, paused=True)
    client.post(f"/api/runs/{run_id}/actions", json={"control": "limiter", "value": "bbr"})
    client.post(f"/api/runs/{run_id}/control", json={"type": "resume"})
    with client.websocket_connect(f"/api/runs/{run_id}/ws") as ws:
        receive_until(ws, lambda m: m["type"] == "finished")
    page = client.get(f"/runs/{run_id}/debrief").text
    report = client.get(f"/api/runs/{run_id}/debrief").json()
    causes = report["budget_spent_by_cause"]
    assert {"throttled", "limited", "dropped"} <= set(causes) and causes["limited"] > 0
    assert sum(causes.values()) == pytest.approx(report["budget_spent"])
    assert "rejected by the concurrency limiter" in page and "dropped by a queue (CoDel, full)" in page
    assert report["attempts_per_request"] == pytest.approx(1.0) and 0 <= report["wasted_work_share"] <= 1
    assert 'data-key="attempts_per_request"' in page and 'data-key="wasted_work_share"' in page
    kept = [name for name in report["counterfactuals"] if name in {m.name for m in MECHANISMS}]
    assert "limiter" not in kept  # the player switched it on in the first minute: the same run, nothing saved
    assert len(kept) <= 1
    if kept:
        assert report["counterfactuals"][kept[0]]["budget_spent"] < report["budget_spent"]
        assert "from the start and the same decisions" in page

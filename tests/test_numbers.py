"""Numbers from outside (issues 29 and 30): a huge integer, a digit that is no decimal digit ("³"), another
script's digits ("١٢"), 1e309, NaN and -0 are judged by the core, so each is refused with the same one line
naming the field and its range from the JSON API, a run file (uploaded or named on the command line) and the
CLI's --set, and the pages that read a number from a link refuse it with a sentence, never a 500."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from oncallsim import Simulation
from oncallsim.cli import app
from oncallsim.model import InvalidInput
from oncallsim.model.controls import coerce_control_value
from oncallsim.model.errors import number_text, quote, whole_number
from oncallsim.model.params import coerce_param
from oncallsim.web.app import create_app

BASE = "http://testserver"
HUGE = [10**400, 2**70, -(2**70)]


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    db = tmp_path_factory.mktemp("numbers") / "runs.sqlite3"
    with TestClient(create_app(db, allow_hosts=["testserver"]), base_url=BASE, headers={"Origin": BASE}) as c:
        yield c


def run_file(**changes: Any) -> dict[str, Any]:
    sim = Simulation("bad-deploy", seed=3)
    sim.run(until=10)
    return {**json.loads(sim.run_file().model_dump_json()), **changes}


def refusal(response: Any) -> str:
    assert response.status_code == 422, response.text
    body = response.json()
    assert set(body) == {"error", "field"}
    return str(body["error"])


def test_the_helpers() -> None:
    assert quote(10**400) == "1.00e+400" and quote(-(2**70)) == "-1.18e+21" and quote(12) == "12"
    assert quote("x" * 100).endswith("…") and len(quote("x" * 100)) == 40
    assert [whole_number(t) for t in ("12", " +12 ", "-0", "³", "١٢", "1.5", "1_0", "", "-", "9" * 21)] == [
        12,
        12,
        0,
        *[None] * 7,
    ]
    assert number_text("1" + "0" * 400) == 10**400 and number_text("0.5") == 0.5 and number_text("-0") == 0
    for text in ("³", "١٢", "1_0", "", "٣.٥"):
        with pytest.raises(ValueError):
            number_text(text)


@pytest.mark.parametrize("value", [*HUGE, "1" + "0" * 400, float("inf"), float("nan"), "³", "١٢", "1e309", "NaN"])
@pytest.mark.parametrize("name", ["floor", "ttl_s", "boot_delay_min", "slo"])
def test_the_core_refuses_in_one_short_line(name: str, value: Any) -> None:
    coerce = coerce_param if name in ("boot_delay_min", "slo") else coerce_control_value
    with pytest.raises(InvalidInput) as info:
        coerce(name, value)
    assert info.value.field == name and len(str(info.value)) < 120, str(info.value)
    assert "–" in info.value.reason or " to " in info.value.reason  # the allowed range


def test_minus_zero_is_zero() -> None:
    assert str(coerce_control_value("ttl_s", -0.0)) == "0.0"
    assert str(coerce_param("queries_per_request", "-0.0")) == "0.0"
    assert coerce_control_value("floor", "12") == 12 and coerce_control_value("ttl_s", "1" + "0" * 2) == 100.0


@pytest.mark.parametrize("value", HUGE)
@pytest.mark.parametrize("name", ["floor", "ttl_s", "boot_delay_min"])
def test_a_huge_integer_is_refused_alike_by_the_api_a_run_file_and_the_cli(
    client: TestClient, tmp_path: Path, name: str, value: int
) -> None:
    expected = f"{name}: {quote(value)} is out of range; allowed"
    api = refusal(client.post("/api/runs", json={"scenario": "bad-deploy", "seed": 1, "overrides": {name: value}}))
    uploaded = refusal(
        client.post("/api/runs/import", files={"file": ("r.json", json.dumps(run_file(overrides={name: value})))})
    )
    path = tmp_path / "r.json"
    path.write_text(json.dumps(run_file(overrides={name: value})))
    debrief = CliRunner().invoke(app, ["debrief", str(path)])
    cli = CliRunner().invoke(app, ["run", "bad-deploy", "--minutes", "3", "--set", f"{name}={value}"])
    assert api.startswith(expected) and uploaded.startswith(f"r.json: {expected}")
    for result in (debrief, cli):
        assert result.exit_code == 2 and expected in result.output and "Traceback" not in result.output
        assert len(result.output.strip().splitlines()) == 1, result.output
    assert api.removeprefix(f"{name}: ") in cli.output  # the same sentence


@pytest.mark.parametrize("value", [*HUGE, float("inf"), float("nan")])
def test_an_action_s_huge_or_non_finite_value_is_refused_alike(client: TestClient, value: float) -> None:
    run_id = client.post("/api/runs", json={"scenario": "bad-deploy", "seed": 1, "paused": True}).json()["id"]
    text = json.dumps({"control": "floor", "value": value})  # NaN and Infinity as Python writes them
    headers = {"Content-Type": "application/json"}
    live = refusal(client.post(f"/api/runs/{run_id}/actions", content=text, headers=headers))
    actions = [{"minute": 5, "control": "floor", "value": value}]
    if value == value and abs(value) != float("inf"):  # a run file is finite JSON: NaN never reaches the core
        uploaded = refusal(
            client.post("/api/runs/import", files={"file": ("r.json", json.dumps(run_file(actions=actions)))})
        )
        assert uploaded == f"r.json: actions[0]: {live}"
    assert live.startswith("floor: ") and "from 1 to 40 instances" in live and len(live) < 120


@pytest.mark.parametrize("seed", ["³", "١٢", "²", "1" + "0" * 30, "4294967296"])
def test_pages_that_read_a_number_from_a_link_refuse_it_with_a_sentence(client: TestClient, seed: str) -> None:
    for url in ("/play", "/leaderboard"):
        page = client.get(url, params={"scenario": "surge", "seed": seed})
        assert page.status_code == 422 and "4294967295" in page.text, url
    form = client.post("/runs", data={"scenario": "surge", "seed": seed}, follow_redirects=False)
    assert form.status_code == 422 and "4294967295" in form.text
    speed = client.post("/runs", data={"scenario": "surge", "seed": "1", "speed": seed}, follow_redirects=False)
    assert speed.status_code == 422 and "speed" in speed.text
    setting = client.post("/runs", data={"scenario": "surge", "param.floor": seed}, follow_redirects=False)
    assert setting.status_code == 422 and "from 1 to 40 instances" in setting.text
    run_id = client.post("/api/runs/import", files={"file": ("r.json", json.dumps(run_file()))}).json()["id"]
    for query in (f"index={seed}", f"minutes={seed}"):
        what_if = client.get(f"/runs/{run_id}/whatif?kind=earlier&{query}")
        assert what_if.status_code == 422 and query.partition("=")[0] in what_if.text, query


def test_minus_zero_is_a_seed_and_the_cli_refuses_other_scripts_digits(client: TestClient) -> None:
    assert client.get("/play", params={"scenario": "surge", "seed": "-0"}).status_code == 200
    for seed in ("³", "١٢"):
        result = CliRunner().invoke(app, ["run", "surge", "--minutes", "3", "--seed", seed])
        assert result.exit_code == 2 and "--seed: must be a whole number" in result.output
        result = CliRunner().invoke(app, ["run", "surge", "--minutes", "3", "--set", f"floor={seed}"])
        assert result.exit_code == 2 and f"floor: must be a whole number from 1 to 40 instances, got '{seed}'" in (
            result.output
        )

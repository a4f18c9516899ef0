"""The [graph] section of a scenario file (oncallsim/scenarios/graph.py, docs/graphs.md): the docs' example loads,
each refusal is one line naming the field (the same line the docs show), contradictions are listed, not refused,
a run of a graph scenario plays on the request engine (the minute engine refuses it), and the console refuses
one in one line until it draws a graph."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from oncallsim import InvalidInput, Simulation, builtin_scenarios
from oncallsim.scenarios.graph import GraphSpec, contradictions, least_time_ms
from oncallsim.scenarios.registry import scenario_from_dict, scenario_from_text
from oncallsim.scenarios.spec import Scenario
from oncallsim.verify.chains import simulate

DOC = Path(__file__).resolve().parent.parent / "docs" / "graphs.md"


def doc_example() -> str:
    """The TOML block under "## A complete example" in docs/graphs.md."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## A complete example", 1)[1]
    match = re.search(r"```toml\n(.*?)```", section, re.S)
    assert match, "docs/graphs.md has no TOML block under its complete example"
    return match.group(1)


def test_the_docs_example_is_a_valid_three_service_scenario() -> None:
    scenario = scenario_from_text(doc_example(), "graphs.md")
    graph = scenario.graph
    assert graph is not None
    assert list(graph.services) == ["api", "orders", "db"] and graph.entry == "api"
    assert graph.leaves() == ["db"] and graph.callers("db") == ["api", "orders"]
    assert contradictions(graph) == []
    # the least time by hand: api 5 + (1 + orders 12 + (0.5 + db 4 + 0.5) + 1); db at 20 % may be skipped
    assert least_time_ms(graph) == (24.0, ["api", "orders", "db"])


def test_a_graph_scenario_plays_on_the_request_engine_and_the_minute_engine_refuses_it() -> None:
    scenario = scenario_from_text(doc_example(), "graphs.md")
    assert scenario.engine == "request"  # a graph's default
    sim = Simulation(scenario, seed=1, minutes=2)
    assert sim.engine.name == "request"
    records = sim.run()
    assert len(records) == 2 and records[0].extras is not None
    assert list(records[0].extras["graph"]["services"]) == ["api", "orders", "db"]
    with pytest.raises(InvalidInput) as info:
        Simulation(scenario, seed=1, engine="minute").run()
    assert info.value.field == "graph"
    assert str(info.value) == (
        "graph: a chain of services plays on the request engine, which simulates every request; this run uses the "
        "minute engine (start it with --engine request)"
    )
    assert str(info.value) in DOC.read_text(encoding="utf-8")


def test_the_docs_example_plays_on_the_oracle() -> None:
    """Far from overload (1 % of the api's workers): nearly every request succeeds, the database sees its
    three reads from orders plus one in five from the api, and a few % more from hedging."""
    graph = scenario_from_text(doc_example(), "graphs.md").graph
    assert graph is not None
    report = simulate(graph, rate_per_s=20.0, requests=1500, seed=1)
    assert report.succeeded >= 0.99 * report.requests
    per_request = report.leaf_attempts_per_request["db"]
    assert 3.2 <= per_request <= 3.2 + 3 * 0.08
    assert report.services["orders"].hedges > 0


def test_builtin_scenarios_have_no_graph_and_a_graph_survives_a_round_trip() -> None:
    assert all(s.graph is None for s in builtin_scenarios().values())
    scenario = scenario_from_text(doc_example(), "graphs.md")
    again = scenario_from_dict(scenario.model_dump(mode="json"), "again")
    assert again == scenario
    assert Scenario.model_validate(builtin_scenarios()["surge"].model_dump(mode="json")).graph is None


# Each refusal as the docs' table shows it (the docs' line is checked to be there, word for word).
REFUSALS = [
    (("slowdown = 4\n", "slowdown = 5000\n"), "my.toml: events.0.slowdown: must be a number from 1 to 1000, got 5000"),
    (
        ('service = "db"\n', 'service = "dbx"\n'),
        "my.toml: events.0.service: unknown service 'dbx'; declared: api, orders, db",
    ),
    (("instances = 4", "instance = 4"), "my.toml: graph.services.api.instance: Extra inputs are not permitted"),
    (
        ("retries = 1\n", "retries = 6\n"),
        "my.toml: graph.services.api.retries: must be a whole number from 0 to 5, got 6",
    ),
    (
        ("sigma = 0.6\n", ""),
        'my.toml: graph.services.orders.sigma: sigma is given with distribution = "lognormal" and only then',
    ),
    (
        ("service_ms = 5\n", "service_ms = 0\n"),
        'my.toml: graph.services.api.service_ms: must be above 0 unless distribution = "constant" (here exponential)',
    ),
    (
        ("probability = 0.2,", "probability = 0.2, count = 2,"),
        "my.toml: graph.services.api.calls.1: give count (copies per request) or probability (made or not), not both",
    ),
    (
        ('entry = "api"', 'entry = "apx"'),
        "my.toml: graph.entry: 'apx' is not a declared service; declared: api, orders, db",
    ),
    (
        ('{ to = "db", mode', '{ to = "dbx", mode'),
        "my.toml: graph.services.orders.calls.0.to: unknown service 'dbx'; declared: api, orders, db",
    ),
    (
        ("timeout_ms = 100\n", 'timeout_ms = 100\ncalls = [{ to = "api" }]\n'),
        "my.toml: graph.services.db.calls: a cycle, api → orders → db → api (calls must not loop back)",
    ),
    (
        ("timeout_ms = 100\n", "timeout_ms = 100\n\n[graph.services.cache]\nservice_ms = 1\n"),
        "my.toml: graph.services.cache: not reachable from the entry 'api' (no call leads to it)",
    ),
    (
        ("deadline_ms = 1000", "deadline_ms = 20"),
        "my.toml: graph.deadline_ms: 20 ms is less than the least a request takes at the mean service times "
        "with the network, 24 ms along api → orders → db: no request could meet it",
    ),
]


@pytest.mark.parametrize(("edit", "line"), REFUSALS)
def test_each_refusal_is_one_line_naming_the_field(edit: tuple[str, str], line: str) -> None:
    example = doc_example()
    assert edit[0] in example
    with pytest.raises(InvalidInput) as info:
        scenario_from_text(example.replace(edit[0], edit[1], 1), "my.toml")
    assert str(info.value) == line
    assert "\n" not in line
    # every refusal names its field by its full dotted path, as pydantic's own do (never "graph: services.x")
    assert re.fullmatch(r"(graph|events)(\.[a-z0-9_-]+)+", info.value.field.removeprefix("my.toml: ")), info.value.field
    assert f"`{line}`" in DOC.read_text(encoding="utf-8"), "docs/graphs.md shows another line"


def graph(**services: dict[str, object]) -> GraphSpec:
    return GraphSpec.model_validate({"entry": "api", "deadline_ms": 1000.0, "services": services})


def test_more_refusals() -> None:
    with pytest.raises(ValueError, match="a cycle, api → api"):
        graph(api={"service_ms": 1.0, "calls": [{"to": "api"}]})
    with pytest.raises(ValidationError) as info:
        graph(
            api={"service_ms": 1.0, "calls": [{"to": "a"}]},
            a={"service_ms": 1.0, "calls": [{"to": "b"}]},
            b={"service_ms": 1.0, "calls": [{"to": "a"}]},
        )
    first = info.value.errors()[0]
    assert first["loc"] == ("services", "b", "calls") and first["msg"].startswith("a cycle, a → b → a")
    with pytest.raises(ValidationError) as info:
        graph(api={"service_ms": 0.0})
    first = info.value.errors()[0]
    assert first["loc"] == ("services", "api", "service_ms") and first["msg"].startswith("must be above 0")
    with pytest.raises(ValueError, match="Input should be a valid number"):
        graph(api={"service_ms": "5"})  # strict: text is not a number
    with pytest.raises(ValueError, match="finite number"):
        graph(api={"service_ms": float("nan")})
    with pytest.raises(ValueError, match=r"greater than or equal to 0\.5"):
        graph(api={"service_ms": 1.0, "hedge_after_quantile": 0.2})
    with pytest.raises(ValueError, match="String should match pattern"):
        graph(API={"service_ms": 1.0})


def test_least_time_counts_sequential_copies_the_slowest_parallel_one_and_skips_chance_calls() -> None:
    g = graph(
        api={
            "service_ms": 2.0,
            "calls": [
                {"to": "a", "count": 3, "network_ms": 1.0},  # 3 × (2 + 4) = 18
                {"to": "b", "mode": "parallel", "network_ms": 0.0},  # together: max(10, 2·2 + 4) = 10
                {"to": "a", "mode": "parallel", "network_ms": 2.0},
                {"to": "b", "probability": 0.5, "network_ms": 100.0},  # may be skipped
            ],
        },
        a={"service_ms": 4.0},
        b={"service_ms": 10.0, "distribution": "constant"},
    )
    assert least_time_ms(g) == (2.0 + 18.0 + 10.0, ["api", "b"])


def test_contradictions_are_listed_not_refused() -> None:
    g = graph(
        api={"service_ms": 1.0, "timeout_ms": 300.0, "retries": 2, "calls": [{"to": "a"}, {"to": "b"}]},
        a={"service_ms": 1.0, "timeout_ms": 200.0},
        b={"service_ms": 1.0, "timeout_ms": 1200.0},
    )
    assert contradictions(g) == [
        "services.api.retries: 3 attempts at a's timeout of 200 ms take up to 600 ms, longer than api's own 300 ms: "
        "the last retries cannot finish in time",
        "services.b.timeout_ms: 1200 ms is longer than the entry's deadline (1000 ms): the deadline cuts every "
        "attempt short first",
        "services.b.timeout_ms: 1200 ms is longer than its caller api's (300 ms): api gives up first and b works on "
        "for nobody",
    ]
    short = graph(
        api={"service_ms": 1.0, "calls": [{"to": "a", "network_ms": 2.0}]},
        a={"service_ms": 4.0, "timeout_ms": 5.0, "calls": [{"to": "b", "network_ms": 1.0}]},
        b={"service_ms": 3.0},
    )
    # an attempt at a, from its sending: 2 + 4 + (1 + 3 + 1) + 2 = 13 ms
    assert contradictions(short) == [
        "services.a.timeout_ms: 5 ms is less than an attempt at a takes at the mean service times with the network, "
        "13 ms along a → b: most attempts time out"
    ]


def test_the_console_plays_a_graph_scenario_sent_as_content(tmp_path: Path) -> None:
    """Sent as content to the API, a chain of services plays on the request engine: its services' controls are
    taken (and refused, naming why, where a chain has no such thing), its state says each service's settings in
    force, and its page draws the graph."""
    from fastapi.testclient import TestClient

    from oncallsim.web.app import create_app

    base = "http://testserver"
    with TestClient(create_app(tmp_path / "runs.sqlite3", allow_hosts=["testserver"]), base_url=base) as client:
        body = {"scenario": "checkout-chain", "scenario_toml": doc_example(), "seed": 1, "paused": True}
        response = client.post("/api/runs", json=body)
        assert response.status_code == 201, response.text
        run = response.json()["id"]
        page = client.get(f"/runs/{run}").text
        assert "data-graph=" in page and 'id="services-body"' in page and 'id="chart-cache"' not in page
        state = client.get(f"/api/runs/{run}").json()["state"]
        assert set(state["services"]) == {"api", "orders", "db"}
        assert state["services"]["db"]["timeout_ms"] == 100.0 and state["services"]["orders"]["timeout_ms"] == 400.0
        taken = client.post(f"/api/runs/{run}/actions", json={"control": "db.retries", "value": 2})
        assert taken.status_code == 200, taken.text
        refused = client.post(f"/api/runs/{run}/actions", json={"control": "ttl_s", "value": 30})
        assert refused.status_code == 422 and refused.json()["field"] == "ttl_s"
        assert "cache or build" in refused.json()["error"]
        unknown = client.post(f"/api/runs/{run}/actions", json={"control": "nope.retries", "value": 1})
        assert unknown.status_code == 422 and "unknown service 'nope'" in unknown.json()["error"]
        # a game-day room plays a chain too (tests/test_gameday_chains.py): its page draws the graph
        room = client.post("/api/gameday/rooms", json={"scenario": "cascade", "seed": 1, "speed": 1})
        assert room.status_code == 201, room.text
        assert room.json()["engine"] == "request"
        page = client.get(f"/gameday/{room.json()['id']}").text
        assert "data-graph=" in page and 'id="services-body"' in page and 'id="m-cache_hit"' not in page


def test_the_docs_example_tells_the_story_the_docs_tell() -> None:
    """docs/graphs.md, "What to expect from it (seed 7)": quiet until the database slows, then the clients' deadline
    fails requests and the page fires; the budget objective met, the p99 one missed; the failures began at db. No
    client's p99 is read past the deadline (its answers come at it at the latest)."""
    from oncallsim.debrief import make_report

    sim = Simulation(scenario_from_text(doc_example(), "graphs.md"), seed=7)
    records = sim.run()
    slow = sim.plan.service_faults[0].minute
    assert sim.plan.clock(slow) == "09:15"
    assert all(r.error_rate == 0.0 and r.p99_ms < 100 for r in records[:slow])
    assert 0.1 < max(r.error_rate for r in records[slow : slow + 15]) < 0.2
    assert any(r.page_firing for r in records[slow:]) and not any(r.page_firing for r in records[:slow])
    assert all(r.p99_ms <= 1000.0 for r in records) and max(r.p99_ms for r in records) == 1000.0
    assert all(r.error_rate == 0.0 for r in records[slow + 17 :])
    report = make_report(sim, effects=False)
    assert [o.passed for o in report.objectives] == [True, False]
    assert report.budget_spent == pytest.approx(0.030, abs=0.0005)
    assert report.failure_origins is not None
    began = {o.service: o.share for o in report.failure_origins.services}
    assert began["db"] == pytest.approx(0.94, abs=0.005)

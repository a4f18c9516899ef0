"""A chain's services' controls during a run (``<service>.<setting>``, oncallsim/model/chain/controls.py): checked
alike on every surface that takes an action, refused on runs that are not chains, and acting from their minute:
the retry-layers lesson's fix applied live ends the outage it could only prevent from a file before."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from oncallsim import InvalidInput, Simulation
from oncallsim.debrief import make_report
from oncallsim.model.controls import coerce_control_value
from oncallsim.simulation import Action

EXAMPLES = Path(__file__).resolve().parent.parent / "oncallsim" / "scenarios" / "data" / "graphs"


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("orders.retries", 0, 0),
        ("orders.retries", "3", 3),
        ("orders.retry_budget", 0.1, 0.1),
        ("page.hedge_after_quantile", 0, 0.0),
        ("page.hedge_after_quantile", "0.95", 0.95),
        ("db.instances", 12, 12),
        ("recs.timeout_ms", 100, 100.0),
        ("recs.timeout_ms", "0", 0.0),
        ("api.limiter", 1, 1),
        ("api.limiter", "0", 0),
        ("db.lifo", 1.0, 1),
    ],
)
def test_a_service_control_value_is_checked_and_parsed(name: str, value: object, expected: object) -> None:
    assert coerce_control_value(name, value) == expected


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("orders.retries", 6, "orders.retries: must be a whole number from 0 to 5, got 6"),
        ("orders.retries", 1.5, "orders.retries: must be a whole number from 0 to 5, got 1.5"),
        ("orders.retry_budget", -0.1, "orders.retry_budget: must be a number from 0 to 1, got -0.1"),
        ("page.hedge_after_quantile", 0.3, "must be 0 (no hedging) or a number from 0.5 to 0.999, got 0.3"),
        ("db.instances", 10**400, "db.instances: must be a whole number from 1 to 1000"),
        ("db.instances", float("nan"), "db.instances: must be a whole number from 1 to 1000"),
        ("db.instances", True, "db.instances: must be a whole number from 1 to 1000"),
        ("recs.timeout_ms", 0.5, "recs.timeout_ms: must be 0 (no timeout) or a number from 1 to 600000, got 0.5"),
        ("api.limiter", 2, "api.limiter: must be 0 (no limiter) or 1 (Kratos's BBR limiter), got 2"),
        ("api.limiter", True, "api.limiter: must be 0 (no limiter) or 1 (Kratos's BBR limiter), got True"),
        ("db.lifo", 0.5, "db.lifo: must be 0 (the oldest waiting first) or 1 (the newest waiting first), got 0.5"),
        ("db.sigma", 1, "unknown control 'db.sigma': a chain's service takes <service>.<setting>"),
        (".retries", 1, "unknown control '.retries'"),
    ],
)
def test_a_bad_service_control_is_refused_in_one_line(name: str, value: object, message: str) -> None:
    with pytest.raises(InvalidInput, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        coerce_control_value(name, value)


def test_text_for_a_service_setting_is_parsed_on_a_command_line_only() -> None:
    """As the one service's numbers: a command line's text is parsed (above); an action in a file, the API or a
    room that sends text where a number belongs is refused, naming the range."""
    from oncallsim.simulation import parse_action

    with pytest.raises(
        InvalidInput, match=r"recs\.timeout_ms takes 0 \(no timeout\) or a number from 1 to 600000, not text"
    ):
        parse_action({"minute": 0, "control": "recs.timeout_ms", "value": "150"})
    assert parse_action({"minute": 0, "control": "recs.timeout_ms", "value": 150}).value == 150


def test_the_run_refuses_unknown_services_the_entrys_instances_and_non_chains() -> None:
    sim = Simulation(EXAMPLES / "retry-layers.toml", seed=1, minutes=3)
    with pytest.raises(InvalidInput, match="unknown service 'cache'; this run's services: api, orders, db"):
        sim.step([("cache.retries", 1)])
    with pytest.raises(InvalidInput, match="api is the entry: its instances are the fleet's"):
        sim.step([("api.instances", 30)])
    with pytest.raises(InvalidInput, match="api is the entry: its timeout is its clients' patience"):
        sim.step([("api.timeout_ms", 300)])
    assert sim.minute == 0  # nothing was played by a refused step
    one = Simulation("slow-instance", seed=1, minutes=2)
    with pytest.raises(InvalidInput, match="acts on a chain's service; this run has no \\[graph\\]"):
        one.step([("db.retries", 1)])
    minute = Simulation("free-play", seed=1, minutes=2)
    with pytest.raises(InvalidInput, match="this run has no \\[graph\\]"):
        minute.step([("db.retries", 1)])


def test_the_retry_layers_fix_applied_live_ends_the_outage() -> None:
    """Hands-off the two-minute blip becomes a run-long outage; retrying at one layer with a budget, set ten
    minutes after the blip began (the storm in full), drains it: the budget spent stops growing, the errors end.
    Held-out seed 203."""
    hands_off = Simulation(EXAMPLES / "retry-layers.toml", seed=203)
    hands_off.run()
    blip = hands_off.plan.service_faults[0].minute
    fixed = Simulation(EXAMPLES / "retry-layers.toml", seed=203)
    records = fixed.run([Action(blip + 10, "api.retries", 0), Action(blip + 10, "orders.retry_budget", 0.1)])
    assert max(r.error_rate for r in hands_off.timeline[-10:]) > 0.9  # still down at the end
    assert max(r.error_rate for r in records[-10:]) < 0.01  # recovered
    assert make_report(fixed, effects=False).budget_spent < make_report(hands_off, effects=False).budget_spent / 2
    assert records[blip + 12].extras["graph"]["services"]["db"]["attempts_per_s"] < 2000


def test_service_controls_replay_from_the_run_file_and_the_cli(tmp_path: Path) -> None:
    """The same actions through the command line's --actions and the run file it saves: the same records."""
    actions = [{"minute": 2, "control": "page.hedge_after_quantile", "value": 0.95}]
    (tmp_path / "actions.json").write_text(json.dumps(actions))
    run = tmp_path / "run.json"
    out = subprocess.run(
        [sys.executable, "-m", "oncallsim", "run", str(EXAMPLES / "fan-out.toml"), "--seed", "5", "--minutes", "5",
         "--actions", str(tmp_path / "actions.json"), "--format", "jsonl", "--save-run", str(run)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    hedges = [line["extras"]["graph"]["services"]["page"]["hedges_per_s"] for line in lines]
    assert hedges[:2] == [0.0, 0.0] and all(h > 0 for h in hedges[3:])
    replayed = Simulation.replay(run)
    assert [r.extras["graph"]["services"]["page"]["hedges_per_s"] for r in replayed.timeline] == hedges
    assert [r.p99_ms for r in replayed.timeline] == [line["p99_ms"] for line in lines]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"minute": 1, "control": "page.retries", "value": 9}]))
    refused = subprocess.run(
        [sys.executable, "-m", "oncallsim", "run", str(EXAMPLES / "fan-out.toml"), "--minutes", "3",
         "--actions", str(bad)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert refused.returncode != 0 and "page.retries: must be a whole number from 0 to 5, got 9" in refused.stderr


def test_deadline_propagation_is_the_one_service_control_a_chain_takes_during_a_run() -> None:
    """On the cascade (deadlines not propagated), switching propagation on at the slowdown contains it to the
    requests that need the slow service; as an opening control it is refused (the graph's own key opens it)."""
    late = Simulation(EXAMPLES / "cascade.toml", seed=204)
    late.run()
    slow = late.plan.service_faults[0].minute
    fixed = Simulation(EXAMPLES / "cascade.toml", seed=204)
    records = fixed.run([Action(slow + 2, "deadline_propagation", True)])
    assert max(r.error_rate for r in late.timeline[slow + 5 : slow + 25]) > 0.9
    assert max(r.error_rate for r in records[slow + 5 : slow + 25]) < 0.4
    with pytest.raises(InvalidInput, match="a chain opens with its graph's deadline_propagation"):
        Simulation(EXAMPLES / "cascade.toml", seed=1, overrides={"deadline_propagation": True})


def test_a_timeout_changed_during_the_run_applies_to_the_calls_sent_from_then_on() -> None:
    """A 50 ms leaf behind a 200 ms timeout answers every call; from the minute its timeout is cut to 20 ms, every
    call times out, the calls already waiting keep the deadline they were sent with (moved off the ordered list:
    nothing fires late, nothing early), and the cascade's fix applied live contains it (held-out seed 205)."""
    from oncallsim.scenarios.registry import scenario_from_dict

    data = {
        "id": "cut", "version": 1, "title": "t", "summary": "s", "briefing": "b", "start": "09:00", "minutes": 4,
        "params": {"base_requests_per_s": 200.0, "diurnal_amplitude": 0.0},
        "graph": {"entry": "api", "deadline_ms": 1000.0, "services": {
            "api": {"service_ms": 0.0, "distribution": "constant", "instances": 10, "workers_per_instance": 20,
                    "calls": [{"to": "leaf"}]},
            "leaf": {"service_ms": 50.0, "distribution": "constant", "workers_per_instance": 100,
                     "timeout_ms": 200.0}}},
    }  # fmt: skip
    sim = Simulation(scenario_from_dict(data, "cut"), seed=1)
    records = sim.run([Action(2, "leaf.timeout_ms", 20)])
    assert records[1].error_rate == 0.0
    assert records[3].error_rate == 1.0 and records[3].extras["graph"]["services"]["api"]["timeouts_per_s"] > 0
    cascade = Simulation(EXAMPLES / "cascade.toml", seed=205)
    cascade.run()
    slow = cascade.plan.service_faults[0].minute
    fixed = Simulation(EXAMPLES / "cascade.toml", seed=205)
    fixed_records = fixed.run([Action(slow + 2, "recs.timeout_ms", 100)])
    assert max(r.error_rate for r in cascade.timeline[slow + 5 : slow + 25]) > 0.9
    assert max(r.error_rate for r in fixed_records[slow + 5 : slow + 25]) < 0.4


def _overloaded_leaf(seed: int, leaf: dict[str, object] | None = None) -> Simulation:
    """An api (its own work nothing) calling a leaf of 4 workers × 10 ms (400/s) at 600 requests/s, a 500 ms
    deadline known to both: FIFO, the queue holds half a second of work, most of what the leaf serves has waited
    nearly all of it and answers too late (a third of the requests must fail at best: 200/s past 400/s)."""
    from oncallsim.scenarios.registry import scenario_from_dict

    data = {
        "id": "over", "version": 1, "title": "t", "summary": "s", "briefing": "b", "start": "09:00", "minutes": 6,
        "params": {"base_requests_per_s": 600.0, "diurnal_amplitude": 0.0},
        "graph": {"entry": "api", "deadline_ms": 500.0, "services": {
            "api": {"service_ms": 0.0, "distribution": "constant", "instances": 10, "workers_per_instance": 200,
                    "calls": [{"to": "leaf"}]},
            "leaf": {"service_ms": 10.0, "workers_per_instance": 4, **(leaf or {})}}},
    }  # fmt: skip
    return Simulation(scenario_from_dict(data, "over"), seed=seed)


def test_a_limiter_switched_on_during_the_run_sheds_as_one_declared_in_the_file() -> None:
    """Kratos's BBR switched on at the overloaded leaf from minute 2: it sheds nothing before, its CPU estimate
    starts from zero (16 s of samples to reach 80 %), then it sheds as the same limiter declared in the file:
    a minute on, the leaf's goodput is the declared run's within 10 % (about 0.8 of its capacity, as Kratos's
    limiter holds it: docs/validation.md) where FIFO alone kept under 0.4. Switched off, it sheds nothing more.
    Held-out seed 207."""
    live = _overloaded_leaf(207)
    records = live.run([Action(2, "leaf.limiter", 1), Action(5, "leaf.limiter", 0)])
    declared = _overloaded_leaf(207, {"limiter": "bbr"}).run()
    leaf = [r.extras["graph"]["services"]["leaf"] for r in records]
    assert leaf[1]["limited_per_s"] == 0 and leaf[1]["succeeded_per_s"] < 0.4 * 400 and records[1].error_rate > 0.7
    assert leaf[2]["limited_per_s"] > 0
    for minute in (3, 4):
        goodput = leaf[minute]["succeeded_per_s"]
        declared_goodput = declared[minute].extras["graph"]["services"]["leaf"]["succeeded_per_s"]
        assert goodput == pytest.approx(declared_goodput, rel=0.1)
        assert goodput > 0.75 * 400 and records[minute].error_rate < 0.5
    assert leaf[5]["limited_per_s"] == 0  # off again from minute 5
    from oncallsim.model.chain.controls import service_settings

    assert live.plan.graph is not None
    in_force = service_settings(live.plan.graph, ((a.control, a.value) for a in live.actions[:1]))
    assert in_force["leaf"]["limiter"] == 1.0 and in_force["api"]["limiter"] == 0.0  # as the panel shows it


def test_lifo_switched_on_during_the_run_serves_the_newest_within_their_deadline() -> None:
    """The overloaded leaf's queue switched to the newest first from minute 2: the requests just arrived are
    served before their deadline, those left behind time out at the back (Facebook's lesson behind adaptive LIFO):
    from a minute where FIFO answered under 0.4 of the leaf's capacity (400/s) in time, nearly all of it answers in
    time, and the clients' errors fall to the third that must fail (200/s past 400/s). Held-out seed 208."""
    records = _overloaded_leaf(208).run([Action(2, "leaf.lifo", 1)])
    assert records[1].error_rate > 0.7
    for minute in (3, 4):
        assert records[minute].extras["graph"]["services"]["leaf"]["succeeded_per_s"] > 0.95 * 400
        assert records[minute].error_rate < 1 / 3 + 0.04


def test_the_debrief_says_a_services_setting_in_each_language() -> None:
    """The narrative's moves name a chain's service setting in the Services panel's words ("set the retries of api
    to 0"), and a page in another language says it in its own (a newcomer's Arabic debrief carried the English),
    the value in the language's symbols, a switch as on/off."""
    from oncallsim.debrief.html import sentence
    from oncallsim.debrief.postmortem import NARRATIVES, move

    moves = " and ".join(
        move(a)
        for a in (Action(3, "api.retries", 0), Action(3, "orders.retry_budget", 0.1), Action(3, "db.limiter", 1))
    )
    assert moves == (
        "set the retries of api to 0 and set the retry budget of orders to 0.1 and switched on the limiter (BBR) of db"
    )
    template = NARRATIVES["same_alike"]
    listed = moves.replace(" and ", ", ", 1)  # as the narrative joins three: "a, b and c"
    danish = sentence(template, {"moves": listed, "mine": "09:14"}, "da")
    assert "satte genforsøg for api til 0" in danish and "0,1" in danish and "slog begrænser (BBR) til for db" in danish
    assert "set the" not in danish and "retries" not in danish
    arabic = sentence(template, {"moves": listed, "mine": "09:14"}, "ar")
    assert "set the" not in arabic and "api" in arabic and "db" in arabic

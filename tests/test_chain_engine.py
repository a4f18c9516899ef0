"""A chain of services in the request engine (oncallsim/model/chain, docs/graphs.md), checked against what it did
not compute: closed forms (retries multiplying layer by layer, ∏(1 + rᵢ); fan-out making the rare slow reply
common, 1 − (1 − p)ⁿ) and the separate oracle (oncallsim/verify/chains.py: plain Python, one heap), on the same
graph under load, with failures, retries and hedging."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest

from oncallsim import InvalidInput, Simulation
from oncallsim.model.chain import world as W
from oncallsim.model.chain.drive import chain_minute_of, new_chain
from oncallsim.model.chain.measure import hist_quantile_s
from oncallsim.scenarios.graph import GraphSpec, layout_of
from oncallsim.scenarios.registry import scenario_from_text
from oncallsim.simulation import Action
from oncallsim.verify.chains import simulate
from tests.test_chains import slow_leaf_chain
from tests.test_graph_spec import doc_example


def graph(entry: str, deadline_ms: float, **services: dict[str, Any]) -> GraphSpec:
    return GraphSpec.model_validate({"entry": entry, "deadline_ms": deadline_ms, "services": services})


def play(spec: GraphSpec, per_minute: list[int], seed: int = 1, fail: dict[str, float] | None = None) -> list[Any]:
    """The chain minute by minute; each minute's copies of the measures (the world reuses its arrays)."""
    layout = layout_of(spec)
    world = new_chain(layout, seed)
    for name, p in (fail or {}).items():
        world.svc_r[layout.names.index(name), W.SR_FAIL] = p
    out = []
    for minute, count in enumerate(per_minute):
        world = chain_minute_of(world, minute, count)
        out.append((world.m_svc.copy(), world.m_client.copy(), world.c_hist.copy()))
    return out


def test_retries_multiply_layer_by_layer() -> None:
    """Three layers retrying twice each, the leaf always failing: every entry request costs the leaf exactly
    (1 + 2)³ = 27 attempts (and each layer 3× the one above), with the budget uncapped and time to spare."""
    leaf = {"service_ms": 1.0, "distribution": "constant", "instances": 4, "workers_per_instance": 50}
    layer = {"service_ms": 1.0, "distribution": "constant", "instances": 4, "workers_per_instance": 50, "retries": 2}
    spec = graph(
        "a",
        60_000.0,
        a={**layer, "calls": [{"to": "b"}]},
        b={**layer, "calls": [{"to": "c"}]},
        c={**layer, "calls": [{"to": "leaf"}]},
        leaf=leaf,
    )
    minutes = play(spec, [600, 0], fail={"leaf": 1.0})
    attempts = sum(m[0] for m in minutes)[:, W.M_ATTEMPTS]
    assert attempts.tolist() == [600, 600 * 3, 600 * 9, 600 * 27]
    decided = sum(int(m[1][W.MC_DECIDED]) for m in minutes)
    errors = sum(int(m[1][W.MC_ERROR]) for m in minutes)
    assert decided == errors == 600


def test_a_retry_budget_caps_the_share_of_retries() -> None:
    """With a budget of 10 %, a caller whose every call fails sends retries of at most 10 % of its calls (+ 1)
    in any 10 s; without one, two per call (200 %)."""
    spec = graph(
        "a",
        60_000.0,
        a={"service_ms": 1.0, "distribution": "constant", "workers_per_instance": 200, "retries": 2,
           "retry_budget": 0.1, "calls": [{"to": "leaf"}]},
        leaf={"service_ms": 1.0, "distribution": "constant", "workers_per_instance": 200},
    )  # fmt: skip
    (svc, _, _), *_ = play(spec, [6000, 0], fail={"leaf": 1.0})
    retries, first_tries = svc[0, W.M_RETRIES], 6000
    assert 0.09 * first_tries <= retries <= 0.1 * (first_tries + retries) + 6
    assert svc[0, W.M_DENIED] > 0


def test_fan_out_makes_the_rare_slow_reply_common() -> None:
    """A page calling 10 leaves at once, exponential leaves (mean 10 ms) and nothing queued: the page is slower
    than the leaves' p99 τ = 10·ln 100 ms with probability 1 − 0.99¹⁰ = 9.56 % (the tail at scale)."""
    spec = graph(
        "page",
        60_000.0,
        page={"service_ms": 0.0, "distribution": "constant", "instances": 10, "workers_per_instance": 100,
              "calls": [{"to": "leaf", "mode": "parallel", "count": 10}]},
        leaf={"service_ms": 10.0, "instances": 50, "workers_per_instance": 100},
    )  # fmt: skip
    minutes = play(spec, [30_000, 0])
    hist = sum(m[2] for m in minutes)
    tau = 0.010 * math.log(100.0)
    first_above = math.ceil(math.log(tau / W.HIST_FLOOR_S) / math.log(W.HIST_RATIO)) + 1
    slow = hist[first_above:].sum() / hist.sum()
    expected = 1.0 - 0.99**10
    # 30,000 pages: the share's standard error is 0.17 points; a 1 %-wide bin at τ moves it by at most 0.1
    assert slow == pytest.approx(expected, abs=0.008)


def test_hedging_cuts_the_fan_out_tail() -> None:
    """The same page, hedging each leaf call past the leaves' p90: the page's p99 falls well below the leaves'
    slowest-of-ten, for about 10 % more leaf load; the oracle agrees on both."""
    spec = graph(
        "page",
        60_000.0,
        page={"service_ms": 0.0, "distribution": "constant", "instances": 10, "workers_per_instance": 100,
              "hedge_after_quantile": 0.9, "calls": [{"to": "leaf", "mode": "parallel", "count": 10}]},
        leaf={"service_ms": 10.0, "instances": 50, "workers_per_instance": 100},
    )  # fmt: skip
    minutes = play(spec, [6000, 6000, 0])
    svc = sum(m[0] for m in minutes[1:])
    hist = sum(m[2] for m in minutes[1:])
    extra = svc[0, W.M_HEDGES] / (10 * 6000)
    oracle = simulate(spec, rate_per_s=100.0, requests=4000, warmup=2000, seed=3)
    oracle_extra = oracle.services["page"].hedges / (10 * oracle.requests)
    assert extra == pytest.approx(oracle_extra, abs=0.02) and 0.05 < extra < 0.2
    p99 = hist_quantile_s(hist, 0.99)
    assert p99 is not None
    unhedged_p99 = -0.010 * math.log(1.0 - 0.99 ** (1 / 10))  # the slowest of ten exponentials' p99
    assert p99 < 0.7 * unhedged_p99
    assert p99 * 1000.0 == pytest.approx(float(np.quantile(oracle.latency_ms, 0.99)), rel=0.1)


@pytest.mark.parametrize(("rate", "fail"), [(300.0, 0.2), (1500.0, 0.05)])
def test_the_engine_agrees_with_the_oracle_on_the_docs_example(rate: float, fail: float) -> None:
    """The docs' checkout (an api, orders reading the database three at once, retries with a budget, hedging)
    with a fifth (or a twentieth) of the database's reads failing, light and overloaded (1,500/s: orders' workers
    are full, the deadline cuts requests off): the same shares of successes, attempts per request at each service,
    retries, hedges and timeouts, and the same median."""
    spec = scenario_from_text(doc_example(), "graphs.md").graph
    assert spec is not None
    count = int(rate * 60)
    minutes = play(spec, [count] * 3, fail={"db": fail})
    svc = sum(m[0] for m in minutes[1:])
    client = sum(m[1] for m in minutes[1:])
    hist = sum(m[2] for m in minutes[1:])
    n = int(client[W.MC_DECIDED])
    oracle = simulate(spec, rate_per_s=rate, requests=int(rate * 40), warmup=int(rate * 20), seed=5,
                      failures={"db": fail})  # fmt: skip
    r = oracle.requests
    assert client[W.MC_OK] / n == pytest.approx(oracle.succeeded / r, abs=0.02)
    for s, name in enumerate(["api", "orders", "db"]):
        mine, theirs = svc[s], oracle.services[name]
        for column, value in [
            (W.M_ATTEMPTS, theirs.attempts),
            (W.M_RETRIES, theirs.retries),
            (W.M_HEDGES, theirs.hedges),
            (W.M_TIMEOUTS, theirs.timeouts),
            (W.M_REFUSED, theirs.refused),
        ]:
            assert mine[column] / n == pytest.approx(value / r, abs=0.03 + 0.05 * value / r), (name, column)
    p50 = hist_quantile_s(hist, 0.5)
    assert p50 is not None and p50 * 1000.0 == pytest.approx(float(np.median(oracle.latency_ms)), rel=0.08)


def test_a_callee_timeout_shorter_than_its_work_fails_every_request() -> None:
    """The leaf always takes 50 ms, its callers wait 20 ms: every request answers an error after ~20 ms (the
    timeout, then the abandoned call), none waits for the clients' deadline."""
    spec = graph(
        "api",
        1000.0,
        api={"service_ms": 0.0, "distribution": "constant", "workers_per_instance": 100, "calls": [{"to": "leaf"}]},
        leaf={"service_ms": 50.0, "distribution": "constant", "workers_per_instance": 100, "timeout_ms": 20.0},
    )
    (svc, client, hist), _ = play(spec, [600, 0])
    assert int(client[W.MC_ERROR]) == int(client[W.MC_DECIDED]) > 590 and client[W.MC_DEADLINE] == 0
    assert hist_quantile_s(hist, 0.5) == pytest.approx(0.020, rel=0.02)
    assert svc[0, W.M_TIMEOUTS] == client[W.MC_DECIDED]


def test_a_chain_run_is_the_same_bit_for_bit_and_its_seed_matters() -> None:
    scenario = scenario_from_text(doc_example(), "graphs.md")

    def text(seed: int) -> str:
        records = Simulation(scenario, seed=seed, minutes=3).run()
        return json.dumps([r.to_dict() for r in records], sort_keys=True, default=repr)

    assert text(4) == text(4)
    assert text(4) != text(5)


def test_the_entry_follows_the_minute_models_fleet_and_instance_controls_are_refused() -> None:
    """The entry's workers are its serving instances × its workers per instance; the other services keep their
    fleets. The one service's per-instance controls are refused naming why."""
    scenario = scenario_from_text(doc_example(), "graphs.md")
    sim = Simulation(scenario, seed=2, minutes=6)
    records = sim.run([Action(0, "floor", 12)])
    first, last = records[0].extras["graph"]["services"], records[-1].extras["graph"]["services"]
    assert first["api"]["workers"] == 4 * 16  # the declared instances
    assert last["api"]["workers"] == records[-1].serving * 16 and records[-1].serving >= 12
    assert last["orders"]["workers"] == first["orders"]["workers"] == 24
    with pytest.raises(InvalidInput, match="chain of services"):
        Simulation(scenario, seed=2, minutes=2).run([Action(0, "eject", 1)])


def test_without_deadline_propagation_the_chain_works_on_for_clients_that_left() -> None:
    """As the oracle's test (tests/test_chains.py): a 500 ms leaf, clients waiting 100 ms, no timeouts. The clients
    all time out either way; propagated, the leaf's work is cancelled; not propagated, it is all done (wasted)."""
    for propagation in (True, False):
        layout = layout_of(slow_leaf_chain(propagation))
        world = new_chain(layout, 1)
        world.reals[W.R_DEADLINE] = 0.1  # the clients wait 100 ms (below what the validator lets a file say)
        svc = np.zeros_like(world.m_svc)
        client = np.zeros_like(world.m_client)
        for minute, count in enumerate((600, 0)):
            world = chain_minute_of(world, minute, count)
            svc += world.m_svc
            client += world.m_client
        assert client[W.MC_DECIDED] == client[W.MC_DEADLINE] == 600
        if propagation:
            assert svc[1, W.M_SUCCEEDED] == 0 and svc[1, W.M_CANCELLED] == svc[1, W.M_ATTEMPTS] == 600
        else:
            assert svc[1, W.M_SUCCEEDED] == svc[1, W.M_ATTEMPTS] == 600 and svc[1, W.M_CANCELLED] == 0
            assert svc[0, W.M_SUCCEEDED] == 600


def test_a_chain_minute_writes_every_field_of_its_record() -> None:
    """The minute's values are a buffer the engine reuses: a field a chain's minute did not write would carry
    whatever was there before (once, the cache's warmth: 0.0 in one process, 1.96e-315 in another). Poisoned
    with NaN first, no field of the record is left NaN."""
    import math

    import numpy as np

    from oncallsim import Simulation

    sim = Simulation("cascade", seed=5)
    sim.state.kernel.values[:] = np.nan
    record = sim.step().to_dict()
    assert [name for name, value in record.items() if isinstance(value, float) and math.isnan(value)] == []

"""Where each failed client request's failure began (docs/graphs.md, "Where the failures began"): the request
engine's count per service (``M_BEGUN``, the records' ``failures_begun_per_s``) against the separate oracle
(oncallsim/verify/chains.py, which applies the same rule by looking at every held worker instead of keeping
counters), and on chains where the answer is known by hand: a leaf that fails every attempt, a slow leaf behind a
short timeout, an entry overloaded in front of fast leaves, and a slow leaf that fills its caller's workers so
that even the requests that never call it fail."""

from __future__ import annotations

from typing import Any

import pytest

from oncallsim.model.chain import world as W
from oncallsim.scenarios.graph import GraphSpec
from oncallsim.scenarios.registry import scenario_from_text
from oncallsim.verify.chains import ChainReport, simulate
from tests.test_chain_engine import play
from tests.test_graph_spec import doc_example


def graph(entry: str, deadline_ms: float, propagation: bool = True, **services: dict[str, Any]) -> GraphSpec:
    return GraphSpec.model_validate(
        {"entry": entry, "deadline_ms": deadline_ms, "deadline_propagation": propagation, "services": services}
    )


def engine_begun(spec: GraphSpec, per_minute: list[int], fail: dict[str, float] | None = None) -> dict[str, int]:
    """The engine's failures begun at each service over the minutes after the first; every failed client
    request counted once, at one service."""
    minutes = play(spec, per_minute, fail=fail)[1:]
    svc = sum(m[0] for m in minutes)
    client = sum(m[1] for m in minutes)
    begun = {name: int(svc[s, W.M_BEGUN]) for s, name in enumerate(spec.services)}
    assert sum(begun.values()) == int(client[W.MC_DEADLINE] + client[W.MC_ERROR])
    return begun


def oracle_begun(report: ChainReport) -> dict[str, int]:
    begun = {name: service.failures_begun for name, service in report.services.items()}
    failed = int((~report.ok).sum())
    assert sum(begun.values()) == failed and sum(o is not None for o in report.origin) == failed
    return begun


def shares(begun: dict[str, int]) -> dict[str, float]:
    total = sum(begun.values())
    return {name: count / total for name, count in begun.items()}


def test_a_leaf_that_fails_every_attempt_is_where_every_failure_began() -> None:
    """api → mid (retrying once) → leaf, the leaf failing always: every request fails, seen at the api, begun at
    the leaf."""
    spec = graph(
        "api",
        60_000.0,
        api={"service_ms": 1.0, "workers_per_instance": 50, "calls": [{"to": "mid"}]},
        mid={"service_ms": 1.0, "workers_per_instance": 50, "retries": 1, "calls": [{"to": "leaf"}]},
        leaf={"service_ms": 1.0, "workers_per_instance": 50},
    )
    assert engine_begun(spec, [600, 600, 0], fail={"leaf": 1.0}) == {"api": 0, "mid": 0, "leaf": 600}
    report = simulate(spec, rate_per_s=10.0, requests=300, seed=1, failures={"leaf": 1.0})
    assert oracle_begun(report) == {"api": 0, "mid": 0, "leaf": 300}


def test_a_slow_leaf_behind_a_short_timeout_is_where_the_failures_began() -> None:
    """The leaf always takes 50 ms and its callers wait 20 ms: every call times out at the leaf's own work."""
    spec = graph(
        "api",
        1000.0,
        api={"service_ms": 0.0, "distribution": "constant", "workers_per_instance": 100, "calls": [{"to": "leaf"}]},
        leaf={"service_ms": 50.0, "distribution": "constant", "workers_per_instance": 100, "timeout_ms": 20.0},
    )
    begun = engine_begun(spec, [600, 600, 0])
    assert begun["api"] == 0 and begun["leaf"] == 600
    assert oracle_begun(simulate(spec, rate_per_s=10.0, requests=300, seed=2)) == {"api": 0, "leaf": 300}


def test_an_entry_overloaded_in_front_of_fast_leaves_is_where_the_failures_began() -> None:
    """Four api workers of 10 ms each (400 requests/s) offered 600/s, the leaf fast and idle: the clients give up
    while their requests queue at the api, whose workers are at their own work."""
    spec = graph(
        "api",
        200.0,
        api={"service_ms": 10.0, "distribution": "constant", "workers_per_instance": 4,
             "calls": [{"to": "leaf", "network_ms": 0.5}]},
        leaf={"service_ms": 0.5, "workers_per_instance": 100},
    )  # fmt: skip
    begun = engine_begun(spec, [36_000, 36_000, 0])
    assert begun["api"] > 0.99 * sum(begun.values()) > 10_000
    theirs = oracle_begun(simulate(spec, rate_per_s=600.0, requests=6000, warmup=2000, seed=3))
    assert theirs["api"] > 0.99 * sum(theirs.values()) > 1000


def cascade(rate_share_recs: float = 0.3) -> GraphSpec:
    """A small cascade: twenty api workers held for every call, three pages in ten also calling a 400 ms leaf,
    no timeouts and no propagation."""
    return graph(
        "api",
        1000.0,
        propagation=False,
        api={"service_ms": 1.0, "distribution": "constant", "workers_per_instance": 20,
             "calls": [{"to": "catalog", "network_ms": 1.0},
                       {"to": "recs", "probability": rate_share_recs, "network_ms": 1.0}]},
        catalog={"service_ms": 2.0, "workers_per_instance": 100},
        recs={"service_ms": 400.0, "distribution": "constant", "workers_per_instance": 500},
    )  # fmt: skip


def test_a_slow_leaf_filling_its_callers_workers_is_where_even_the_other_pages_failures_began() -> None:
    """200 pages/s, 60 of them calling recs for 400 ms: 24 api workers would be needed, 20 there are, all held
    waiting on recs. The api's queue grows and the clients give up there — the pages that never call recs as
    well — and those failures began at recs, which holds the api's workers, not at the api where they wait."""
    spec = cascade()
    begun = engine_begun(spec, [12_000, 12_000, 0])
    failed = sum(begun.values())
    assert failed > 0.5 * 12_000  # far more than the 30 % of pages that call recs
    assert begun["recs"] > 0.95 * failed
    theirs = oracle_begun(simulate(spec, rate_per_s=200.0, requests=4000, warmup=2000, seed=4))
    assert sum(theirs.values()) > 0.5 * 4000 and theirs["recs"] > 0.95 * sum(theirs.values())


@pytest.mark.parametrize(("rate", "fail"), [(300.0, 0.2), (1500.0, 0.05)])
def test_the_engine_and_the_oracle_find_the_same_origins_on_the_docs_example(rate: float, fail: float) -> None:
    """The docs' checkout (retries with a budget, hedging, per-hop timeouts) with the database failing a fifth
    (a twentieth) of its reads, light and overloaded: the same share of the failures begun at each service."""
    spec = scenario_from_text(doc_example(), "graphs.md").graph
    assert spec is not None
    mine = shares(engine_begun(spec, [int(rate * 60)] * 3, fail={"db": fail}))
    report = simulate(spec, rate_per_s=rate, requests=int(rate * 40), warmup=int(rate * 20), seed=5,
                      failures={"db": fail})  # fmt: skip
    theirs = shares(oracle_begun(report))
    for name in spec.services:
        assert mine[name] == pytest.approx(theirs[name], abs=0.05), (name, mine, theirs)

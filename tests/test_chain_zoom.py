"""A chain minute zoomed: sampled requests followed across hops as span trees (oncallsim/zoom/chain.py), traced in
the engine's own loop without changing the minute."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from oncallsim import Simulation
from oncallsim.model import InvalidInput
from oncallsim.model.chain.drive import chain_minute_of, new_chain
from oncallsim.model.chain.layout import (
    DIST_CONSTANT,
    DIST_EXPONENTIAL,
    DIST_LOGNORMAL,
    CallLayout,
    ChainLayout,
    ServiceLayout,
)
from oncallsim.model.chain.world import (
    A_SPAN,
    C_SPAN,
    M_ATTEMPTS,
    M_HEDGES,
    M_RETRIES,
    M_SUCCEEDED,
    SR_FAIL,
    TI_EVERY,
    ChainWorld,
)
from oncallsim.zoom.chain import _requests, check_tree, spans_bound, trace_minute, with_trace, zoom_chain


def busy_layout() -> ChainLayout:
    """Every mechanism a span can meet: retries with a budget, a per-hop timeout, a hedge, parallel copies, a
    probabilistic call, an asynchronous caller, a queue at the leaf that sometimes outlasts the deadline."""
    leaf = ServiceLayout("leaf", 1, 3, 0.004, DIST_EXPONENTIAL, 0.0, False, 0.03, 0, 1.0, None)
    side = ServiceLayout("side", 1, 2, 0.002, DIST_CONSTANT, 0.0, False, None, 0, 1.0, None)
    mid = ServiceLayout(
        "mid", 2, 4, 0.001, DIST_LOGNORMAL, 0.6, True, 0.2, 1, 0.5, 0.9,
        (CallLayout(3, 2, None, 0.0005, True), CallLayout(2, 1, 0.3, 0.0005, False)),
    )  # fmt: skip
    entry = ServiceLayout(
        "entry", 2, 8, 0.0005, DIST_CONSTANT, 0.0, False, None, 1, 0.2, None, (CallLayout(1, 1, None, 0.001, False),)
    )
    return ChainLayout((entry, mid, side, leaf), 0, 0.08)


def retry_layers() -> ChainLayout:
    """top → a → b → leaf, retrying 1, 2 and 3 times; the leaf fails every attempt (set by the test)."""
    leaf = ServiceLayout("leaf", 4, 8, 0.0005, DIST_CONSTANT, 0.0, False, None, 0, 1.0, None)

    def caller(name: str, retries: int, to: int) -> ServiceLayout:
        call = CallLayout(to, 1, None, 0.0001, False)
        return ServiceLayout(name, 4, 8, 0.0002, DIST_CONSTANT, 0.0, False, None, retries, 1.0, None, (call,))

    b, a, top = caller("b", 3, 3), caller("a", 2, 2), caller("top", 1, 1)
    return ChainLayout((top, a, b, leaf), 0, 5.0)


CALLERS_BUSY = {"mid": {"entry"}, "side": {"mid"}, "leaf": {"mid"}}


def traced(layout: ChainLayout, seed: int, arrivals: list[int], every: int, rows: int = 200_000) -> ChainWorld:
    world = with_trace(new_chain(layout, seed), every, rows)
    for minute, count in enumerate(arrivals):
        if minute > 0:
            world.tr_ints[TI_EVERY] = -1  # followed, none new
        world = chain_minute_of(world, minute, count)
    return world


def spans_of(world: ChainWorld, layout: ChainLayout) -> list[dict[str, Any]]:
    ti, tr, lost = trace_minute(world)
    assert lost == 0
    return _requests(ti, tr, list(layout.names))


def test_the_trace_changes_nothing_in_the_minute() -> None:
    layout = busy_layout()
    plain = new_chain(layout, 11)
    for minute, count in enumerate((9000, 9000)):
        plain = chain_minute_of(plain, minute, count)
    world = traced(layout, 11, [9000, 9000], every=1)
    assert int(world.tr_ints[1]) > 9000  # spans were written
    for name in ChainWorld._fields:
        if name.startswith("tr_"):
            continue
        mine, theirs = getattr(world, name), getattr(plain, name)
        if name == "att_i":
            mine, theirs = np.delete(mine, A_SPAN, axis=1), np.delete(theirs, A_SPAN, axis=1)
        if name == "call_i":
            mine, theirs = np.delete(mine, C_SPAN, axis=1), np.delete(theirs, C_SPAN, axis=1)
        assert np.array_equal(mine, theirs, equal_nan=True), name


def test_spans_of_a_request_form_a_tree() -> None:
    layout = busy_layout()
    world = traced(layout, 5, [9000, 9000], every=3)
    requests = spans_of(world, layout)
    assert len(requests) == 3000
    outcomes = {s["outcome"] for r in requests for s in r["spans"]}
    assert {"ok", "timed out", "cancelled"} <= outcomes  # the busy layout exercises the rules' exceptions
    kinds = {s["kind"] for r in requests for s in r["spans"]}
    assert kinds == {"first", "retry", "hedge"}
    for r in requests:
        assert check_tree(r["spans"], CALLERS_BUSY) == [], r["number"]
        groups: dict[int, list[dict[str, Any]]] = {}
        for s in r["spans"]:
            groups.setdefault(s["group"], []).append(s)
        for copies in groups.values():  # a call's copies: one first try, its retries numbered on, same parent
            assert copies[0]["kind"] == "first" and copies[0]["try"] == 1
            assert len({c["parent"] for c in copies}) == 1
            tries = [c["try"] for c in copies if c["kind"] != "hedge"]
            assert tries == list(range(1, 1 + len(tries)))


def test_a_broken_tree_is_caught() -> None:
    layout = busy_layout()
    spans = spans_of(traced(layout, 5, [600], every=1), layout)[0]["spans"]
    child = next(s for s in spans if s["parent"] is not None)
    assert check_tree([{**s, "sent_ms": -1.0} if s is child else s for s in spans], CALLERS_BUSY)
    assert check_tree(spans, {"mid": {"side"}, "side": {"mid"}, "leaf": {"mid"}})


def test_attempts_at_the_leaf_are_the_product_of_the_layers_retries() -> None:
    layout = retry_layers()
    world = new_chain(layout, 3)
    world.svc_r[3, SR_FAIL] = 1.0  # every attempt at the leaf fails (a fault's errors = 1)
    world = with_trace(world, 7, 50_000)
    world = chain_minute_of(world, 0, 700)
    requests = spans_of(world, layout)
    assert len(requests) == 100
    product = (1 + 1) * (1 + 2) * (1 + 3)
    for r in requests:
        per = {name: sum(s["service"] == name for s in r["spans"]) for name in layout.names}
        assert per == {"top": 1, "a": 2, "b": 2 * 3, "leaf": product}
        assert r["outcome"] == "failed"
        assert all(s["outcome"] == "failed" for s in r["spans"])
    assert spans_bound(world, 0) == 1 + 2 * (1 + 3 * (1 + 4))


def test_span_counts_are_the_minute_s_counts_when_every_request_is_traced() -> None:
    """Minute 0 (nothing in flight before it), every request traced: the spans that reached each service in the
    minute are its measured attempts; the retries and hedges each caller sent, its measured ones; the successes
    answered in the minute, its measured successes."""
    layout = busy_layout()
    world = traced(layout, 8, [9000], every=1)
    requests = spans_of(world, layout)
    spans = [s for r in requests for s in r["spans"]]
    by_id = {s["id"]: s for s in spans}
    origin = {s["id"]: r["arrival_s"] for r in requests for s in r["spans"]}
    for k, name in enumerate(layout.names):
        mine = [s for s in spans if s["service"] == name]
        reached = sum(s["arrived_ms"] is not None and origin[s["id"]] + s["arrived_ms"] / 1000 < 60 for s in mine)
        assert reached == world.m_svc[k, M_ATTEMPTS], name
        done = sum(s["service_outcome"] == "ok" and origin[s["id"]] + s["end_ms"] / 1000 < 60 for s in mine)
        assert done == world.m_svc[k, M_SUCCEEDED], name
        sent = [s for s in spans if s["parent"] is not None and by_id[s["parent"]]["service"] == name]
        retries = sum(s["kind"] == "retry" and origin[s["id"]] + s["sent_ms"] / 1000 < 60 for s in sent)
        hedges = sum(s["kind"] == "hedge" and origin[s["id"]] + s["sent_ms"] / 1000 < 60 for s in sent)
        assert (retries, hedges) == (world.m_svc[k, M_RETRIES], world.m_svc[k, M_HEDGES]), name


def test_a_too_small_trace_counts_what_it_lost() -> None:
    layout = busy_layout()
    world = traced(layout, 8, [3000], every=1, rows=100)
    _, _, lost = trace_minute(world)
    assert int(world.tr_ints[1]) == 100 and lost > 0


@pytest.fixture(scope="module")
def cascade() -> Simulation:
    sim = Simulation("cascade", seed=1, engine="request")
    sim.run(until=4)
    return sim


def test_a_chain_run_zooms_by_replay_and_agrees_with_its_record(cascade: Simulation) -> None:
    z = zoom_chain(cascade, 2)
    assert z.record == {k: v for k, v in cascade.timeline[2].to_dict().items() if k != "extras"}
    assert z.followed and z.lost == 0 and 150 <= len(z.requests) <= 200
    k = z.sample_every
    for name in z.services:
        reached = z.counts[name]["reached_in_minute"]
        measured = z.measured[name]["attempts"]
        # every k-th request sampled: its attempts are a sample of the minute's (binomial per request, ≤ 5 sd);
        # the minute also holds attempts of the minute before's requests (a second's worth at most)
        assert abs(reached * k - measured) <= 5 * k * math.sqrt(reached + 1) + measured / 60, name
    callers = {"catalog": {"api"}, "recs": {"api", "catalog"}}
    for r in z.requests:
        assert check_tree(r["spans"], callers) == []
    assert zoom_chain(cascade, 2).to_dict() == z.to_dict()  # deterministic
    assert len(cascade.timeline) == 4  # the live run is left as it was


def test_zooms_are_refused_with_one_line(cascade: Simulation) -> None:
    with pytest.raises(InvalidInput, match="minute of the run, 0 to 3"):
        zoom_chain(cascade, 4)
    one = Simulation("bad-deploy", seed=1)
    one.step()
    with pytest.raises(InvalidInput, match="one service, not a chain"):
        zoom_chain(one, 0)


def test_the_page_draws_a_waterfall_per_request_in_each_language(cascade: Simulation) -> None:
    from oncallsim.zoom.chain_html import WATERFALLS, render_chain_zoom_html

    z = zoom_chain(cascade, 3)
    english = render_chain_zoom_html(z)
    assert english.count('class="waterfall"') == min(WATERFALLS, len(z.requests))
    assert "Attempts per service" in english and "<script" not in english  # no script: CSP-safe, offline
    for name in z.services:
        assert f'<td class="label">{name}' in english
    danish = render_chain_zoom_html(z, language="da")
    assert "Forsøg pr. tjeneste" in danish and "Attempts per service" not in danish
    arabic = render_chain_zoom_html(z, language="ar", served=True, back="/runs/x")
    assert 'dir="rtl"' in arabic and "/static/css/app.css" in arabic and 'href="/runs/x"' in arabic


def test_one_service_zoom_refuses_a_chain_minute(cascade: Simulation) -> None:
    from oncallsim.zoom import zoom_run

    with pytest.raises(InvalidInput, match="chain of services"):
        zoom_run(cascade, 1)


def test_cli_zooms_a_chain_run(cascade: Simulation, tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from oncallsim.cli import app

    saved = tmp_path / "run.json"
    cascade.run_file().save(saved)
    page, data = tmp_path / "zoom.html", tmp_path / "zoom.json"
    done = CliRunner().invoke(app, ["zoom", str(saved), "--minute", "1", "--html", str(page), "--json", str(data)])
    assert done.exit_code == 0, done.output
    assert "minute 1" in done.output and "requests followed" in done.output and "api" in done.output
    z = json.loads(data.read_text())
    assert z["kind"] == "chain" and z["minute"] == 1 and z["requests"][0]["spans"][0]["service"] == "api"
    assert 'class="waterfall"' in page.read_text()


def test_the_console_zooms_a_chain_run(cascade: Simulation, tmp_path: Path) -> None:
    from tests.test_web import console

    with console(tmp_path / "runs.sqlite3") as client:
        files = {"file": ("run.json", cascade.run_file().model_dump_json(), "application/json")}
        response = client.post("/api/runs/import", files=files)
        assert response.status_code == 201, response.text
        run_id = response.json()["id"]
        data = client.get(f"/api/runs/{run_id}/zoom", params={"minute": 2})
        assert data.status_code == 200, data.text
        assert data.json()["kind"] == "chain" and data.json()["requests"]
        page = client.get(f"/runs/{run_id}/zoom", params={"minute": 2, "lang": "hy"})
        assert page.status_code == 200 and 'class="waterfall"' in page.text and 'lang="hy"' in page.text
        late = client.get(f"/api/runs/{run_id}/zoom", params={"minute": 9})
        assert late.status_code == 422

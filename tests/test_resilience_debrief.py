"""The debrief of a request-engine run (issue 11 item 7): overload split by what turned the requests away
(throttled, limited, dropped), attempts per request and wasted work, and the counterfactual with the one overload
mechanism that would have saved the most, switched on from the start with the player's other decisions."""

from __future__ import annotations

import pytest

from oncallsim import Action, Simulation
from oncallsim.debrief import make_report, run_outcome
from oncallsim.debrief.html import render_html
from oncallsim.debrief.markdown import render_markdown
from oncallsim.debrief.report import HEADLINES
from oncallsim.debrief.summary import wasted_seconds
from oncallsim.model import CONTROL_SPECS
from oncallsim.policies.counterfactual import (
    MECHANISMS,
    Mechanism,
    _replay,
    counterfactuals,
    mechanism_counterfactuals,
    with_balancer,
    with_settings,
)

# seed 3: the flash crowd's surge begins at 11:25; 40 minutes see it and the fleet's answer
MINUTES = 40
SPLIT = ("throttled", "limited", "dropped")


def flash_crowd(overrides: dict[str, object] | None = None, actions: list[Action] | None = None) -> Simulation:
    sim = Simulation("flash-crowd", seed=3, minutes=MINUTES, overrides=overrides or {})
    sim.run(actions or [])
    return sim


@pytest.fixture(scope="module")
def idle() -> Simulation:
    return flash_crowd()


@pytest.fixture(scope="module")
def guarded() -> Simulation:
    """Every rejecting mechanism on at once: the client's throttle, the limiter, CoDel with a queue limit."""
    return flash_crowd({"breaker": "sre", "limiter": "bbr", "queue_discipline": "codel", "queue_limit": 200})


def test_overload_splits_into_throttled_limited_dropped_and_the_causes_still_add_up(guarded: Simulation) -> None:
    found = run_outcome(guarded)
    causes = found.budget_spent_by_cause
    assert list(causes) == ["overload", "throttled", "limited", "dropped", "timeout", "bad_build", "dead_instance"]
    assert sum(causes.values()) == pytest.approx(found.budget_spent, rel=1e-9, abs=1e-12)
    assert all(v >= 0 for v in causes.values())
    assert causes["limited"] > 0 and causes["dropped"] > 0
    # each part is its per-second rate over the requests, minute by minute, in budget units
    p = guarded.params
    scale = 1.0 / p.error_budget / p.budget_period_min
    for cause, field in (("throttled", "throttled_per_s"), ("limited", "limited_per_s"), ("dropped", "dropped_per_s")):
        expected = 0.0
        for r in guarded.timeline:
            extras = r.extras or {}
            shares = [
                float(extras.get(f) or 0.0) / r.requests_per_s
                for f in ("throttled_per_s", "limited_per_s", "dropped_per_s")
            ]
            fit = min(1.0, r.error_overload / sum(shares)) if sum(shares) > 0 else 0.0
            expected += float(extras.get(field) or 0.0) / r.requests_per_s * fit * scale
        assert causes[cause] == pytest.approx(expected, rel=1e-9, abs=1e-15), cause
    # the split never takes more than the overload the records counted
    lumped = sum(r.error_overload for r in guarded.timeline) * scale
    assert causes["overload"] + sum(causes[c] for c in SPLIT) == pytest.approx(lumped, rel=1e-9, abs=1e-12)


def test_a_run_without_those_mechanisms_has_zero_in_each_part(idle: Simulation) -> None:
    causes = run_outcome(idle).budget_spent_by_cause
    assert all(causes[c] == 0.0 for c in SPLIT)
    assert causes["timeout"] > 0.05  # FIFO queues past the timeout: the flash crowd's failure


def test_a_minute_engine_run_keeps_the_four_causes_and_has_no_request_measures() -> None:
    sim = Simulation("surge", seed=2, minutes=30)
    sim.run()
    found = run_outcome(sim)
    assert list(found.budget_spent_by_cause) == ["overload", "timeout", "bad_build", "dead_instance"]
    assert found.attempts_per_request is None and found.wasted_work_share is None


def test_attempts_per_request_and_wasted_work(idle: Simulation) -> None:
    found = run_outcome(idle)
    attempts = sum((r.extras or {}).get("attempts_per_s", r.admitted_per_s) for r in idle.timeline)
    assert found.attempts_per_request == pytest.approx(attempts / sum(r.admitted_per_s for r in idle.timeline))
    assert found.attempts_per_request == pytest.approx(1.0)  # no retries in this run
    # FIFO queues past the timeout serve answers nobody waits for; CoDel drops them before any work is spent,
    # deadlines only before the work and between its database reads (what was begun is still wasted)
    assert found.wasted_work_share is not None and 0.1 < found.wasted_work_share < 1.0
    codel = run_outcome(flash_crowd({"queue_discipline": "codel"})).wasted_work_share
    deadlines = run_outcome(flash_crowd({"deadline_propagation": True})).wasted_work_share
    assert codel is not None and codel < 0.01
    assert deadlines is not None and codel < deadlines < found.wasted_work_share
    # a share of the workers' busy time, never more than all of it
    busy = sum(r.utilization * r.servers * 60.0 for r in idle.timeline)
    assert found.wasted_work_share == pytest.approx(sum(wasted_seconds(r) for r in idle.timeline) / busy)
    # without deadlines no work is cut short: the engine's seconds are its share of the answered requests' service
    for r in idle.timeline:
        extras = r.extras or {}
        answered = extras["completed_per_s"] * 60.0 * r.service_time_ms / 1000.0
        assert wasted_seconds(r) == pytest.approx(extras["wasted_work_share"] * answered, rel=1e-9, abs=1e-9)


def test_with_settings_generalizes_with_balancer(idle: Simulation) -> None:
    a, b = with_balancer(idle, "p2c"), with_settings(idle, {"balancer": "p2c"})
    assert a.timeline == b.timeline
    assert a.actions[0] == Action(0, "balancer", "p2c")


def test_with_settings_keeps_the_players_other_decisions_and_drops_theirs_on_those_controls() -> None:
    sim = flash_crowd(actions=[Action(25, "floor", 20), Action(26, "queue_discipline", "codel")])
    other = with_settings(sim, {"limiter": "bbr", "queue_limit": 300, "queue_discipline": "codel"})
    assert [(a.minute, a.control, a.value) for a in other.actions] == [
        (0, "limiter", "bbr"),
        (0, "queue_limit", 300),
        (0, "queue_discipline", "codel"),
        (25, "floor", 20),
    ]
    assert other.minute == sim.minute and other.state.controls.queue_discipline == "codel"


def test_the_mechanism_that_saves_the_most_is_kept(idle: Simulation) -> None:
    spent = {}
    for m in MECHANISMS:
        if m.available() and not (m.name == "retry_budget"):  # no retries in this run: a budget cannot matter
            spent[m.name] = run_outcome(with_settings(idle, m.settings)).budget_spent
    kept = mechanism_counterfactuals(idle)
    best = min(spent, key=lambda k: spent[k])
    assert list(kept) == [best]
    assert run_outcome(kept[best]).budget_spent == pytest.approx(spent[best])
    assert spent[best] < run_outcome(idle).budget_spent


def test_a_mechanism_already_on_or_not_built_is_skipped() -> None:
    assert not Mechanism("nothing", {"no_such_control": 1}).available()
    retry = next(m for m in MECHANISMS if m.name == "retry_budget")
    assert retry.available() == ("retry_budget" in CONTROL_SPECS)
    sim = flash_crowd({"queue_discipline": "codel"})
    assert "codel" not in mechanism_counterfactuals(sim)


def test_the_debrief_says_what_the_mechanism_would_have_saved(idle: Simulation) -> None:
    others = counterfactuals(idle)
    assert {"hands-off", "textbook", "p2c"} <= set(others)
    kept = [name for name in others if name in {m.name for m in MECHANISMS}]
    assert len(kept) == 1
    report = make_report(idle, others)
    mine = report.counterfactuals[kept[0]]
    sentence = next(
        t for t, _args in report.headline_parts if t in (HEADLINES["mechanism"], HEADLINES["mechanism_recovered"])
    )
    args = next(a for t, a in report.headline_parts if t == sentence)
    assert args["other"] == f"{mine.budget_spent:.1%}" and args["mine"] == f"{report.budget_spent:.1%}"
    if sentence == HEADLINES["mechanism_recovered"]:
        assert mine.time_to_recovery_min is not None and mine.incident_minute is not None
        assert args["clock"] == idle.plan.clock(mine.incident_minute + mine.time_to_recovery_min)
    # the Markdown postmortem and the offline report carry the split, the attempts and the wasted work
    markdown = render_markdown(report)
    assert "| attempts per request | 1.00× |" in markdown
    assert "work wasted on abandoned requests" in markdown and "dropped by a queue (CoDel, full)" in markdown
    timelines = {name: o.timeline for name, o in others.items()}
    html = render_html(report, idle.timeline, idle.plan, idle.params, idle.actions, timelines, "da")
    assert 'data-key="attempts_per_request"' in html and "forsøg pr. request" in html


def test_a_replay_stops_once_it_has_spent_more_than_its_bound(idle: Simulation) -> None:
    codel = {"queue_discipline": "codel"}
    whole = with_settings(idle, codel)
    spent = run_outcome(whole).budget_spent
    assert spent > 0
    assert _replay(idle, codel, lambda: spent * 0.5) is None  # it passes half its total before the end
    kept = _replay(idle, codel, lambda: spent)  # exactly its total: played to the end, every minute the same
    assert kept is not None and kept.timeline == whole.timeline


def test_a_run_without_decisions_is_its_own_hands_off_replay() -> None:
    sim = Simulation("bad-deploy", seed=5, minutes=30)
    sim.run([])
    others = counterfactuals(sim)
    assert others["hands-off"] is sim
    assert sim.counterfactual(None, minutes=sim.minute).timeline == sim.timeline  # what the replay would give
    acted = Simulation("bad-deploy", seed=5, minutes=30)
    acted.run([Action(12, "rollback", None)])
    assert counterfactuals(acted)["hands-off"].timeline == sim.timeline


def test_the_debrief_chart_shows_goodput_and_names_the_mechanism_as_the_table_does(idle: Simulation) -> None:
    from oncallsim.debrief.charts import PANELS, REQUEST_PANELS, debrief_figure
    from oncallsim.debrief.html import localize_figure, translate_text
    from oncallsim.debrief.report import COUNTERFACTUAL_LABELS
    from oncallsim.i18n import translations

    others = counterfactuals(idle)
    mechanism = next(name for name in others if name in COUNTERFACTUAL_LABELS)
    fig = debrief_figure(idle.timeline, idle.params, idle.actions, 1000.0, {n: o.timeline for n, o in others.items()})
    assert len({t.legend for t in fig.data}) == len(PANELS) + len(REQUEST_PANELS) == 7
    titles = [a.text for a in fig.layout.annotations if not a.text.startswith("▼")]
    assert titles[-1] == "Goodput vs throughput (req/s)"
    by_name = {t.name: t for t in fig.data}
    goodput = [(r.extras or {})["goodput_per_s"] for r in idle.timeline]
    assert list(by_name["goodput"].y) == goodput and by_name["goodput"].yaxis == "y7"
    assert max(goodput) < max(by_name["throughput"].y)  # the flash crowd's timeouts: sent, not useful
    label = COUNTERFACTUAL_LABELS[mechanism]
    assert f"p99 ({label})" in by_name and f"goodput ({label})" in by_name  # not its identifier
    assert not any(f"({mechanism})" in name for name in by_name)
    styles = {(t.line.color, t.line.dash) for t in fig.data if t.name.startswith("p99 (")}
    assert len(styles) == len(others) == 4  # hands-off, textbook, p2c, the mechanism: each its own line
    # in Danish, the series and the counterfactual each in their words (p2c is a name in every language)
    assert translate_text("goodput (p2c)", "da") == f"{translate_text('goodput', 'da')} (p2c)"
    danish = translate_text(f"goodput ({label})", "da")
    assert danish == f"{translate_text('goodput', 'da')} ({translations('da').gettext(label)})" != f"goodput ({label})"
    localized = localize_figure(fig.to_plotly_json(), "da")
    assert translate_text("Goodput vs throughput (req/s)", "da") in [
        a["text"] for a in localized["layout"]["annotations"]
    ]
    # a minute-engine run keeps its six panels
    plain = Simulation("bad-deploy", seed=7, minutes=20)
    plain.run([])
    assert len({t.legend for t in debrief_figure(plain.timeline, plain.params).data}) == len(PANELS)


def test_replays_side_by_side_give_what_one_after_another_gives(idle: Simulation, monkeypatch) -> None:
    """The debrief's replays run on the machine's cores: the same runs, the same mechanisms kept, every record
    equal, as when they run one after another (the bound each reads only prunes replays that cannot be kept)."""
    from oncallsim.policies import counterfactual

    seen = []
    monkeypatch.setattr(counterfactual, "REPLAY_THREADS", 1)
    one = counterfactuals(idle, progress=lambda done, total: seen.append((done, total)))
    monkeypatch.setattr(counterfactual, "REPLAY_THREADS", 3)
    three = counterfactuals(idle)
    assert list(one) == list(three)
    for name in one:
        assert one[name].timeline == three[name].timeline, name
    assert [d for d, _ in seen] == list(range(1, len(seen) + 1)) and {t for _, t in seen} == {len(seen)}

"""Kratos's mechanisms against oracles written apart from the engine (issue 23, item 10; ``oncallsim validate``).

Each check is run as the report runs it (its quick size), and once with a deliberately wrong oracle parameter:
the check must then fail, or it could not tell a wrong engine either.
"""

from __future__ import annotations

import math

import pytest

from oncallsim.verify import aegis, balancing, bbr, classic, codel, jsq
from oncallsim.verify.kratos import kratos_section


def test_the_jsq_oracle_meets_m_m_1_and_the_erlang_n_round_robin_in_closed_form() -> None:
    s, rho, n = 0.05, 0.8, 10
    rnd = jsq.simulate("random", n, rho, s, 60_000, seed=3)
    assert abs(rnd.mean_s - s / (1 - rho)) <= max(3 * rnd.mean_half, 0.03 * s / (1 - rho)), rnd
    # one client's round robin: each server sees Erlang-N interarrivals of rate λ/N (E_N/M/1): the response is
    # exponential of rate μ(1 − σ), σ = A*(μ(1 − σ)), A*(x) = (λ/(λ + x))^N with λ the whole stream's rate
    lam, mu, sigma = rho * n / s, 1 / s, 0.5
    for _ in range(200):
        sigma = (lam / (lam + mu * (1 - sigma))) ** n
    rr = jsq.simulate("round-robin", n, rho, s, 60_000, seed=4)
    assert rr.mean_s == pytest.approx(1 / (mu * (1 - sigma)), rel=0.05), (rr, sigma)
    assert rr.p99_s == pytest.approx(math.log(100) / (mu * (1 - sigma)), rel=0.08)
    # JSQ(2) by queue length beats both by far; with one client it is JSQ(2) by the client's own counts
    two = jsq.simulate("jsq2", n, rho, s, 60_000, seed=5)
    assert two.mean_s < 0.8 * rr.mean_s
    assert jsq.simulate("jsq2-global", n, rho, s, 60_000, seed=5) == two
    with pytest.raises(ValueError, match="policy"):
        jsq.simulate("p3c", n, rho, s, 10)


@pytest.fixture(scope="module")
def one_client() -> balancing.BalancePoint:
    return balancing.balance_point(balancing.SETUPS[0], 1)


def test_p2c_with_one_client_sits_near_jsq2_and_random_and_round_robin_meet_the_oracle(
    one_client: balancing.BalancePoint,
) -> None:
    assert one_client.baseline_ok("random") and one_client.baseline_ok("round-robin"), one_client
    assert one_client.p2c_ok, (one_client.p2c_mean_gap, one_client.p2c_p99_gap, one_client.ratios())


def test_the_balancing_check_fails_against_an_oracle_told_the_wrong_load(one_client: balancing.BalancePoint) -> None:
    wrong = balancing.balance_point(balancing.SETUPS[0], 1, oracle_utilization=0.9)
    assert not wrong.baseline_ok("random") and not wrong.p2c_ok
    wrong_tolerance = one_client._replace(tolerance=abs(one_client.p2c_mean_gap) / 2)
    assert not wrong_tolerance.p2c_ok


def test_p2c_with_64_clients_herds_on_the_shared_cpu_reading() -> None:
    many = balancing.balance_point(balancing.SETUPS[0], 64)
    assert many.baseline_ok("round-robin")
    assert not many.p2c_ok
    assert many.engine["p2c"][0] > many.engine["round-robin"][0]  # JSQ(2) by its own counts would not lose


def test_bbr_keeps_what_it_passes_near_capacity_as_the_load_climbs_and_without_it_goodput_collapses() -> None:
    rows = bbr.throughput(quick=True)
    assert [r.offered for r in rows] == list(bbr.LOADS_QUICK)
    above = [r for r in rows if r.offered >= 1.3]
    assert above and all(r.ok for r in above), rows
    assert max(r.passed for r in above) - min(r.passed for r in above) < 0.1  # flat
    assert all(r.off_goodput < 0.2 for r in above)
    assert rows[0].ok  # 0.7 c: nothing shed


def test_the_cpu_emas_rise_from_idle_meets_its_closed_form_and_not_another_decay() -> None:
    first, _ = bbr.measured_rise_s()
    level = bbr.saturated_ema()
    assert 950 < level < 1000
    expected = bbr.ema_rise_s(level)
    assert bbr.ema_rise_s() == 16.0  # ⌈ln 0.2 ∕ ln 0.95⌉ = 32 ticks of 0.5 s
    assert abs(first - int(expected)) <= 1, (first, expected)
    assert abs(first - int(bbr.ema_rise_s(level, decay=0.9))) > 1  # a wrong decay is told apart


def test_the_aegis_oracle_answers_everything_below_capacity_on_either_server_and_sheds_a_step_on_a_go_server() -> None:
    for server in ("fifo", "ps"):
        calm = aegis.simulate([0.5], server, seed=2)
        assert sum(calm.goodput[:-1]) / 5 == pytest.approx(0.5, abs=0.03), server
        assert calm.passed[:-1] == calm.goodput[:-1]  # nothing shed, nothing late (the last bin: some still served)
    go = aegis.simulate([0.5, 2.0], "ps", seed=2, bin_s=10.0)
    assert min(go.goodput[6:]) < 0.4 and sum(go.goodput[9:12]) / 3 > 0.75  # a dip while the EMA climbs, then held
    off = aegis.simulate([0.5, 2.0], "ps", limiter=False, seed=2, bin_s=10.0)
    assert max(off.goodput[9:12]) < 0.2
    with pytest.raises(ValueError, match="server"):
        aegis.simulate([1.0], "lifo")


@pytest.fixture(scope="module")
def sudden_step() -> bbr.Step:
    return bbr.step(quick=True)


def test_after_a_sudden_step_bbr_recovers_as_aegis_does_and_timed_from_admission_it_kept_the_queue(
    sudden_step: bbr.Step,
) -> None:
    s = sudden_step
    assert s.ok, s
    assert 0 <= s.engine.recovered_s <= 30 and s.engine.settled >= 0.75
    assert s.engine_v2.recovered_s < 0 and s.engine_v2.settled < 0.05  # model version 2: the queue kept
    assert s.engine_off.settled < 0.05
    # a wrong oracle: the worker pool timed from admission as the reference for version 3's rule, or a Go server
    # that never sheds the backlog (no limiter)
    assert not s._replace(oracle=s.oracle_admission).ok
    assert not s._replace(oracle_go=s.engine_off).ok


def test_codel_drops_where_rfc_8289_does_but_for_its_one_packet_rule() -> None:
    engine = codel.engine_drops()
    every = codel.oracle_drops(keep_last=False)
    assert len(engine.drops) > 100 and engine.drops == pytest.approx(every.drops, abs=1e-9)
    assert engine.served == every.served
    rfc = codel.oracle_drops()
    assert len(rfc.drops) != len(engine.drops) and rfc.drops[0] > engine.drops[0]
    # a wrong oracle parameter: the interval halved, or the target doubled
    assert codel.oracle_drops(interval=0.05, keep_last=False).drops != every.drops
    assert codel.oracle_drops(target=0.01, keep_last=False).drops != every.drops
    # the control law: in the first episode the k-th drop is due interval·Σ_{j<k} 1/√j after the first, and
    # happens at the first dequeue from then (one every 10 ms)
    due = every.drops[0]
    for k in range(1, 8):
        due += 0.1 / math.sqrt(k)
        assert due - 1e-9 <= every.drops[k] < due + codel.SERVICE_S + 1e-9, (k, due, every.drops[k])


def test_the_classic_breaker_follows_hystrix_on_the_script_and_a_wrong_oracle_is_told_apart() -> None:
    engine = classic.engine_sequence()
    oracle = classic.oracle_sequence()
    assert engine == oracle
    states = [c.state for c in engine[0]]
    assert states == ["closed", "open", "half-open", "open", "half-open", "closed"]
    assert engine[0][1].at_s > 20.0  # 40 % failures did not trip it
    assert classic.oracle_sequence(sleep_s=4.0) != engine
    assert classic.oracle_sequence(share=0.4) != engine
    assert classic.oracle_sequence(volume=200) != engine


def test_the_section_says_each_check_with_its_tolerance_and_verdict(
    one_client: balancing.BalancePoint, sudden_step: bbr.Step
) -> None:
    from oncallsim.verify.kratos import KratosChecks

    k = KratosChecks(
        (one_client,),
        tuple(bbr.throughput(quick=True)),
        (17, 975.0, bbr.ema_rise_s(975.0)),
        codel.engine_drops(),
        codel.oracle_drops(),
        codel.oracle_drops(keep_last=False),
        classic.engine_sequence(),
        classic.oracle_sequence(sleep_s=4.0),
        sudden_step._replace(oracle=sudden_step.oracle_admission),  # a wrong oracle for version 3's rule
    )
    text = kratos_section(k)
    assert "## Kratos's mechanisms against oracles" in text
    assert "| 10 × 4, ρ = 0.8 | 1 | p2c |" in text and "within 10 %" in text
    rows = {line.split(" | ")[0].lstrip("| "): line for line in text.splitlines() if line.startswith("| ")}
    assert rows["CoDel against RFC 8289 §5 without that one line"].endswith("| yes |")
    assert "RFC 8289 §5 as written" in text and "| **no** |" in rows[next(r for r in rows if "as written" in r)]
    breaker = next(line for key, line in rows.items() if key.startswith("the classic breaker"))
    assert breaker.endswith("| **no** |")  # the oracle with a 4 s sleep
    step = {key: line for key, line in rows.items() if key.startswith(("engine, model version", "aegis apart"))}
    assert len(step) == 5
    assert step["engine, model version 3: timed from the worker's start"].endswith("| **no** |")
    assert step["engine, model version 2: timed from the admission"].endswith("| yes |")
    assert "A sudden step" in text and "| never |" in text
    assert kratos_section(None) == ""

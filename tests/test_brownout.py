"""A database brownout (a scenario event and a game day's fault): both engines slow every query by the same
factor for the same minutes, and say so in the event log."""

from __future__ import annotations

import pytest

from oncallsim import Simulation
from oncallsim.model import InvalidInput

BROWNOUT = {"kind": "brownout", "at": "08:10", "minutes": 10, "slowdown": 4.0}


def _run(engine: str) -> list[object]:
    sim = Simulation("free-play", seed=1, minutes=30, engine=engine)
    sim.inject(BROWNOUT)
    return sim.run()


@pytest.mark.parametrize("engine", ["minute", "request"])
def test_a_brownout_slows_the_database_for_its_minutes(engine: str) -> None:
    records = _run(engine)
    codes = [(r.minute, e.code) for r in records for e in r.events if e.code.startswith("brownout")]
    assert codes == [(10, "brownout_started"), (20, "brownout_ended")]
    before, during, after = records[8], records[15], records[25]
    assert during.db_utilization == pytest.approx(4 * before.db_utilization, rel=0.1)
    assert during.query_time_ms > 10 * before.query_time_ms
    assert after.query_time_ms == pytest.approx(before.query_time_ms, rel=0.1)


def test_the_engines_agree_on_a_brownout() -> None:
    minute, request = _run("minute")[15], _run("request")[15]
    assert request.db_utilization == pytest.approx(minute.db_utilization, rel=0.05)
    assert request.query_time_ms == pytest.approx(minute.query_time_ms, rel=0.15)


def test_a_bad_brownout_names_its_field() -> None:
    sim = Simulation("free-play", seed=1, minutes=30)
    with pytest.raises(InvalidInput, match="slowdown"):
        sim.inject({**BROWNOUT, "slowdown": 0.5})

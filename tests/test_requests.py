"""The request-level engine: its generator against published values, determinism, the seam, bad input.

The statistical agreement with the formulas lives in tests/test_validation.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from oncallsim import Simulation
from oncallsim.model.errors import InvalidInput
from oncallsim.model.request.generator import next_u64, seeded, splitmix64
from oncallsim.simulation import RunFile


def test_xoshiro256starstar_matches_the_reference_sequence() -> None:
    # xoshiro256** from state {1, 2, 3, 4}: the first outputs of Blackman & Vigna's reference C code.
    s = np.array([1, 2, 3, 4], dtype=np.uint64)
    assert [int(next_u64(s)) for _ in range(4)] == [11520, 0, 1509978240, 1215971899390074240]


def test_splitmix64_matches_the_reference() -> None:
    # splitmix64 seeded with 0: its first output, as in the reference implementation.
    assert splitmix64(0)[1] == 0xE220A8397B1DCDAF


def test_seeds_give_distinct_nonzero_states() -> None:
    states = {tuple(int(v) for v in seeded(seed)) for seed in range(200)}
    assert len(states) == 200 and all(any(s) for s in states)


def _run(seed: int, actions: list[tuple[int, str, object]] = ()) -> Simulation:  # type: ignore[assignment]
    sim = Simulation("bad-deploy", seed=seed, engine="request", minutes=25)
    by_minute: dict[int, list[tuple[str, object]]] = {}
    for minute, name, value in actions:
        by_minute.setdefault(minute, []).append((name, value))
    while not sim.done:
        sim.step(by_minute.get(sim.minute, []))
    return sim


def test_same_seed_and_actions_give_the_same_run_bit_for_bit() -> None:
    actions = [(3, "floor", 14), (6, "rollback", None), (8, "ttl_s", 120.0)]
    a, b = _run(5, actions), _run(5, actions)
    assert a.timeline == b.timeline
    assert _run(6, actions).timeline != a.timeline


def test_run_file_names_the_engine_and_replays_bit_for_bit() -> None:
    sim = _run(2, [(4, "rollback", None), (10, "shed_share", 0.5)])
    file = sim.run_file()
    assert file.engine == "request"
    again = Simulation.replay(RunFile.parse(file.model_dump_json()))
    assert again.engine.name == "request"
    assert again.timeline == sim.timeline


def test_records_are_measured_and_carry_the_extras() -> None:
    sim = _run(1)
    r = sim.timeline[5]
    assert r.extras is not None
    assert r.extras["p50_ms"] <= r.p99_ms <= r.extras["p999_ms"] <= 2000.0
    assert len(r.extras["instances"]["served"]) == r.serving
    # counts per minute: the rates are whole numbers of requests per minute
    assert (r.requests_per_s * 60) == pytest.approx(round(r.requests_per_s * 60), abs=1e-9)
    assert 0.0 <= r.error_rate <= 1.0 and 0.0 <= r.cache_hit <= 1.0
    assert r.to_dict()["extras"]["max_queue"] >= 0
    # the bad build fails requests once the deploy has started
    assert max(x.error_bad_build for x in sim.timeline) > 0.01


def test_both_engines_see_the_same_traffic_draws() -> None:
    minute = Simulation("surge", seed=4, minutes=10).run()
    request = Simulation("surge", seed=4, minutes=10, engine="request").run()
    for m, r in zip(minute, request, strict=True):
        assert r.expected_requests_per_s == m.expected_requests_per_s
        assert abs(r.requests_per_s - m.requests_per_s) <= 1 / 60 / 2 + 1e-9  # the count is the rate × 60, rounded


def test_unknown_engine_is_a_clear_error() -> None:
    with pytest.raises(InvalidInput) as err:
        Simulation("surge", engine="quantum")
    assert err.value.field == "engine" and "minute" in str(err.value) and "request" in str(err.value)


def test_run_file_with_an_unknown_engine_is_refused() -> None:
    file = Simulation("surge", seed=1, minutes=3).run_file().model_dump()
    file["engine"] = "quantum"
    with pytest.raises(InvalidInput) as err:
        Simulation.replay(RunFile.model_validate(file))
    assert err.value.field == "engine"


def test_request_engine_refuses_params_it_cannot_hold() -> None:
    with pytest.raises(InvalidInput) as err:
        Simulation("free-play", engine="request", overrides={"hot_objects": 1e8})
    assert err.value.field == "hot_objects"


def test_debrief_of_a_request_run_replays_its_counterfactuals_on_the_same_engine(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from oncallsim.cli import app
    from oncallsim.policies import counterfactuals

    sim = _run(3, [(12, "rollback", None)])
    others = counterfactuals(sim)
    assert others and all(o.engine.name == "request" for o in others.values())
    saved = tmp_path / "run.json"
    sim.run_file().save(saved)
    page = tmp_path / "report.html"
    done = CliRunner().invoke(app, ["debrief", str(saved), "--html", str(page)])
    assert done.exit_code == 0, done.output
    assert "Plotly.newPlot" in page.read_text()


def test_a_first_run_on_a_fresh_machine_shows_its_preparation(tmp_path: Path) -> None:
    """From an empty compiled-code cache, the CLI's first run compiles its engine in a preparer process and
    says how far it is on stderr (never a silent wait); the next run says nothing."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    command = [sys.executable, "-m", "oncallsim", "run", "free-play", "--minutes", "1", "--format", "jsonl"]
    first = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    assert "preparing the minute engine (compiled once on this machine): " in first.stderr
    assert "the minute engine is ready" in first.stderr and first.stdout.count("\n") == 1
    again = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    assert "preparing" not in again.stderr and again.stdout == first.stdout


def test_a_surge_the_request_engine_cannot_simulate_is_refused_with_the_largest_it_can() -> None:
    """The request engine draws every arrival: a surge of ×9,999 asked one minute for ~700 million (a MemoryError,
    or the OOM killer taking a room's worker). Its peak traffic, base × (1 + daily amplitude) × surge (here
    1,000 × 1.25 = 1,250 req/s before the surge, worked by hand), is held to 100,000 req/s: a surge up to ×80,
    refused past it, whether the surge is injected into a running run or in the scenario it starts from."""
    from oncallsim.model.request.engine import MAX_PEAK_REQUESTS_PER_S
    from oncallsim.scenarios import builtin_scenarios
    from oncallsim.scenarios.registry import scenario_from_dict

    assert MAX_PEAK_REQUESTS_PER_S == 100_000
    fixed = {"low": 5, "high": 5}
    surge = {"kind": "surge", "onset_between": ["08:05", "08:05"], "rise_min": fixed, "decay_min": fixed}
    sim = Simulation("free-play", seed=1, minutes=30, engine="request")
    assert sim.params.base_requests_per_s == 1000 and sim.params.diurnal_amplitude == 0.25
    with pytest.raises(InvalidInput) as refused:
        sim.inject({**surge, "peak": {"low": 81, "high": 81}})  # 1,250 × 81 = 101,250 req/s
    assert refused.value.field == "peak" and refused.value.kind == "surge_peak"
    assert str(refused.value) == (
        "peak: a surge of ×81 takes the traffic to about 101,250 req/s; the request engine simulates every request "
        "and takes at most 100,000 req/s: here a peak of at most ×80 (the minute engine takes any)"
    )
    assert sim.plan.surge is None and len(sim.scenario.events) == 0  # nothing changed
    sim.inject({**surge, "peak": {"low": 80, "high": 80}})  # 100,000 req/s: taken
    assert sim.plan.surge is not None and sim.plan.surge.peak == 80
    minute = Simulation("free-play", seed=1, minutes=30)  # the minute engine: formulas, any surge
    minute.inject({**surge, "peak": {"low": 9999, "high": 9999}})
    data = builtin_scenarios()["free-play"].model_dump(mode="json")
    data["events"] = [{**surge, "peak": {"low": 200, "high": 200}}]
    with pytest.raises(InvalidInput, match="at most ×80"):
        Simulation(scenario_from_dict(data, "scenario"), seed=1, engine="request")

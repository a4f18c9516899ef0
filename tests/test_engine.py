"""The engine seam and the compiled minute: engines by name, run files that name theirs, and the compiled
code equal, bit for bit, to the same code interpreted by CPython (numba's own switch, NUMBA_DISABLE_JIT)."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys

import pytest

from oncallsim import InvalidInput, RunFile, Simulation
from oncallsim.model.engine import ENGINES, get_engine

_PLAY = """
import pickle, sys, warnings
warnings.simplefilter("ignore")
from oncallsim import Simulation
engine, minutes, overrides = sys.argv[1], int(sys.argv[2]), {"base_requests_per_s": float(sys.argv[3])}
sim = Simulation("bad-deploy", seed=3, minutes=minutes, engine=engine, overrides=overrides)
for m in range(minutes):
    todo = {20: [("floor", 14), ("warmup", None)], 31: [("rollback", None)], 40: [("autoscaler", False)],
            50: [("floor", 9), ("ttl_s", 300.0)], 60: [("autoscaler", True), ("shed_share", 0.5)]}.get(m, [])
    sim.step(todo)
sys.stdout.buffer.write(pickle.dumps([tuple(map(str, r)) for r in sim.timeline]))
"""


def _play(disable_jit: bool, engine: str, minutes: int, rate: float) -> list[tuple[str, ...]]:
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1" if disable_jit else "0"}
    args = [sys.executable, "-c", _PLAY, engine, str(minutes), str(rate)]
    out = subprocess.run(args, env=env, capture_output=True, check=True, timeout=300)
    return pickle.loads(out.stdout)  # type: ignore[no-any-return]


# The request engine interpreted is slow (~10 µs a request): a light traffic over the playbook's minutes.
@pytest.mark.parametrize(("engine", "minutes", "rate"), [("minute", 90, 1000.0), ("request", 62, 30.0)])
def test_compiled_minute_equals_the_interpreted_code_bit_for_bit(engine: str, minutes: int, rate: float) -> None:
    interpreted = _play(True, engine, minutes, rate)
    compiled = _play(False, engine, minutes, rate)
    assert len(compiled) == minutes
    assert interpreted == compiled  # repr of every float: the same bits


def test_engines_by_name_and_a_clear_error_for_others() -> None:
    assert Simulation("free-play", minutes=5).engine.name == "minute"
    assert set(ENGINES) >= {"minute"} and get_engine("minute").vectorized
    with pytest.raises(InvalidInput) as err:
        Simulation("free-play", engine="quantum")
    assert err.value.field == "engine" and "minute" in str(err.value)


def test_run_files_name_their_engine_and_old_files_mean_the_minute_model() -> None:
    sim = Simulation("cache-flush", seed=2)
    sim.run(until=30)
    data = json.loads(sim.run_file().model_dump_json())
    assert data["engine"] == "minute"
    del data["engine"]  # a file written before engines had names
    again = Simulation.replay(RunFile.parse(json.dumps(data)))
    assert again.timeline == sim.timeline and again.engine.name == "minute"
    data["engine"] = "quantum"
    with pytest.raises(InvalidInput):
        Simulation.replay(RunFile.parse(json.dumps(data)))


def test_compiled_code_is_cached_per_version_of_the_compiled_code() -> None:
    """numba would reuse a function's machine code after a change in another module it calls: every compiled
    function of the package is cached in the folder of one digest of the compiled code (compiled_cache.py,
    whose own tests show what the digest ignores), stamped with that digest."""
    from pathlib import Path

    from oncallsim.compiled_cache import cache_folder, code_digest
    from oncallsim.model.request.physics import request_minute
    from oncallsim.model.stages import minute

    for dispatcher in (minute, request_minute):
        locator = dispatcher._cache._cache_path  # numba's cache of this function
        assert Path(locator).parent == cache_folder() and cache_folder().name == code_digest()
        assert dispatcher._cache._impl.locator.get_source_stamp() == code_digest()
    assert cache_folder().is_dir()

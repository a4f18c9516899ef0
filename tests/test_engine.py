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
    from oncallsim.model.request.physics import request_minute_part
    from oncallsim.model.stages import minute

    for dispatcher in (minute, request_minute_part):
        locator = dispatcher._cache._cache_path  # numba's cache of this function
        assert Path(locator).parent == cache_folder() and cache_folder().name == code_digest()
        assert dispatcher._cache._impl.locator.get_source_stamp() == code_digest()
    assert cache_folder().is_dir()


def test_a_step_refuses_a_call_from_python_and_its_twin_answers() -> None:
    """A step has no machine code of its own (jit.LINK_ONLY): Python gets a clear error, not a null pointer."""
    from oncallsim.model.fleet import booting_count
    from oncallsim.model.kernel import from_python

    with pytest.raises(TypeError, match=r"booting_count is a step.*kernel\.from_python"):
        booting_count([0, 0])
    import numpy as np

    assert from_python(booting_count)(np.array([2, 0, 1], dtype=np.int64)) == 3


def test_positions_are_constants_that_mean_the_same_in_compiled_code() -> None:
    import numba
    import numpy as np

    from oncallsim.model.fields import EXT, REC, ST
    from oncallsim.model.kernel import P

    @numba.njit
    def read(rec: np.ndarray, st: np.ndarray, ext: np.ndarray, p: np.ndarray) -> tuple[float, float, float, float]:
        return rec[REC.error_rate], st[ST.ttl_s], ext[EXT.wasted_work_s], p[P.timeout_s]

    arrays = [np.arange(len(index), dtype=np.float64) * 10.0 for index in (REC, ST, EXT, P)]
    assert read(*arrays) == (10.0 * REC.error_rate, 10.0 * ST.ttl_s, 10.0 * EXT.wasted_work_s, 10.0 * P.timeout_s)


def test_every_piece_of_the_world_is_held_by_reference() -> None:
    """Each piece (and the world) passes between compiled functions as one pointer (jit.by_reference): a piece
    left out would still run, passed as all its arrays' scalars, and cost its share of the compile time again."""
    from numba import typeof

    from oncallsim.model.jit import PieceType
    from oncallsim.model.params import Params
    from oncallsim.model.request.world import new_world

    world = new_world(Params(), 1)
    assert isinstance(typeof(world), PieceType)
    for name, piece in world._asdict().items():
        if name != "gen":
            assert isinstance(typeof(piece), PieceType), name

"""Runs as data frames (oncallsim/frames.py): the same numbers as the records, the request engine's extras as
columns, a sweep's rows with its configuration, and a clear line when pandas is not installed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from oncallsim import InvalidInput, Simulation
from oncallsim.batch.sweep import sweep_frame
from oncallsim.frames import SCALAR_EXTRAS
from oncallsim.model import CSV_FIELDS

ROOT = Path(__file__).resolve().parent.parent


def test_a_run_is_a_frame_of_its_records() -> None:
    sim = Simulation("cache-flush", seed=4, minutes=40)
    sim.run([])
    frame = sim.to_pandas()
    assert list(frame.columns) == list(CSV_FIELDS[1:]) and frame.index.name == "minute"
    for r in sim.timeline[::7]:
        row = frame.loc[r.minute]
        assert row["clock"] == r.clock and row["error_rate"] == r.error_rate and row["serving"] == r.serving
    assert frame.attrs == {"scenario": "cache-flush", "seed": 4, "engine": "minute"}


def test_a_request_engine_run_adds_its_extras() -> None:
    sim = Simulation("slow-instance", seed=2, minutes=3)
    sim.run()
    frame = sim.to_pandas()
    assert set(SCALAR_EXTRAS) <= set(frame.columns)
    assert frame.loc[2, "p50_ms"] == sim.timeline[2].extra("p50_ms")


def test_a_sweep_frame_refuses_a_place_without_a_sweep(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="no sweep here"):
        sweep_frame(tmp_path / "nothing.parquet")


def test_without_pandas_a_frame_is_refused_in_one_line() -> None:
    code = (
        "import sys\n"
        "class Blocked:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'pandas':\n"
        "            raise ImportError(name)\n"
        "sys.meta_path.insert(0, Blocked())\n"
        "from oncallsim import Simulation, InvalidInput\n"
        "sim = Simulation('free-play', seed=1, minutes=2)\n"
        "sim.run()\n"
        "try:\n"
        "    sim.to_pandas()\n"
        "except InvalidInput as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == (
        "pandas: not installed (for runs and sweeps as data frames): pip install 'oncallsim[notebook]'"
    )

"""The server's garbage collector (web/limits.py ``tune_collector``): ``oncallsim serve`` freezes the objects of
its start-up and raises the thresholds, and a run leaving memory is still collected at once (``give_back``).
Checked in a process of its own (the settings are the process's)."""

from __future__ import annotations

import subprocess
import sys

from oncallsim.web.limits import COLLECTOR_THRESHOLDS

PROGRAM = """
import gc, weakref
from oncallsim.web.limits import give_back, tune_collector
before = gc.get_threshold()
tune_collector()
print(before != gc.get_threshold(), gc.get_threshold(), gc.get_freeze_count() > 0)

class Run:  # a live run is a reference cycle (its bound methods, its tasks)
    pass
run = Run()
run.me = run
alive = weakref.ref(run)
del run
give_back()
print(alive() is None)
"""


def test_the_collector_is_tuned_and_a_departed_run_still_collected() -> None:
    out = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == f"True {COLLECTOR_THRESHOLDS} True"
    assert out[1] == "True"


def test_serve_tunes_the_collector_before_it_serves() -> None:
    """The command's code calls it after the app is made and before uvicorn runs (read from the source: starting a
    server to ask its thresholds would need an endpoint that exists for nothing else)."""
    import inspect

    from oncallsim import cli

    source = inspect.getsource(cli.serve)
    assert source.index("create_app(") < source.index("tune_collector()") < source.index("uvicorn.run(")

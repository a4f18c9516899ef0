"""The compiled-code cache is keyed on what is compiled (``compiled_cache.py``): prose, comments, blank
lines and line numbers change nothing, code does; and a copy of the package with a help text, a docstring and
a label edited loads both engines from the cache without compiling anything."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from oncallsim.compiled_cache import _shape, cache_folder, code_digest

PACKAGE = Path(__file__).resolve().parent.parent / "oncallsim"

SOURCE = '''
"""A module."""
from x import step

RATE = 0.6  # per second
CHOICES = ("fifo", "codel")


@step
def f(w, i):
    """Adds one."""
    w.a[i] += 1.0
    return w.b[i]


SPEC = Spec("rate", "Rate", "How fast it goes.", unit="per s")
'''


def test_prose_and_layout_leave_the_key_alone_code_does_not() -> None:
    same = (
        SOURCE.replace('"""Adds one."""', '"""Adds one to the count, and says so."""')
        .replace("How fast it goes.", "How fast it goes, in requests a second.")
        .replace('"Rate"', '"Arrival rate"')
        .replace("# per second", "# per second, measured")
        .replace("@step\n", "\n\n@step\n")
    )
    assert _shape(same) == _shape(SOURCE)
    for changed in (
        SOURCE.replace("0.6", "0.61"),
        SOURCE.replace('"codel")', '"codel", "lifo")'),
        SOURCE.replace("+= 1.0", "+= 2.0"),
        SOURCE.replace("w.b[i]", "w.a[i]"),
        SOURCE.replace('"fifo", "codel"', '"codel", "fifo"'),
    ):
        assert _shape(changed) != _shape(SOURCE)


COUNT_COMPILES = """
from numba.core import event
compiled = []
class Count(event.Listener):
    def on_start(self, e): pass
    def on_end(self, e): compiled.append(e.data["dispatcher"].py_func.__qualname__)
event.register("numba:compile", Count())
from oncallsim.compiled_cache import code_digest
from oncallsim.model.engine import ENGINES, prepare
for name in ("minute", "request"):
    prepare(ENGINES[name])
print(code_digest(), len(compiled), sorted(set(compiled))[:10])
"""


def test_a_copy_with_its_prose_edited_compiles_nothing(tmp_path: Path) -> None:
    """The session's engines are compiled (conftest); a copy whose help text, label and docstrings differ, at
    another path and with every line moved, finds them in the cache."""
    copy = tmp_path / "oncallsim"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    controls = copy / "model" / "controls.py"
    text = controls.read_text("utf-8")
    assert '"Minimum instances. Raising it starts instances at once; "' in text
    controls.write_text(
        text.replace('"Minimum instances. Raising it starts instances at once; "', '"The fewest instances; "').replace(
            '"Fleet floor"', '"Fleet minimum"'
        ),
        "utf-8",
    )
    disciplines = copy / "model" / "request" / "disciplines.py"
    text = disciplines.read_text("utf-8")
    disciplines.write_text("# a comment and a blank line above everything\n\n" + text.replace('"""', '"""Edited. ', 1))
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", COUNT_COMPILES], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
    )
    digest, count, names = done.stdout.split(maxsplit=2)
    assert digest == code_digest()
    assert count == "0", f"recompiled: {names}"
    assert cache_folder().name == digest

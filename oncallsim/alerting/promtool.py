"""The real ``promtool`` (Debian's ``prometheus`` package): finding it, checking a rule file, running unit tests.

Nothing here evaluates PromQL or an alert's ``for:``: Prometheus' own rule manager does, inside ``promtool test
rules``. A missing promtool, a bad rule file and a failed run are each one line naming what went wrong.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from oncallsim.model import InvalidInput

__all__ = ["PROMTOOL_TIMEOUT_S", "UnitTestOutput", "check_rules", "find_promtool", "unit_test_rules"]

# A simulated day takes promtool a few seconds of CPU with the shipped rules (docs/alerts.md); this bounds a
# stuck one.
PROMTOOL_TIMEOUT_S = 600.0


def find_promtool() -> str:
    """``$ONCALLSIM_PROMTOOL``, else ``promtool`` on the PATH."""
    name = os.environ.get("ONCALLSIM_PROMTOOL", "promtool")
    found = shutil.which(name)
    if found is None:
        raise InvalidInput(
            "promtool",
            f"{name!r} not found: install Prometheus' tools (apt-get install prometheus) or set ONCALLSIM_PROMTOOL",
        )
    return found


def _run(args: list[str], timeout_s: float = PROMTOOL_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            [find_promtool(), *args],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "LC_ALL": "C"},
        )
    except subprocess.TimeoutExpired:
        raise InvalidInput("promtool", f"did not finish within {timeout_s:.0f} s") from None


def check_rules(path: Path) -> None:
    """``promtool check rules``: a file it refuses is refused here with promtool's own message, on one line."""
    if not path.is_file():
        raise InvalidInput(str(path), "no such rule file")
    done = _run(["check", "rules", str(path)], timeout_s=60.0)
    if done.returncode != 0:
        lines = [line.strip() for line in (done.stderr + "\n" + done.stdout).splitlines()]
        said = [line for line in lines if line and not line.startswith(("Checking ", "FAILED", "SUCCESS"))]
        message = "; ".join(said) or f"promtool check rules exited {done.returncode}"
        raise InvalidInput(str(path), message)


class UnitTestOutput:
    """What ``promtool test rules`` said: its exit code and its two streams."""

    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def unit_test_rules(test_file: Path) -> UnitTestOutput:
    """``promtool test rules FILE``: 0 when every expectation held, 1 when one failed (their diffs on stderr)."""
    done = _run(["test", "rules", str(test_file)])
    return UnitTestOutput(done.returncode, done.stdout, done.stderr)

"""Run files of older model versions replay bit for bit under this code (issue 23: "old run files replay bit for
bit"). Version 1's files and their records were made by the code of 4531ae7: request-engine runs that switch the
balancer to p2c, throttle, limit, drop by CoDel, eject, lose a zone. Version 2's by the code of ffedc0d: the flash
crowd with the BBR limiter, whose surge builds the queue version 2's limiter kept (version 3 times a request from its
worker's start). A replay follows its version's rules (``RunPlan.revision``); every value the old record held must be
the same, to the bit (a newer record may hold more: measures and settings added since)."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any

import pytest

from oncallsim import Simulation
from oncallsim.model.controls import RENAMED
from oncallsim.scenarios import builtin_scenarios
from oncallsim.scenarios.registry import superseded_scenario

DATA = Path(__file__).resolve().parent / "data"
RUNS = sorted(
    (version, p.name.removesuffix(".json"))
    for version in ("1", "2")
    for p in (DATA / f"version{version}").glob("*.json")
)


# The one figure an old file holds that its machine decided: the sum of the response times (extras.latency_sum_s)
# went through a float dot product (BLAS: its order of additions, and so the last bit, depends on the CPU) until
# it became an exact sum of whole half-bins; a file made before compares with it to 1e-12, every other value to the bit.
MACHINE_DEPENDENT = "latency_sum_s"


def _as_old(new: Any, old: Any) -> Any:
    """``new`` restricted to the keys ``old`` has, at every level (what the old record could say); a setting renamed
    since (``controls.RENAMED``) is read back under its old name."""
    if isinstance(old, dict) and isinstance(new, dict):
        new = dict(new)
        for name, (now, values) in RENAMED.items():
            if name in old and name not in new and now in new:
                new[name] = next(flag for flag, value in values.items() if value == new[now])
        if isinstance(new.get(MACHINE_DEPENDENT), float) and math.isclose(
            new[MACHINE_DEPENDENT], old.get(MACHINE_DEPENDENT, math.nan), rel_tol=1e-12
        ):
            new[MACHINE_DEPENDENT] = old[MACHINE_DEPENDENT]
        return {k: _as_old(new[k], v) if k in new else _MISSING for k, v in old.items()}
    if isinstance(new, list) and all(isinstance(e, str) for e in new):  # the minute's events, as texts
        return [_old_event(e) for e in new]
    return new


def _old_event(text: str) -> str:
    """An event about a renamed control, as the old control's (``set breaker = sre`` was ``set client_throttle =
    on``)."""
    for name, (now, values) in RENAMED.items():
        for flag, value in values.items():
            if text == f"set {now} = {value}":
                return f"set {name} = {'on' if flag else 'off'}"
    return text


_MISSING = object()  # a key the old record had and the new one lacks: never equal to anything


@pytest.mark.parametrize(("version", "name"), RUNS)
def test_an_old_run_file_replays_bit_for_bit(version: str, name: str) -> None:
    folder = DATA / f"version{version}"
    sim = Simulation.replay(folder / f"{name}.json")
    assert sim.model_version == version and sim.plan.revision == int(version)
    with gzip.open(folder / f"{name}.records.json.gz", "rt") as f:
        old = json.load(f)
    new = json.loads(json.dumps([r.to_dict() for r in sim.timeline], sort_keys=True, default=repr))
    assert len(new) == len(old)
    for minute, (n, o) in enumerate(zip(new, old, strict=True)):
        assert _as_old(n, o) == o, f"{name}, minute {minute}"
    assert sim.run_file().model_version == version  # saved again, it stays a run of its version


def test_a_built_in_scenario_changed_since_replays_its_old_runs_with_the_old_file() -> None:
    """The zone outage was redesigned for model version 2: a version-1 run file that names it gets the scenario of
    that time (data/superseded/), a new run the current one; only a built-in id and a plain version are looked up."""
    old = superseded_scenario("zone-outage", "1")
    assert old is not None and old.version == 1 and builtin_scenarios()["zone-outage"].version == 2
    assert old.controls != builtin_scenarios()["zone-outage"].controls
    assert superseded_scenario("zone-outage", "2") is None and superseded_scenario("slow-instance", "1") is None
    assert superseded_scenario("zone-outage", "../1") is None and superseded_scenario("../zone-outage", "1") is None

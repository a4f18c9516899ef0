"""Engines are compiled by a preparer process, never by the process that serves people (``readiness``): its
progress is readable from outside, it survives the process that started it, a kill mid-compile keeps what was
compiled, and a live run on an engine still being prepared waits and says how far it is."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from oncallsim import Simulation
from oncallsim.readiness import Readiness

ROOT = Path(__file__).resolve().parent.parent


def _in_cache(cache: Path, code: str) -> str:
    """Run ``code`` in a fresh interpreter whose compiled-code cache is the folder ``cache``."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _wait_for(condition, timeout_s: float = 600.0, what: str = "") -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_an_empty_cache_prepares_the_minute_engine_in_a_preparer(tmp_path: Path) -> None:
    """From an empty cache: missing, then prepared by a preparer process (with its marker and the CPU it took),
    then ready at once for the next process, which starts no preparer."""
    code = """
from oncallsim.readiness import ensure_ready, status, start_preparer
seen = []
ensure_ready(["minute"], lambda r: seen.append(r.state), poll_s=0.05)
print(seen[0], seen[-1], status("minute").state, start_preparer(["minute"]) is None)
"""
    first, last, now, none_started = _in_cache(tmp_path, code).split()
    assert first in ("missing", "preparing") and last == "ready" and now == "ready"
    assert none_started == "True"  # ready: no second preparer
    markers = list(tmp_path.glob("oncallsim/*/minute.ready"))
    assert len(markers) == 1
    assert json.loads(markers[0].read_text())["cpu_s"] > 0
    assert json.loads((tmp_path / "oncallsim" / "minute.expected").read_text())["cpu_s"] > 0
    again = _in_cache(tmp_path, "from oncallsim.readiness import status; print(status('minute').state)")
    assert again == "ready"


def test_a_preparer_killed_mid_compile_keeps_what_it_compiled(tmp_path: Path) -> None:
    """kill -9 of a preparer: its lock is released (the engine reads as missing again, so a surface starts
    another), and the functions it had finished are in the cache."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    preparer = subprocess.Popen(
        [sys.executable, "-m", "oncallsim.readiness", "request"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:

        def compiled_some() -> bool:
            for path in tmp_path.glob("oncallsim/*/request.progress"):
                try:
                    return json.loads(path.read_text()).get("compiled", 0) >= 3
                except ValueError:
                    return False
            return False

        _wait_for(compiled_some, what="the preparer to compile a few functions")
        status = _in_cache(tmp_path, "from oncallsim.readiness import status; print(status('request').state)")
        assert status == "preparing"
    finally:
        os.killpg(preparer.pid, signal.SIGKILL)
        preparer.wait()
    kept = list(tmp_path.glob("oncallsim/*/model.*/*.nbi"))
    assert kept, "nothing of what was compiled was kept"
    status = _in_cache(tmp_path, "from oncallsim.readiness import status; print(status('request').state)")
    assert status == "missing"
    assert not list(tmp_path.glob("oncallsim/*/request.ready"))


class Preparing:
    """What a server's engine watcher says of an engine a preparer is still compiling (its own process: the
    preparer itself is tested above), and then that it is ready."""

    def __init__(self) -> None:
        self.ready = False

    def __call__(self, name: str) -> Readiness:
        if self.ready or name == "minute":
            return Readiness(name, "ready", 1.0, 0.0)
        return Readiness(name, "preparing", 0.4, 30.0)


def test_a_live_run_waits_for_its_engine_and_says_how_far(tmp_path: Path) -> None:
    import asyncio

    from oncallsim.store import RunStore
    from oncallsim.web.live import RunManager

    async def play() -> None:
        store = RunStore(tmp_path / "runs.db")
        gate = Preparing()
        manager = RunManager(store, engine_state=gate)
        sim = Simulation("tutorial", seed=1, engine="request")
        live = await manager.create(sim, 16, paused=True)
        seen: list[dict[str, object]] = []
        queue = live.subscribe()
        live.advance()  # the minute waits for the engine
        assert live.sim.minute == 0
        while not queue.empty():
            message = queue.get_nowait()
            assert message is not None
            seen.append(json.loads(message))
        preparing = [m["preparing"] for m in seen if m.get("type") == "state"]
        assert preparing and preparing[-1] == {
            "name": "request", "state": "preparing", "ready": False, "share": 0.4, "seconds_left": 30, "message": ""
        }  # fmt: skip
        gate.ready = True
        live.advance()
        assert live.sim.minute == 1 and live.state()["preparing"] is None
        await manager.shutdown()
        store.close()

    asyncio.run(play())


def test_a_failed_preparation_is_tried_again_by_oncallsim_prepare(tmp_path: Path) -> None:
    """A failed preparation stays failed for surfaces (their pages say so) until `oncallsim prepare` tries again."""
    code = """
from oncallsim.readiness import _files, ensure_ready, status
_files("minute")[0].write_text('{"failed": "MemoryError: out of memory"}')
print(status("minute").state)
print(ensure_ready(["minute"], retry_failed=True, poll_s=0.05)[0].state)
"""
    assert _in_cache(tmp_path, code).split() == ["failed", "ready"]


def test_a_graph_run_waits_for_the_chain_and_a_one_service_run_does_not(tmp_path: Path) -> None:
    """The chain of services is prepared on its own, after both engines: a one-service request-engine run goes
    on while it compiles, a graph's run waits for it and says so."""
    import asyncio

    from oncallsim.model.engine import parts_for
    from oncallsim.scenarios import load_scenario
    from oncallsim.store import RunStore
    from oncallsim.web.live import RunManager

    assert parts_for("request") == ("request",) and parts_for("request", graph=True) == ("request", "chain")

    def chain_preparing(name: str) -> Readiness:
        if name == "chain":
            return Readiness(name, "preparing", 0.5, 3.0)
        return Readiness(name, "ready", 1.0, 0.0)

    async def play() -> None:
        store = RunStore(tmp_path / "runs.db")
        manager = RunManager(store, engine_state=chain_preparing)
        one = await manager.create(Simulation("tutorial", seed=1, engine="request"), 16, paused=True)
        one.advance()
        assert one.sim.minute == 1 and one.state()["preparing"] is None
        graph = load_scenario("cascade")
        chained = await manager.create(Simulation(graph, seed=1), 16, paused=True)
        chained.advance()
        assert chained.sim.minute == 0 and chained.state()["preparing"]["name"] == "chain"
        await manager.shutdown()
        store.close()

    asyncio.run(play())

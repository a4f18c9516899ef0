"""Whether each engine's compiled code is ready, and preparing it in a process of its own.

An engine's first use on a machine compiles it (numba, cached on disk: ``compiled_cache.py``). Compiling
in the process that serves people would hold numba's compiler lock for as long as it takes, and every live
run, page or debrief that touches compiled code would wait behind it. So a surface never compiles: it starts
a *preparer* — ``python -m oncallsim.readiness minute request chain``, a separate process — that fills the cache,
and reads how far it is from small files beside the cache; once an engine is ready the surface loads it from
the cache in well under a second.

The preparer runs detached from the process that started it: a server killed mid-compile leaves it to finish,
and the next start finds the engine ready (numba also keeps each function as soon as it is compiled). One
preparer per engine and version at a time (a lock file); a second one waits for the first and finds the
engine ready. Progress is the preparer's CPU time against what the last preparation on this machine took (or
a figure measured here, for the first), so a surface can say "43 %, about 20 s left" — an honest estimate,
never past 99 % until the marker says ready.

Files, in the version's cache folder: ``<engine>.ready`` (JSON: the CPU seconds it took), ``<engine>.progress``
(JSON: CPU seconds so far, functions compiled), ``<engine>.lock``; in the cache's base folder
``<engine>.expected`` (the CPU seconds the last preparation took, whatever the version).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TextIO

from oncallsim.compiled_cache import cache_folder
from oncallsim.model.engine import PREPARED_PARTS, check_part, prepare_part

__all__ = ["Readiness", "ensure_ready", "main", "start_preparer", "status"]

# CPU seconds a preparation from an empty cache took on the reference machine (2026-12-02, 2 cores, as the preparer
# measured it: minute 5.8–7.1 s, request 15–19 s; the chain of services ~6 s then, 10–12 s on 2026-12-03 with its
# per-service mechanisms and balancers): the estimate until this machine has measured its own
FIRST_ESTIMATE_CPU_S = {"minute": 7.0, "request": 18.0, "chain": 11.0}
PROGRESS_EVERY_S = 0.5
RESPAWN_AFTER_S = 15.0  # a preparer takes its lock within a second or two of starting


@dataclass(frozen=True)
class Readiness:
    """One engine's state: ``ready``; ``preparing`` (a preparer is at work: ``share`` done, ``seconds_left`` an
    estimate of CPU seconds); ``missing`` (nothing compiled, no preparer); ``failed`` (``message`` says why)."""

    engine: str
    state: str
    share: float = 0.0
    seconds_left: float | None = None
    message: str = ""

    @property
    def ready(self) -> bool:
        return self.state == "ready"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.engine,
            "state": self.state,
            "ready": self.ready,
            "share": round(self.share, 3),
            "seconds_left": None if self.seconds_left is None else round(self.seconds_left),
            "message": self.message,
        }

    def line(self) -> str:
        """One line for a person: what is happening and how far it is."""
        if self.state == "ready":
            return f"the {self.engine} engine is ready"
        if self.state == "failed":
            return f"preparing the {self.engine} engine failed: {self.message} (oncallsim prepare tries again)"
        if self.state == "missing":
            return f"the {self.engine} engine is not prepared yet"
        left = "" if self.seconds_left is None else f", about {max(1, round(self.seconds_left))} s of CPU left"
        return f"preparing the {self.engine} engine (compiled once on this machine): {self.share:.0%}{left}"


def _files(engine: str) -> tuple[Path, Path, Path, Path]:
    folder = cache_folder()
    return (
        folder / f"{engine}.ready",
        folder / f"{engine}.progress",
        folder / f"{engine}.lock",
        folder.parent / f"{engine}.expected",
    )


def _read(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _expected_cpu(engine: str) -> float:
    expected = _read(_files(engine)[3])
    if expected and isinstance(expected.get("cpu_s"), (int, float)) and expected["cpu_s"] > 0:
        return float(expected["cpu_s"])
    return FIRST_ESTIMATE_CPU_S.get(engine, 60.0)


def _jit_off() -> bool:
    from oncallsim.model.kernel import JIT

    return not JIT


def _locked(lock: Path) -> bool:
    """Whether a preparer holds the lock (it is released when that process ends, however it ends)."""
    import fcntl

    try:
        with lock.open("a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(handle, fcntl.LOCK_UN)
            return False
    except OSError:
        return False


def status(engine: str) -> Readiness:
    """How far ``engine``'s preparation is (an engine, or another of ``PREPARED_PARTS``), from the files alone (no
    compiling, no numba lock)."""
    check_part(engine)
    if _jit_off():
        return Readiness(engine, "ready")
    ready, progress, lock, _ = _files(engine)
    marker = _read(ready)
    if marker is not None:
        if marker.get("failed"):
            return Readiness(engine, "failed", message=str(marker["failed"]))
        return Readiness(engine, "ready", 1.0, 0.0)
    if not _locked(lock):
        return Readiness(engine, "missing")
    done = _read(progress) or {}
    cpu = float(done.get("cpu_s", 0.0))
    expected = _expected_cpu(engine)
    share = min(0.99, cpu / expected) if expected > 0 else 0.0
    return Readiness(engine, "preparing", share, max(0.0, expected - cpu))


def start_preparer(
    engines: Iterable[str] = PREPARED_PARTS, retry_failed: bool = False
) -> subprocess.Popen[bytes] | None:
    """Start one detached preparer for the engines that are not ready and that no preparer is working on
    (minute first: it is quick and most runs need it). Returns the process, or None when none was needed.
    ``retry_failed``: an engine whose last preparation failed (its marker says why) is tried again."""
    names = list(engines)
    if retry_failed:
        for name in names:
            if status(name).state == "failed":
                _files(name)[0].unlink(missing_ok=True)
    todo = [name for name in names if status(name).state == "missing"]
    if not todo:
        return None
    todo.sort(key=PREPARED_PARTS.index)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, (str(Path(__file__).resolve().parent.parent), env.get("PYTHONPATH")))
    )
    return subprocess.Popen(
        [sys.executable, "-m", "oncallsim.readiness", *todo],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # not ended with the server: a kill -9 mid-compile loses nothing
        env=env,
    )


def ensure_ready(
    engines: Iterable[str],
    report: Callable[[Readiness], None] | None = None,
    poll_s: float = 0.5,
    retry_failed: bool = False,
) -> list[Readiness]:
    """Prepare ``engines`` (in a preparer process) and wait until each is ready or failed, calling ``report``
    with each change of state or every ``poll_s`` while one prepares; then load them here from the cache.
    ``retry_failed``: a preparation that failed before is tried again (``oncallsim prepare`` does)."""
    names = list(engines)
    start_preparer(names, retry_failed)
    spawned = time.monotonic()
    final: dict[str, Readiness] = {}
    for name in names:
        while True:
            now = status(name)
            if now.state == "missing" and time.monotonic() - spawned <= RESPAWN_AFTER_S:
                now = Readiness(name, "preparing", 0.0, _expected_cpu(name))  # the preparer is starting
            if report is not None:
                report(now)
            if now.state in ("ready", "failed"):
                break
            if now.state == "missing" and time.monotonic() - spawned > RESPAWN_AFTER_S:
                start_preparer([name])  # the preparer ended without a marker (killed): another one
                spawned = time.monotonic()
            time.sleep(poll_s)  # a person watching a progress line, not a test
        final[name] = now
        if now.ready:
            prepare_part(name)  # loads from the cache: well under a second
    return [final[name] for name in names]


class _Progress:
    """The preparer's progress on one engine, rewritten every ``PROGRESS_EVERY_S`` from a thread: CPU seconds
    since this engine's turn began (0 while it is queued behind another), functions compiled."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.compiled = 0
        self.started: float | None = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.wait(PROGRESS_EVERY_S):
            self.write()

    def write(self) -> None:
        cpu = 0.0 if self.started is None else time.process_time() - self.started
        data = {"cpu_s": cpu, "compiled": self.compiled, "queued": self.started is None, "pid": os.getpid()}
        tmp = self.path.with_suffix(".tmp")
        try:
            tmp.write_text(json.dumps(data), "utf-8")
            tmp.replace(self.path)
        except OSError:
            pass


def _prepare_here(engine: str, handle: IO[str]) -> None:
    """Compile ``engine`` in this process, its lock held (``handle``), and write its marker."""
    import fcntl

    from numba.core import event as numba_event

    ready, progress_path, _, expected = _files(engine)
    fcntl.flock(handle, fcntl.LOCK_EX)  # held already, or another preparer's: wait for it, then find it ready
    if _read(ready) is not None:
        return
    progress = _Progress(progress_path)

    class Count(numba_event.Listener):  # type: ignore[misc]
        def on_start(self, event: Any) -> None:
            pass

        def on_end(self, event: Any) -> None:
            progress.compiled += 1

    listener = Count()
    numba_event.register("numba:compile", listener)  # type: ignore[no-untyped-call]
    progress.started = time.process_time()
    progress.write()
    progress.thread.start()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            prepare_part(engine)
        uncached = [str(w.message) for w in caught if "Cannot cache" in str(w.message)]
        cpu = time.process_time() - progress.started
        marker: dict[str, Any] = {"cpu_s": cpu, "compiled": progress.compiled}
        if uncached:
            marker["uncached"] = uncached[:5]
        ready.write_text(json.dumps(marker), "utf-8")
        expected.write_text(json.dumps({"cpu_s": cpu}), "utf-8")
    except Exception as exc:  # the marker says it failed; a surface shows it
        ready.write_text(json.dumps({"failed": f"{type(exc).__name__}: {exc}"}), "utf-8")
        raise
    finally:
        progress.stop.set()
        numba_event.unregister("numba:compile", listener)  # type: ignore[no-untyped-call]
        progress_path.unlink(missing_ok=True)


def print_progress(stream: TextIO) -> Callable[[Readiness], None]:
    """A ``report`` for ``ensure_ready`` that keeps one line up to date on a terminal (a line every 10 s
    when the stream is not one), and says nothing for an engine that was ready at once."""
    tty = stream.isatty() if hasattr(stream, "isatty") else False
    last: dict[str, float] = {}

    def report(now: Readiness) -> None:
        seen = last.get(now.engine)
        if now.ready and seen is None:
            return
        clock = time.monotonic()
        if tty:
            end = "\n" if now.state in ("ready", "failed") else ""
            stream.write("\r\x1b[K" + now.line() + end)
            stream.flush()
        elif now.state in ("ready", "failed") or seen is None or clock - seen >= 10.0:
            stream.write(now.line() + "\n")
            stream.flush()
        else:
            return
        last[now.engine] = clock

    return report


def main(argv: list[str] | None = None) -> int:
    """The preparer: compile the engines named (default all) one after the other."""
    import fcntl

    names = list(argv if argv is not None else sys.argv[1:]) or list(PREPARED_PARTS)
    for name in names:
        check_part(name)
    with contextlib.ExitStack() as held:
        handles = {}
        for name in names:  # every engine's lock at once, so one waiting its turn reads as being prepared
            ready, progress, lock, _ = _files(name)
            handles[name] = held.enter_context(lock.open("a"))
            try:
                fcntl.flock(handles[name], fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # another preparer is at it: this one waits for it when its turn comes
            if _read(ready) is None:
                _Progress(progress).write()  # queued
        for name in names:
            _prepare_here(name, handles[name])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

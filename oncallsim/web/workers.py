"""Heavy work in worker processes, never on the server's event loop (issues 29 and 30).

Two pools of processes, each started on first use (a server that plays only minute-engine runs starts none):

- ``live``: request-engine live runs and game-day rooms (``LiveRun.hold``). Each run's simulation (its world:
  queues, workers, the cache) is held by one worker process; the clock asks it for a minute and gets the record
  back with a small view of the state (``Stepped``), which the server's copy of the run (its *mirror*: the same
  ``Simulation`` without the world, a ``WorldView`` in its place) takes on, so pages, actions' checks and the
  debrief read it as before; a game day's fault goes to both (``Held.inject``). A
  worker computes one minute at a time and picks, among the runs waiting, the one that used the least of the
  worker's time lately (a fair share): a run whose minutes cost more than its speed allows falls behind alone
  and its page says so (``Pacer``), the others keep their speed.
- ``heavy``: debriefs, imports, replays (a run rebuilt from its log), what-ifs, the cliff gauge's pilot run.
  Jobs in order of arrival, at most ``HEAVY_QUEUE`` waiting for what a client asks (``Busy`` past it: the web
  answers 429 with one line); what the server owes (the debrief of a run that just ended) always waits its turn.

The workers are niced: the server process — its event loop, the minute-engine runs, the pages, the store's
threads — always gets the CPU first, and what the machine cannot do in time slows the request-engine runs that
cost the most, never everyone. The same code computes a minute in a worker and in the server, on the same
state: a run computed there equals the run computed here, bit for bit (tests/test_workers.py).

First use: a worker is a fresh ``python`` that imports the engines and loads them from numba's cache, which the
server's preparer fills (web/engines.py); a run waits for its engine to be ready as before (its state says how
far the preparation is), and a compile in a worker holds no lock of the server (it is another process).

Wire: length-prefixed pickles over the child's stdin and stdout, between this server and the children it
started (nothing else writes them). The child's own prints go to its stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import itertools
import logging
import math
import os
import pickle
import struct
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, NamedTuple

from oncallsim.model import InvalidInput

if TYPE_CHECKING:
    from oncallsim.model import MinuteRecord
    from oncallsim.simulation import Action, Simulation

__all__ = ["Busy", "Held", "Pacer", "Stepped", "WorkerLost", "Workers", "mirror_of", "serve"]

log = logging.getLogger("oncallsim.web")

# Niceness of the workers: the server's loop first. Live minutes above heavy jobs (a debrief may wait a while).
LIVE_NICE = 5
HEAVY_NICE = 10
# Jobs a client may leave waiting in the heavy pool (imports, what-ifs) before the next is refused (429).
HEAVY_QUEUE = 8
# How long a run's use of a worker counts for the fair share (seconds, exponential decay).
SHARE_TAU_S = 10.0
# A worker with nothing to do and no run held ends after this long (its ~200 MB back); the next job starts another.
IDLE_EXIT_S = 120.0
_HEADER = struct.Struct("!Q")
_CHILD = "from oncallsim.web.workers import serve; serve()"


class Busy(Exception):
    """The heavy pool's queue is full: the client is told to try again (HTTP 429), nothing was started."""

    def __init__(self, waiting: int) -> None:
        self.waiting = waiting
        # the same words as the pages' translated line (web/pages.py REFUSALS["busy"])
        super().__init__(f"server: busy ({waiting} imports and debriefs waiting for a worker); try again in a minute")


class WorkerLost(Exception):
    """The worker process holding a run or computing a job ended (killed, out of memory)."""


# --- the child --------------------------------------------------------------------------------------------------


def _read(stream: IO[bytes]) -> bytes | None:
    head = stream.read(_HEADER.size)
    if len(head) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(head)
    body = stream.read(size)
    return body if len(body) == size else None


def _write(stream: IO[bytes], message: Any) -> None:
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(body)) + body)
    stream.flush()


def serve() -> None:
    """A worker process's main: jobs from stdin, one at a time; progress and results to its stdout. Ends when
    the server closes its stdin (or dies)."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # a job's own prints go to stderr, never into the replies
    nice = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    if nice:
        os.nice(nice)
    inp = sys.stdin.buffer
    while True:
        frame = _read(inp)
        if frame is None:
            return
        job_id, fn, args = pickle.loads(frame)

        def progress(done: int, total: int, job_id: int = job_id) -> None:
            _write(out, ("progress", job_id, done, total))

        start = time.process_time()
        try:
            result = fn(progress, *args)
            reply: tuple[Any, ...] = ("done", job_id, result, time.process_time() - start)
        except InvalidInput as exc:
            reply = ("invalid", job_id, exc.field, exc.reason)
        except Exception as exc:
            log.exception("worker job %s failed", getattr(fn, "__name__", fn))
            reply = ("error", job_id, f"{type(exc).__name__}: {exc}")
        _write(out, reply)


# What the children hold: request-engine runs by key (the run's id).
_HELD: dict[str, Simulation] = {}


class Stepped(NamedTuple):
    """One minute computed in a worker, as the server's mirror takes it on."""

    record: MinuteRecord
    actions: list[Action]  # as the worker stamped them
    minute: int
    vec: Any
    boot: Any
    window: Any
    view: Any  # model.request.view.WorldView
    rng_state: int


def _view(sim: Simulation) -> Any:
    """What the server shows of the world: the one service's instances and settings; a chain of services has
    neither (its services' settings are read from the log, ``chain.controls.service_settings``): None."""
    from oncallsim.model.fields import ST
    from oncallsim.model.request.fleet_ops import view_of

    if sim.plan.graph is not None:
        return None
    return view_of(sim.state.world, int(sim.state.vec[ST.serving]))


def mirror_of(sim: Simulation) -> Simulation:
    """The run without its world (a ``WorldView`` in its place): what the server keeps of a run a worker holds.
    Its records, actions, plan and parameters are the run's; ``step`` is the worker's."""
    mirror = copy.copy(sim)
    mirror.state = sim.state._replace(world=_view(sim)) if sim.state.world is not None else sim.state
    mirror.rng = copy.copy(sim.rng)
    mirror.timeline = list(sim.timeline)
    mirror.actions = list(sim.actions)
    return mirror


def job_hold(progress: Callable[[int, int], None], key: str, sim: Simulation) -> None:
    _HELD[key] = sim


def job_step(progress: Callable[[int, int], None], key: str, actions: list[Action]) -> Stepped:
    sim = _HELD[key]
    before = len(sim.actions)
    record = sim.step(actions)
    s = sim.state
    return Stepped(record, sim.actions[before:], s.minute, s.vec, s.boot, s.window, _view(sim), sim.rng.state)


def job_inject(progress: Callable[[int, int], None], key: str, event: dict[str, Any]) -> None:
    """A game day's fault added to the run held here (``Simulation.inject``), as the server's mirror added it:
    the plan both step by stays one plan."""
    _HELD[key].inject(event)


def job_release(progress: Callable[[int, int], None], key: str) -> None:
    _HELD.pop(key, None)


def job_rebuild(
    progress: Callable[[int, int], None], run: Any, over: bool = False
) -> tuple[Simulation, list[Action], list[str]]:
    """A live run rebuilt from its stored file (``Simulation.replay_log``): the simulation (without its world
    when the run is ``over``: nothing steps it again), the actions logged for the minute it stops at, what was
    skipped."""
    from oncallsim.simulation import Simulation

    sim = Simulation.from_run_file(run)
    pending, skipped = sim.replay_log(run.actions, run.played or 0)
    return (mirror_of(sim) if over or sim.done else sim), pending, skipped


def job_debrief(progress: Callable[[int, int], None], sim: Simulation) -> tuple[Any, str]:
    from oncallsim.web.live import debrief_with_figure

    return debrief_with_figure(sim, progress)


def job_import(progress: Callable[[int, int], None], run: Any, name: str) -> tuple[Any, int, Any, str]:
    """A run file vetted and replayed, then debriefed: (its run file as replayed, minutes, report, figure)."""
    from oncallsim.store.runfiles import vet_run_file
    from oncallsim.web.live import debrief_with_figure

    sim = vet_run_file(run, name)
    report, figure = debrief_with_figure(sim, progress)
    return sim.run_file(), sim.minute, report, figure


def job_call(progress: Callable[[int, int], None], fn: Callable[..., Any], *args: Any) -> Any:
    """Any pure function of the core (a what-if, the cliff gauge's pilot run), by reference."""
    return fn(*args)


# --- the server's side ----------------------------------------------------------------------------------------


@dataclass(eq=False)
class _Job:
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    future: asyncio.Future[Any]
    progress: Callable[[int, int], None] | None
    key: str | None = None  # the live run it steps (the fair share's account)
    priority: int = 1  # 0 before 1: holding, releasing; then the minutes
    seq: int = 0
    generation: int | None = None  # the process it needs (one holding its run), if any
    done: int = 0  # its progress, as the worker last said it
    total: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": getattr(self.fn, "__name__", "job").removeprefix("job_"),
            "done": self.done,
            "total": self.total,
        }


class Worker:
    """One child process: jobs one at a time, from its waiting list, in the pool's order."""

    def __init__(self, pool: Pool, index: int) -> None:
        self.pool = pool
        self.name = f"{pool.name}-{index}"
        self.waiting: list[_Job] = []
        self.runs: set[str] = set()
        self.busy = False
        self.generation = 0  # a new process after one ended: the runs it held are gone
        self._proc: subprocess.Popen[bytes] | None = None
        self._current: _Job | None = None
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def submit(self, job: _Job) -> None:
        self.waiting.append(job)
        if self._task is None or self._task.done():
            self._loop = asyncio.get_running_loop()
            self._wake = asyncio.Event()
            self._task = self._loop.create_task(self._serve(), name=f"worker-{self.name}")
        assert self._wake is not None
        self._wake.set()

    def _alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _start(self) -> None:
        self.generation += 1
        self.runs.clear()
        self._proc = subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(self.pool.nice)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        threading.Thread(target=self._read, args=(self._proc,), name=f"read-{self.name}", daemon=True).start()
        log.info("worker %s started (pid %d)", self.name, self._proc.pid)

    def _pick(self) -> _Job:
        share = self.pool.share
        best = min(self.waiting, key=lambda j: (j.priority, share(j.key) if j.key else 0.0, j.seq))
        self.waiting.remove(best)
        return best

    async def _serve(self) -> None:
        assert self._wake is not None
        loop = asyncio.get_running_loop()
        while not self.pool.closed:
            if not self.waiting:
                self._wake.clear()
                try:
                    await asyncio.wait_for(self._wake.wait(), IDLE_EXIT_S)
                except TimeoutError:
                    if not self.runs and not self.waiting:
                        self._retire()
                continue
            job = self._pick()
            if job.future.done():
                continue
            if job.generation is not None and (job.generation != self.generation or not self._alive()):
                job.future.set_exception(WorkerLost(f"worker {self.name} ended; the runs it held are gone"))
                continue
            if not self._alive():
                self._start()
            proc = self._proc
            assert proc is not None and proc.stdin is not None
            self.busy, self._current = True, job
            try:
                frame = (id(job), job.fn, job.args)
                await loop.run_in_executor(self.pool.io, _write, proc.stdin, frame)
                await asyncio.wait([job.future])
            except (BrokenPipeError, OSError, pickle.PicklingError) as exc:
                if not job.future.done():
                    job.future.set_exception(WorkerLost(f"worker {self.name}: {exc}"))
            finally:
                self.busy, self._current = False, None

    def _read(self, proc: subprocess.Popen[bytes]) -> None:
        """The replies of one child process (a thread): progress, results; its end fails the job in hand."""
        assert proc.stdout is not None and self._loop is not None
        loop = self._loop
        while True:
            try:
                frame = _read(proc.stdout)
                message = pickle.loads(frame) if frame is not None else None
            except Exception:
                log.exception("worker %s: a reply could not be read", self.name)
                message = None
            if message is None:
                break
            loop.call_soon_threadsafe(self._reply, message)
        proc.wait()
        loop.call_soon_threadsafe(self._ended, proc)

    def _reply(self, message: tuple[Any, ...]) -> None:
        job = self._current
        if job is None or message[1] != id(job) or job.future.done():
            return
        kind = message[0]
        if kind == "progress":
            job.done, job.total = message[2], message[3]
            if job.progress is not None:
                job.progress(message[2], message[3])
        elif kind == "done":
            if job.key is not None:
                self.pool.spend(job.key, message[3])
            job.future.set_result(message[2])
        elif kind == "invalid":
            job.future.set_exception(InvalidInput(message[2], message[3]))
        else:
            job.future.set_exception(RuntimeError(f"worker {self.name}: {message[2]}"))

    def _ended(self, proc: subprocess.Popen[bytes]) -> None:
        if proc is not self._proc:
            return
        if not self.pool.closed:
            log.error("worker %s (pid %d) ended with code %s", self.name, proc.pid, proc.returncode)
        job = self._current
        if job is not None and not job.future.done():
            job.future.set_exception(WorkerLost(f"worker {self.name} ended (code {proc.returncode})"))

    def status(self) -> dict[str, Any]:
        """For ``/api/stats``: its runs, the job in hand (kind and progress) and how many wait."""
        job = self._current
        return {
            "worker": self.name,
            "alive": self._alive(),
            "runs": len(self.runs),
            "job": job.to_dict() if job is not None else None,
            "waiting": len(self.waiting),
        }

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
        self._stop_process()
        for job in self.waiting:
            if not job.future.done():
                job.future.cancel()
        self.waiting.clear()

    def _retire(self) -> None:
        """An idle worker holding no run ends (its stdin closed; the reader thread reaps it), quietly."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None and proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
            log.info("worker %s (pid %d) idle: ended", self.name, proc.pid)

    def _stop_process(self) -> None:
        """End the child: its stdin closed (it ends after the job in hand), killed after a second."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(OSError):
                assert proc.stdin is not None
                proc.stdin.close()
            try:
                proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


class Pool:
    """Worker processes of one kind, started on first use."""

    def __init__(self, name: str, size: int, nice: int, max_waiting: int | None = None) -> None:
        self.name = name
        self.nice = nice
        self.max_waiting = max_waiting
        self.workers = [Worker(self, i) for i in range(max(1, size))]
        self.io = ThreadPoolExecutor(max_workers=len(self.workers), thread_name_prefix=f"oncallsim-{name}-send")
        self.closed = False
        self._spent: dict[str, tuple[float, float]] = {}  # key → (seconds of worker time, decayed to when)
        self._seq = itertools.count()

    def share(self, key: str | None) -> float:
        """The worker seconds this run used lately (decayed with ``SHARE_TAU_S``)."""
        if key is None or key not in self._spent:
            return 0.0
        used, when = self._spent[key]
        return used * math.exp(-(time.monotonic() - when) / SHARE_TAU_S)

    def spend(self, key: str, seconds: float) -> None:
        self._spent[key] = (self.share(key) + seconds, time.monotonic())

    def waiting(self) -> int:
        return sum(len(w.waiting) for w in self.workers)

    def least_loaded(self) -> Worker:
        return min(self.workers, key=lambda w: (len(w.runs), len(w.waiting) + w.busy))

    def call(
        self,
        fn: Callable[..., Any],
        *args: Any,
        worker: Worker | None = None,
        progress: Callable[[int, int], None] | None = None,
        key: str | None = None,
        priority: int = 1,
        bounded: bool = False,
        generation: int | None = None,
    ) -> asyncio.Future[Any]:
        """``fn(progress, *args)`` in a worker (``worker``, or the least busy); ``bounded``: refused (``Busy``)
        when ``max_waiting`` jobs wait already; ``generation``: only in that process of ``worker`` (the one
        holding a run), else ``WorkerLost``."""
        if self.closed:
            raise WorkerLost(f"the {self.name} workers are closed")
        if bounded and self.max_waiting is not None and self.waiting() >= self.max_waiting:
            raise Busy(self.waiting())
        target = worker or min(self.workers, key=lambda w: len(w.waiting) + w.busy)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        target.submit(_Job(fn, args, future, progress, key, priority, next(self._seq), generation))
        return future

    def forget(self, key: str) -> None:
        self._spent.pop(key, None)

    def close(self) -> None:
        self.closed = True
        for w in self.workers:
            w.close()
        self.io.shutdown(wait=False, cancel_futures=True)


@dataclass(eq=False)
class Held:
    """A request-engine run held by a live worker: ``step`` computes its next minute there and the mirror (the
    server's ``Simulation`` of the run) takes it on."""

    pool: Pool
    worker: Worker
    generation: int
    key: str
    mirror: Simulation
    released: bool = False

    async def step(self, actions: list[Action]) -> MinuteRecord:
        if self.worker.generation != self.generation or self.released:
            raise WorkerLost(f"the worker holding run {self.key} ended; the run comes back from its log")
        s: Stepped = await self.pool.call(
            job_step, self.key, actions, worker=self.worker, key=self.key, generation=self.generation
        )
        sim = self.mirror
        sim.state = sim.state._replace(minute=s.minute, vec=s.vec, boot=s.boot, window=s.window, world=s.view)
        sim.rng.state = s.rng_state
        sim.timeline.append(s.record)
        sim.actions.extend(s.actions)
        return s.record

    async def inject(self, event: dict[str, Any]) -> None:
        """A scenario event (a game day's fault) added to the run the worker holds, before its next minute (the
        caller holds the run's ``_writing``, so no minute of the run is under way; ``priority`` 0 puts it before
        the minutes other runs wait for). The mirror takes it too (``LiveRun.inject``): without it here, the
        worker would step by the plan it was given and the fault would never happen."""
        if self.worker.generation != self.generation or self.released:
            raise WorkerLost(f"the worker holding run {self.key} ended; the run comes back from its log")
        await self.pool.call(job_inject, self.key, event, worker=self.worker, priority=0, generation=self.generation)

    def release(self) -> None:
        """The worker drops the run's world (the run is over, deleted, or leaves memory); the mirror stays."""
        if self.released:
            return
        self.released = True
        self.worker.runs.discard(self.key)
        self.pool.forget(self.key)
        if self.worker.generation == self.generation and not self.pool.closed:
            with contextlib.suppress(Exception):
                self.pool.call(job_release, self.key, worker=self.worker, priority=0, generation=self.generation)


class Workers:
    """The server's two pools (module docstring). ``cores``: the machine's, by default."""

    def __init__(self, cores: int | None = None) -> None:
        cores = cores or os.cpu_count() or 1
        self.live = Pool("live", cores, LIVE_NICE)
        self.heavy = Pool("heavy", max(1, cores - 1), HEAVY_NICE, max_waiting=HEAVY_QUEUE)

    async def hold(self, key: str, sim: Simulation) -> Held:
        """Give a request-engine run (built here, or rebuilt by ``rebuild``) to the least loaded live worker."""
        worker = self.live.least_loaded()
        mirror = mirror_of(sim)
        await self.live.call(job_hold, key, sim, worker=worker, priority=0)
        worker.runs.add(key)
        return Held(self.live, worker, worker.generation, key, mirror)

    def call(
        self,
        fn: Callable[..., Any],
        *args: Any,
        progress: Callable[[int, int], None] | None = None,
        bounded: bool = False,
    ) -> asyncio.Future[Any]:
        """A heavy job (``job_debrief``, ``job_import``, ``job_rebuild``, ``job_call``); a rebuild (someone waits
        for the run to come back) goes before the others."""
        priority = 0 if fn is job_rebuild else 1
        return self.heavy.call(fn, *args, progress=progress, bounded=bounded, priority=priority)

    def status(self) -> list[dict[str, Any]]:
        """Every worker: alive or not yet started, the runs it holds, its job in hand with its progress (a
        debrief's or an import's replays done of how many), how many jobs wait."""
        return [w.status() for pool in (self.live, self.heavy) for w in pool.workers]

    def close(self) -> None:
        self.live.close()
        self.heavy.close()


@dataclass
class Pacer:
    """Whether a run keeps its speed: of its clock's last ticks, how many started a minute (a run whose worker
    is still on its previous minute misses the tick). ``slowed``: the speed it actually plays at (minutes a
    second, one decimal) while it is under 80 % of its own, None again once it is back over 95 %."""

    ticks: deque[bool] = field(default_factory=lambda: deque(maxlen=32))
    slowed: float | None = None

    def tick(self, started: bool, speed: int) -> bool:
        """Note a tick; whether the run became slowed or kept its speed again (a state worth sending at once;
        the value itself rides on the minutes' states)."""
        if speed <= 0:  # real time: a minute a minute, nothing to keep up with
            return self.reset()
        window = max(8, min(32, 3 * speed))
        if self.ticks.maxlen != window:
            self.ticks = deque(self.ticks, maxlen=window)
        self.ticks.append(started)
        if len(self.ticks) < window:
            return False
        share = sum(self.ticks) / len(self.ticks)
        before = self.slowed
        if share < 0.8:
            self.slowed = round(speed * share, 1)
        elif share >= 0.95:
            self.slowed = None
        return (before is None) != (self.slowed is None)

    def reset(self) -> bool:
        self.ticks.clear()
        changed, self.slowed = self.slowed is not None, None
        return changed

"""Sweeps: every grid point × N seeds, in chunks, on local worker processes or a Dask cluster, into Parquet.

Durability. Each finished chunk becomes a closed Parquet file in ``OUT.parts/`` (written under a temporary name,
then renamed), so a kill — SIGKILL included — keeps every finished chunk. At the end, and also on Ctrl-C or
SIGTERM, the parts are merged into the single file ``OUT`` and the folder is removed. ``OUT`` records the
sweep's whole configuration in its metadata (as does ``OUT.parts/_sweep.json`` while the sweep runs);
``resume`` refuses a different configuration and runs only the seeds that have no row yet.

Memory stays flat in the seed count: chunks are generated lazily and only a few are in flight at a time.
Local workers start once per sweep — on Linux as forks of the sweep's process (nothing to import again), elsewhere
as fresh ``python`` processes that import once — take one chunk at a time over a pipe, send back only the summary
rows (as typed arrays) and die with their parent (``PR_SET_PDEATHSIG`` on Linux, a watch on the parent
elsewhere); no multiprocessing resource tracker is started.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from oncallsim.batch.policies import vectorized
from oncallsim.batch.runs import run_seeds
from oncallsim.model import MODEL_VERSION, InvalidInput, Params
from oncallsim.model.controls import coerce_control_value
from oncallsim.model.params import coerce_param
from oncallsim.policies import load_policy
from oncallsim.scenarios import Scenario, load_scenario
from oncallsim.simulation import MAX_SEED, Simulation, split_overrides

__all__ = [
    "DaskExecutor",
    "LocalExecutor",
    "SweepPlan",
    "SweepSpec",
    "Task",
    "check_output",
    "parse_grid",
    "plan_sweep",
    "run_task",
    "stop_on_signals",
    "sweep",
]

CONFIG_KEY = b"oncallsim.sweep"
CONFIG_FILE = "_sweep.json"
MAX_WORKERS = 256
# Runs per chunk: the batch engine's per-minute cost per run falls with the batch size (numpy's per-call
# overhead is shared), so chunks are as big as this allows while every worker still gets equal work.
MAX_CHUNK_VECTOR = 5000
MAX_CHUNK_SCALAR = 64
MAX_STEPS_PER_CHUNK = 10_000_000  # so that a chunk of a long scenario still finishes (and is kept) every few s

Columns = dict[str, npt.NDArray[Any]]


def rows_per_task() -> int | None:
    """Seeds per chunk when ONCALLSIM_ROWS_PER_TASK is set; otherwise None (sized from the sweep and workers)."""
    value = os.environ.get("ONCALLSIM_ROWS_PER_TASK")
    return int(value) if value else None


def parse_grid(items: Sequence[str]) -> dict[str, list[Any]]:
    """``NAME=v1,v2,…`` (repeatable) → {NAME: [v1, v2, …]}, each value checked and typed by the model."""
    grid: dict[str, list[Any]] = {}
    for item in items:
        name, sep, values = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise InvalidInput("--grid", f"expects NAME=v1,v2,…, got {item!r}")
        parts = [v.strip() for v in values.split(",")]
        if not values.strip() or any(not v for v in parts):
            raise InvalidInput(f"--grid {name}", f"has an empty value in {item!r}")
        split_overrides({name: parts[0]})  # unknown names are refused with the known ones listed
        if name in grid:
            raise InvalidInput("--grid", f"{name} is given twice")
        grid[name] = [_coerce(name, v) for v in parts]
    return grid


def _coerce(name: str, value: Any) -> Any:
    return coerce_param(name, value) if name in Params.__dataclass_fields__ else coerce_control_value(name, value)


@dataclass(frozen=True)
class Task:
    """One chunk: a grid point and a run of seeds. Plain data, so it travels to any worker."""

    index: int
    scenario: dict[str, Any]
    point: dict[str, Any]
    overrides: dict[str, Any]
    seeds: Sequence[int]  # a range when the seeds are consecutive (small to send)
    policy: str | None
    noise: bool
    minutes: int | None
    clock: str | None
    point_index: int = 0


def _int_outcomes() -> frozenset[str]:
    from oncallsim.debrief.summary import Outcome

    return frozenset(name for name, f in Outcome.model_fields.items() if f.annotation is int)


def run_task(task: Task) -> tuple[int, Columns]:
    """Runs on a worker: the rows of one chunk as typed columns (grid values first), nothing else."""
    spec = Scenario.model_validate(task.scenario)
    rows = run_seeds(
        spec, task.seeds, task.policy, {**task.overrides, **task.point}, task.noise, task.minutes, task.clock
    )
    n = len(rows)
    columns: Columns = {}
    for name, value in task.point.items():
        columns[f"grid_{name}"] = np.full(n, value, dtype=_grid_dtype(value))
    ints = _int_outcomes() | {"seed", "objectives_passed", "objectives_total"}
    for name in rows[0] if rows else ():
        values = [r[name] for r in rows]
        if name in ints:
            columns[name] = np.array(values, dtype=np.int64)
        elif all(isinstance(v, bool | np.bool_) for v in values):
            columns[name] = np.array(values, dtype=np.bool_)
        else:  # a number that may be missing (NaN), whatever type this chunk's values happen to have
            columns[name] = np.array([math.nan if v is None else v for v in values], dtype=np.float64)
    return task.index, columns


def _grid_dtype(value: Any) -> Any:
    if isinstance(value, bool):
        return np.bool_
    if isinstance(value, int):
        return np.int64
    if isinstance(value, float):
        return np.float64
    return object


@dataclass
class SweepSpec:
    scenario: str | Path | Scenario
    seeds: int
    seed_start: int = 0
    policy: str | None = None
    grid: dict[str, list[Any]] = field(default_factory=dict)
    overrides: dict[str, Any] = field(default_factory=dict)
    noise: bool = True
    minutes: int | None = None
    clock: str | None = None
    rows_per_task: int | None = field(default_factory=rows_per_task)  # None: sized from the sweep and workers


@dataclass
class SweepPlan:
    """A checked sweep: the scenario, the grid points, the configuration recorded in the output."""

    spec: SweepSpec
    scenario: Scenario
    points: list[dict[str, Any]]
    overrides: dict[str, Any]
    minutes: int
    vector: bool
    config: dict[str, Any]

    @property
    def seed_stop(self) -> int:
        return self.spec.seed_start + self.spec.seeds

    def chunk_size(self, runs: int, workers: int) -> int:
        """Equal chunks, as big as allowed, in whole rounds over the workers (so none waits on the others)."""
        if self.spec.rows_per_task is not None:
            return max(1, self.spec.rows_per_task)
        cap = MAX_CHUNK_VECTOR if self.vector else MAX_CHUNK_SCALAR
        cap = max(1, min(cap, MAX_STEPS_PER_CHUNK // max(1, self.minutes)))
        rounds = max(1, math.ceil(runs / (max(1, workers) * cap)))
        return max(1, math.ceil(runs / (max(1, workers) * rounds)))

    def remaining(self, done: Mapping[int, npt.NDArray[np.int64]]) -> int:
        per_point = self.spec.seeds
        return sum(
            per_point - _count_between(done.get(p), self.spec.seed_start, self.seed_stop)
            for p in range(len(self.points))
        )

    def tasks(self, done: Mapping[int, npt.NDArray[np.int64]], size: int) -> Iterator[Task]:
        """The chunks still to run, made one at a time (never a list of all seeds)."""
        scenario = self.scenario.model_dump(mode="json")
        index = 0
        for p, point in enumerate(self.points):
            seen = done.get(p, np.empty(0, dtype=np.int64))
            remaining = self.spec.seeds - _count_between(seen, self.spec.seed_start, self.seed_stop)
            if remaining <= 0:
                continue
            chunks = math.ceil(remaining / size)
            cursor = self.spec.seed_start
            for k in range(chunks):
                want = remaining // chunks + (k < remaining % chunks)
                seeds, cursor = _take_missing(seen, cursor, want)
                yield Task(
                    index,
                    scenario,
                    point,
                    dict(self.overrides),
                    seeds,
                    self.spec.policy,
                    self.spec.noise,
                    self.spec.minutes,
                    self.spec.clock,
                    p,
                )
                index += 1


def _count_between(seen: npt.NDArray[np.int64] | None, lo: int, hi: int) -> int:
    if seen is None or not len(seen):
        return 0
    return int(np.searchsorted(seen, hi) - np.searchsorted(seen, lo))


def _take_missing(seen: npt.NDArray[np.int64], cursor: int, want: int) -> tuple[Sequence[int], int]:
    """The next ``want`` seeds from ``cursor`` on that are not in ``seen`` (sorted), and the cursor after them."""
    pieces: list[range] = []
    at = int(np.searchsorted(seen, cursor))
    while want > 0:
        while at < len(seen) and seen[at] == cursor:  # skip seeds already done
            cursor += 1
            at += 1
        nxt = int(seen[at]) if at < len(seen) else cursor + want
        take = min(want, nxt - cursor)
        pieces.append(range(cursor, cursor + take))
        cursor += take
        want -= take
    if len(pieces) == 1:
        return pieces[0], cursor
    return tuple(itertools.chain.from_iterable(pieces)), cursor


def plan_sweep(spec: SweepSpec) -> SweepPlan:
    """Check every input (before any worker starts or any file is made) and describe the sweep."""
    for name, value in (("--seeds", spec.seeds), ("--seed-start", spec.seed_start)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidInput(name, f"must be a whole number, got {value!r}")
    if not 0 <= spec.seed_start <= MAX_SEED:
        raise InvalidInput("--seed-start", f"must be from 0 to {MAX_SEED}, got {spec.seed_start}")
    room = MAX_SEED - spec.seed_start + 1
    if not 1 <= spec.seeds <= room:
        raise InvalidInput("--seeds", f"must be from 1 to {room} (seeds stay within 0–{MAX_SEED}), got {spec.seeds}")
    if spec.rows_per_task is not None and spec.rows_per_task < 1:
        raise InvalidInput("rows per task", f"must be at least 1, got {spec.rows_per_task}")
    scenario = load_scenario(spec.scenario)
    if spec.policy is not None:
        load_policy(spec.policy)  # a policy path that does not import fails here, before any output
    names = list(spec.grid)
    points = [dict(zip(names, combo, strict=True)) for combo in itertools.product(*spec.grid.values())] or [{}]
    overrides = {name: _coerce(name, value) for name, value in spec.overrides.items()}
    split_overrides(overrides)
    length = 0
    for point in points:  # each grid point must make a valid run
        sim = Simulation(
            scenario,
            seed=spec.seed_start,
            overrides={**overrides, **point},
            noise=spec.noise,
            minutes=spec.minutes,
            clock=spec.clock,
        )
        length = sim.plan.minutes
    config = {
        "format": 1,
        "model_version": MODEL_VERSION,
        "engine": "minute",  # the only engine today; batch and scalar paths give the same rows
        "scenario": scenario.model_dump(mode="json"),
        "overrides": dict(sorted(overrides.items())),
        "policy": spec.policy or "hands-off",
        "minutes": spec.minutes,
        "clock": spec.clock,
        "noise": spec.noise,
        "grid": {name: list(values) for name, values in spec.grid.items()},
        "seed_start": spec.seed_start,
    }
    config = json.loads(json.dumps(config))  # as it reads back from the file
    return SweepPlan(spec, scenario, points, overrides, length, vectorized(spec.policy) is not None, config)


class LocalExecutor:
    """Worker processes on this machine (the default: one per CPU), started once, fed one chunk at a time."""

    def __init__(self, workers: int | None = None, start: str | None = None) -> None:
        # "fork": a worker is a copy of this process, modules already imported (no start-up; Linux's default);
        # "spawn": a fresh interpreter that imports what it needs (elsewhere, or ONCALLSIM_SWEEP_START=spawn)
        start = start or os.environ.get("ONCALLSIM_SWEEP_START") or ("fork" if _FORK_OK else "spawn")
        if start not in ("fork", "spawn") or (start == "fork" and not _FORK_OK):
            raise InvalidInput("worker start", f"must be spawn{' or fork' * _FORK_OK}, got {start!r}")
        self.start = start
        if workers is None:
            workers = os.cpu_count() or 1
        if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= MAX_WORKERS:
            raise InvalidInput(
                "--workers", f"must be from 1 to {MAX_WORKERS} (leave it out for one per CPU), got {workers!r}"
            )
        self.workers = workers
        self.description = f"{self.workers} local worker process{'es' * (self.workers != 1)}"

    def map_unordered(self, tasks: Iterable[Task]) -> Generator[tuple[int, Columns], None, None]:
        queue = iter(tasks)
        first = list(itertools.islice(queue, self.workers))
        if self.workers == 1 or len(first) <= 1:
            for task in itertools.chain(first, queue):
                yield run_task(task)
            return
        pool: list[_Worker] = []
        busy: dict[Any, _Worker] = {}
        try:
            with _signals_held():  # a Ctrl-C or SIGTERM now waits until every worker is started and known
                for _ in first:
                    pool.append(_Worker(self.start))
            for worker, task in zip(pool, first, strict=True):
                worker.send(task)
                busy[worker.rx] = worker
            from multiprocessing.connection import wait as ready

            while busy:
                for rx in ready(list(busy)):
                    worker = busy.pop(rx)
                    result = worker.receive()
                    following = next(queue, None)
                    if following is not None:  # the next chunk goes out before this one is written
                        worker.send(following)
                        busy[worker.rx] = worker
                    yield result
        finally:
            for worker in pool:
                worker.stop()


@dataclass
class _Failure:
    """An exception in a worker, on its way to the parent (as plain data: not every exception unpickles)."""

    kind: str
    message: str
    trace: str
    invalid: tuple[str, str] | None = None


def _run_safely(task: Task) -> tuple[int, Columns] | _Failure:
    try:
        return run_task(task)
    except Exception as exc:
        invalid = (exc.field, exc.reason) if isinstance(exc, InvalidInput) else None
        return _Failure(type(exc).__name__, str(exc), traceback.format_exc(), invalid)


def _unwrap(result: tuple[int, Columns] | _Failure) -> tuple[int, Columns]:
    """A worker's result, or its exception raised here: bad input stays one line (InvalidInput), a bug shows
    the worker's traceback."""
    if isinstance(result, _Failure):
        if result.invalid is not None:
            raise InvalidInput(*result.invalid)
        raise RuntimeError(f"{result.kind} in a sweep worker: {result.message}\n{result.trace}")
    return result


# Ctrl-C reaches the whole foreground process group: a worker ignores it from its first line (the parent stops it).
_WORKER_CODE = (
    "import signal; signal.signal(signal.SIGINT, signal.SIG_IGN); "
    "from oncallsim.batch.sweep import _worker_main; _worker_main()"
)


_FORK_OK = sys.platform.startswith("linux")
_STOPS = {signal.SIGINT, signal.SIGTERM}


@dataclass
class _Stops:
    received: list[int] = field(default_factory=list)
    held: int = 0
    pending: bool = False


_STOP = _Stops()
_PARENT_ENDS: set[int] = set()  # this process's ends of its workers' pipes (a forked worker closes its copies)


def _on_stop_signal(signum: int, _frame: object) -> None:
    _STOP.received.append(signum)
    if _STOP.held:  # starting a worker: the stop waits for the end of that (see _signals_held)
        _STOP.pending = True
        return
    raise KeyboardInterrupt


@contextlib.contextmanager
def stop_on_signals() -> Iterator[list[int]]:
    """Within: SIGINT and SIGTERM both stop a sweep cleanly (as KeyboardInterrupt, the finished chunks kept), and
    never in the middle of starting a worker. Yields the signals received, first first."""
    if threading.current_thread() is not threading.main_thread():
        yield []
        return
    _STOP.received = []
    previous = {s: signal.signal(s, _on_stop_signal) for s in _STOPS}
    try:
        yield _STOP.received
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM while workers start: a stop raised there would leave a worker unknown to the pool,
    or be swallowed by the interpreter's fork hooks (and the sweep would run on). The stop comes right after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _STOP.held += 1
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        _STOP.held -= 1
        if not _STOP.held and _STOP.pending:
            _STOP.pending = False
            raise KeyboardInterrupt


class _Worker:
    """One worker process: chunks in on one pipe, columns out on another (pickled, length-prefixed)."""

    def __init__(self, start: str = "spawn") -> None:
        from multiprocessing.connection import Connection

        task_r, task_w = os.pipe()
        result_r, result_w = os.pipe()
        self.pid = 0
        self.process: subprocess.Popen[bytes] | None = None
        if start == "fork":
            self.pid = _fork_worker(task_r, task_w, result_r, result_w)
            self.tx = Connection(task_w, readable=False)
            self.rx = Connection(result_r, writable=False)
            _PARENT_ENDS.update((task_w, result_r))
            return
        package_root = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _WORKER_CODE, str(os.getpid())],
                stdin=task_r,
                stdout=result_w,
                close_fds=True,
                env=env,
            )
        finally:
            os.close(task_r)
            os.close(result_w)
        self.tx = Connection(task_w, readable=False)
        self.rx = Connection(result_r, writable=False)

    def send(self, task: Task) -> None:
        try:
            self.tx.send(task)
        except OSError:
            raise RuntimeError(f"a sweep worker stopped (exit code {self.wait()})") from None

    def receive(self) -> tuple[int, Columns]:
        try:
            result: tuple[int, Columns] | _Failure = self.rx.recv()
        except (EOFError, OSError):
            raise RuntimeError(f"a sweep worker stopped (exit code {self.wait()})") from None
        return _unwrap(result)

    def wait(self) -> int:
        if self.process is not None:
            return self.process.wait()
        _, status = os.waitpid(self.pid, 0)
        return os.waitstatus_to_exitcode(status)

    def stop(self) -> None:
        """Close its pipes and end it now (a chunk in progress is not wanted any more)."""
        self.tx_fd, self.rx_fd = self.tx.fileno(), self.rx.fileno()
        self.tx.close()
        if self.process is not None:
            if self.process.poll() is None:
                self.process.kill()
        else:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.wait()
        self.rx.close()
        _PARENT_ENDS.difference_update((self.tx_fd, self.rx_fd))


def _fork_worker(task_r: int, task_w: int, result_r: int, result_w: int) -> int:
    """A worker as a copy of this process: it keeps only its two pipe ends and never returns to the caller."""
    parent = os.getpid()
    pid = os.fork()
    if pid:
        os.close(task_r)
        os.close(result_w)
        return pid
    code = 0
    try:  # the child: this process's modules, none of its threads, none of its other descriptors' duties
        from multiprocessing.connection import Connection

        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPS)
        os.close(task_w)
        os.close(result_r)
        for fd in _PARENT_ENDS:  # the other workers' pipes: theirs to close, not ours to hold open
            try:
                os.close(fd)
            except OSError:
                pass
        _die_with_parent(parent)
        _serve(Connection(task_r, writable=False), Connection(result_w, readable=False))
    except BaseException:
        code = 1
    finally:
        os._exit(code)  # never the parent's cleanup (atexit, finally blocks, buffered output)


def _worker_main() -> None:
    """A local worker's loop: die with the parent, ignore Ctrl-C (the parent stops us), run chunks until EOF."""
    from multiprocessing.connection import Connection

    parent = int(sys.argv[1])
    _die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})  # held by the parent while it started us
    rx = Connection(os.dup(0), writable=False)
    tx = Connection(os.dup(1), readable=False)
    os.dup2(2, 1)  # stray prints go to stderr, never into the result pipe
    _serve(rx, tx)


def _serve(rx: Any, tx: Any) -> None:
    """Chunks in, results out, until the parent closes the pipe or goes away."""
    while True:
        try:
            task = rx.recv()
        except (EOFError, OSError):
            return
        try:
            tx.send(_run_safely(task))
        except (BrokenPipeError, OSError):
            return


def _die_with_parent(parent: int) -> None:
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG: the kernel kills us with the parent
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # the parent died before the line above took effect
        os._exit(0)
    if not sys.platform.startswith("linux"):

        def watch() -> None:
            while os.getppid() == parent:
                time.sleep(0.5)
            os._exit(0)

        threading.Thread(target=watch, daemon=True).start()


class DaskExecutor:
    """An existing Dask distributed cluster (``--scheduler tcp://HOST:PORT``; the ``cluster`` extra)."""

    def __init__(self, address: str, timeout_s: float = 10.0) -> None:
        try:
            from distributed import Client
        except ImportError:
            raise InvalidInput("--scheduler", "needs Dask distributed: pip install 'oncallsim[cluster]'") from None
        try:
            self.client = Client(address, timeout=timeout_s)
        except (OSError, TimeoutError) as exc:
            raise InvalidInput("--scheduler", f"cannot reach {address}: {exc}") from None
        self.workers = max(1, len(self.client.scheduler_info().get("workers", {})))
        self.description = f"Dask scheduler {address} ({self.workers} workers)"

    def map_unordered(self, tasks: Iterable[Task]) -> Generator[tuple[int, Columns], None, None]:
        from distributed import as_completed

        queue = iter(tasks)
        futures = as_completed()
        pending = set()
        try:
            for task in itertools.islice(queue, 2 * self.workers):  # a bounded number in flight
                future = self.client.submit(_run_safely, task, pure=False)
                pending.add(future)
                futures.add(future)
            for future in futures:
                pending.discard(future)
                following = next(queue, None)
                if following is not None:
                    nxt = self.client.submit(_run_safely, following, pure=False)
                    pending.add(nxt)
                    futures.add(nxt)
                yield _unwrap(future.result())
        finally:
            for future in pending:
                future.cancel()

    def close(self) -> None:
        self.client.close()


# ---- the output: OUT (one Parquet file) and, while a sweep runs, OUT.parts/ (closed part files) ----


def parts_dir(out: Path) -> Path:
    return out.with_name(out.name + ".parts")


def _part_files(parts: Path) -> list[Path]:
    return sorted(p for p in parts.glob("part-*.parquet")) if parts.is_dir() else []


def _read_config(out: Path) -> dict[str, Any]:
    import pyarrow.parquet as pq

    try:
        metadata = pq.read_schema(out).metadata or {}
    except (OSError, ValueError) as exc:
        reason = (str(exc).splitlines() or ["unreadable"])[0]
        raise InvalidInput(str(out), f"is not a readable Parquet file ({reason}); choose another --out") from None
    if CONFIG_KEY not in metadata:
        raise InvalidInput(
            str(out), "has no sweep configuration in its metadata (an older or foreign file); choose another --out"
        )
    config: dict[str, Any] = json.loads(metadata[CONFIG_KEY])
    return config


_LABELS = {
    "scenario": "scenario",
    "overrides": "--set",
    "policy": "--policy",
    "minutes": "--minutes",
    "clock": "clock",
    "noise": "noise (--no-noise)",
    "grid": "--grid",
    "seed_start": "--seed-start",
    "engine": "engine",
    "model_version": "model version",
    "format": "file format",
}


def _show(key: str, value: Any) -> str:
    if key == "scenario" and isinstance(value, dict):
        return str(value.get("id", "?"))
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 60 else text[:57] + "…"


def config_difference(saved: Mapping[str, Any], wanted: Mapping[str, Any]) -> str | None:
    """None when equal; otherwise one line naming each setting that differs, with its saved and new value."""
    diffs = []
    for key in _LABELS:
        a, b = saved.get(key), wanted.get(key)
        if json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True):
            continue
        old, new = _show(key, a), _show(key, b)
        if old == new:  # e.g. a scenario of the same id with other content
            old, new = f"{old} (other content)", f"{new} (this content)"
        diffs.append(f"{_LABELS[key]} (file: {old}, now: {new})")
    if not diffs:
        return None
    return "; ".join(diffs)


@dataclass
class _Output:
    out: Path
    parts: Path
    done: dict[int, npt.NDArray[np.int64]]
    rows: int
    resuming: bool


def check_output(plan: SweepPlan, out: Path, resume: bool) -> _Output:
    """Refuse an existing output without ``resume``, or with another configuration; read the seeds done.

    Changes nothing on disk."""
    parts = parts_dir(out)
    exists = out.exists() or parts.exists()
    if not exists:
        return _Output(out, parts, {}, 0, False)
    if not resume:
        what = out if out.exists() else parts
        raise InvalidInput(str(what), "exists; pass --resume to continue it, or choose another --out")
    sources: list[Path] = []
    if out.exists():
        if out.is_dir():
            raise InvalidInput(str(out), "is a directory; choose another --out")
        saved = _read_config(out)
        sources.append(out)
    if parts.is_dir() and not out.exists():
        try:
            saved = json.loads((parts / CONFIG_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise InvalidInput(str(parts), "is not a sweep in progress (no readable _sweep.json); remove it") from None
        sources.extend(_part_files(parts))
    elif parts.exists() and not parts.is_dir():
        raise InvalidInput(str(parts), "is in the way (not a folder); remove it")
    difference = config_difference(saved, plan.config)
    if difference is not None:
        raise InvalidInput("--resume", f"{out} was made by a different sweep: {difference}")
    done, rows = _seeds_done(plan, sources)
    return _Output(out, parts, done, rows, True)


def _seeds_done(plan: SweepPlan, files: Sequence[Path]) -> tuple[dict[int, npt.NDArray[np.int64]], int]:
    """Per grid point, the sorted seeds that have a row in ``files``; and the number of rows."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    names = list(plan.spec.grid)
    found: dict[int, list[npt.NDArray[np.int64]]] = {}
    rows = 0
    for path in files:
        try:
            table = pq.read_table(path, columns=[*(f"grid_{n}" for n in names), "seed"])
        except (OSError, ValueError, KeyError) as exc:
            reason = (str(exc).splitlines() or ["unreadable"])[0]
            raise InvalidInput(str(path), f"cannot be read ({reason}); move it away, then --resume") from None
        rows += table.num_rows
        for p, point in enumerate(plan.points):
            mask = None
            for name, value in point.items():
                hit = pc.equal(table.column(f"grid_{name}"), value)
                mask = hit if mask is None else pc.and_(mask, hit)
            seeds = table.column("seed") if mask is None else table.filter(mask).column("seed")
            found.setdefault(p, []).append(seeds.to_numpy().astype(np.int64))
    return {p: np.unique(np.concatenate(arrays)) for p, arrays in found.items()}, rows


def _clear_temporaries(parts: Path) -> None:
    for tmp in parts.glob(".tmp-*"):
        tmp.unlink(missing_ok=True)


def _merge(out: Path, parts: Path, config: Mapping[str, Any]) -> int:
    """Parts → OUT in one file (streamed part by part), then the folder goes; returns the rows in OUT.

    Safe to interrupt anywhere: until the rename, the parts are intact; after it, OUT has every row and a
    later ``resume`` (which sees both) drops the parts."""
    import pyarrow.parquet as pq

    files = _part_files(parts)
    if not files:
        _remove_parts(parts)
        return 0
    tmp = parts / ".tmp-merged.parquet"
    schema = pq.read_schema(files[0]).with_metadata({CONFIG_KEY: json.dumps(config).encode()})
    rows = 0
    with pq.ParquetWriter(tmp, schema) as writer:
        for path in files:
            table = pq.read_table(path).replace_schema_metadata(schema.metadata)
            writer.write_table(table.cast(schema))
            rows += table.num_rows
    _fsync(tmp)
    tmp.replace(out)
    _remove_parts(parts)
    return rows


def _remove_parts(parts: Path) -> None:
    if not parts.is_dir():
        return
    for path in parts.iterdir():
        path.unlink(missing_ok=True)
    parts.rmdir()


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _open_parts(state: _Output, config: Mapping[str, Any]) -> None:
    """Make OUT.parts/ the one place of the rows: the configuration first, then OUT (if any) moved in."""
    out, parts = state.out, state.parts
    if out.exists() and parts.exists():  # a merge was interrupted after its rename: OUT has every row
        _remove_parts(parts)
    parts.mkdir(exist_ok=True)
    _clear_temporaries(parts)
    config_file = parts / CONFIG_FILE
    if not config_file.exists():
        tmp = parts / ".tmp-config"
        tmp.write_text(json.dumps(config), encoding="utf-8")
        tmp.replace(config_file)
    if out.exists():
        base = parts / "part-00000-base.parquet"
        k = 0
        while base.exists():
            k += 1
            base = parts / f"part-00000-base-{k}.parquet"
        out.replace(base)


def _write_part(parts: Path, task: Task | None, index: int, table: Any) -> None:
    import pyarrow.parquet as pq

    first = int(table.column("seed")[0].as_py()) if table.num_rows else 0
    point = task.point_index if task is not None else 0
    name = parts / f"part-{point:05d}-{first:010d}.parquet"
    if name.exists():
        name = parts / f"part-{point:05d}-{first:010d}-{index}-{time.time_ns()}.parquet"
    tmp = parts / f".tmp-{name.name}"
    pq.write_table(table, tmp)
    tmp.replace(name)  # the part is complete, with its footer, before it has its name


def sweep(
    spec: SweepSpec,
    executor: LocalExecutor | DaskExecutor,
    out: Path,
    resume: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Run the sweep into ``out``; returns the rows in the file. Ctrl-C (KeyboardInterrupt) keeps every finished
    chunk: they are merged into ``out`` before the exception goes on; after a kill they wait in ``out.parts/``."""
    import pyarrow as pa

    plan = plan_sweep(spec)
    state = check_output(plan, out, resume)
    workers = getattr(executor, "workers", 1)
    remaining = plan.remaining(state.done)
    size = plan.chunk_size(remaining, workers)
    tasks: dict[int, Task] = {}

    def planned() -> Iterator[Task]:
        for task in plan.tasks(state.done, size):
            tasks[task.index] = task
            yield task

    if remaining == 0 and out.is_file() and not state.parts.exists():
        return state.rows  # nothing left to run: the file stays as it is
    _open_parts(state, plan.config)
    metadata = {CONFIG_KEY: json.dumps(plan.config).encode()}
    schema: Any = None
    finished = 0
    results = executor.map_unordered(planned())
    try:
        if progress is not None:
            progress(0, remaining)
        for index, columns in results:
            table = pa.table(columns)
            if schema is None:
                schema = table.schema.with_metadata(metadata)
            table = table.replace_schema_metadata(metadata).cast(schema)
            _write_part(state.parts, tasks.pop(index, None), index, table)
            finished += table.num_rows
            if progress is not None:
                progress(finished, remaining)
    finally:
        results.close()  # local workers end here, before the merge
        rows = _merge(out, state.parts, plan.config)
    return rows


def rows_in(out: Path) -> int:
    """Rows kept for ``out``: in the file, or in its parts after a kill."""
    import pyarrow.parquet as pq

    if out.is_file():
        return int(pq.read_metadata(out).num_rows)
    return sum(int(pq.read_metadata(p).num_rows) for p in _part_files(parts_dir(out)))


def aggregate(path: Path, grid_names: Sequence[str]) -> list[dict[str, Any]]:
    """Per grid point: runs, p10/p50/p90 of budget spent, cost and worst p99, and the share of runs passing."""
    import pyarrow.parquet as pq

    metrics = ("budget_spent", "cost", "worst_p99_ms")
    keys = [f"grid_{n}" for n in grid_names]
    table = pq.read_table(path, columns=[*keys, *metrics, "passed", "objectives_passed", "objectives_total"])
    points = [tuple(row) for row in zip(*(table.column(k).to_pylist() for k in keys), strict=True)]
    groups: dict[tuple[Any, ...], list[int]] = {}
    if keys:
        for i, key in enumerate(points):
            groups.setdefault(key, []).append(i)
    elif table.num_rows:
        groups[()] = list(range(table.num_rows))
    columns = {name: table.column(name).to_numpy(zero_copy_only=False) for name in table.column_names}
    out = []
    for key, members in sorted(groups.items()):
        index = np.asarray(members)
        summary: dict[str, Any] = dict(zip(grid_names, key, strict=True))
        summary["runs"] = len(members)
        for metric in metrics:
            values = columns[metric][index].astype(np.float64)
            values = values[~np.isnan(values)]
            for q in (0.1, 0.5, 0.9):
                summary[f"{metric}_p{int(q * 100)}"] = float(np.quantile(values, q)) if len(values) else math.nan
        summary["passed_share"] = float(columns["passed"][index].astype(bool).mean())
        summary["objectives_met_share"] = float(columns["objectives_passed"][index].sum()) / max(
            1, int(columns["objectives_total"][index].sum())
        )
        out.append(summary)
    return out


def distribution_html(path: Path, grid_names: Sequence[str], title: str) -> str:
    """An offline HTML page (plotly.js inlined) with the distributions of budget spent, cost and worst p99."""
    import plotly.graph_objects as go
    import pyarrow.parquet as pq
    from plotly.subplots import make_subplots

    metrics = (("budget_spent", "error budget spent"), ("cost", "cost ($)"), ("worst_p99_ms", "worst p99 (ms)"))
    keys = [f"grid_{n}" for n in grid_names]
    rows = pq.read_table(path, columns=[*keys, *(m[0] for m in metrics)]).to_pylist()
    fig = make_subplots(rows=1, cols=3, subplot_titles=[m[1] for m in metrics])
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        label = ", ".join(f"{n}={r[f'grid_{n}']}" for n in grid_names) or "all runs"
        groups.setdefault(label, []).append(r)
    for col, (metric, _) in enumerate(metrics, start=1):
        for label, group in sorted(groups.items()):
            fig.add_trace(
                go.Box(
                    y=[g[metric] for g in group], name=label, boxpoints=False, showlegend=col == 1, legendgroup=label
                ),
                row=1,
                col=col,
            )
    fig.update_layout(title=title, height=560, template="plotly_white")
    html: str = fig.to_html(include_plotlyjs=True, full_html=True)
    return html

"""Where a sweep's chunks run: local worker processes (started once, fed one chunk at a time over a pipe,
dying with their parent; no multiprocessing resource tracker) or a Dask cluster; and how a stop (Ctrl-C,
SIGTERM) reaches a sweep without being swallowed while a worker starts."""

from __future__ import annotations

import contextlib
import gc
import itertools
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oncallsim.batch.sweep_plan import Columns, run_task
from oncallsim.model import InvalidInput

__all__ = ["MAX_WORKERS", "DaskExecutor", "LocalExecutor", "Work", "stop_on_signals"]

MAX_WORKERS = 256
# What a worker does with a task: a module-level function (it travels by name), the task's index and its columns
# back. A sweep's chunk (``run_task``) unless told otherwise; the cliff map's runs are another.
Work = Callable[[Any], tuple[int, Columns]]


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

    def map_unordered(self, tasks: Iterable[Any], work: Work = run_task) -> Generator[tuple[int, Columns], None, None]:
        queue = iter(tasks)
        first = list(itertools.islice(queue, self.workers))
        if self.workers == 1 or len(first) <= 1:
            for task in itertools.chain(first, queue):
                yield work(task)
            return
        pool: list[_Worker] = []
        busy: dict[Any, _Worker] = {}
        try:
            with _signals_held():  # a Ctrl-C or SIGTERM now waits until every worker is started and known
                for _ in first:
                    pool.append(_Worker(self.start))
            for worker, task in zip(pool, first, strict=True):
                worker.send((work, task))
                busy[worker.rx] = worker
            from multiprocessing.connection import wait as ready

            while busy:
                for rx in ready(list(busy)):
                    worker = busy.pop(rx)
                    result = worker.receive()
                    following = next(queue, None)
                    if following is not None:  # the next chunk goes out before this one is written
                        worker.send((work, following))
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


def _run_safely(task: Any, work: Work = run_task) -> tuple[int, Columns] | _Failure:
    try:
        return work(task)
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
    "from oncallsim.batch.executors import _worker_main; _worker_main()"
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

    def send(self, job: tuple[Work, Any]) -> None:
        try:
            self.tx.send(job)
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
        gc.freeze()  # the parent's objects (numba's, the modules') are never scanned again: ~40 ms a chunk less
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
            work, task = rx.recv()
        except (EOFError, OSError):
            return
        try:
            tx.send(_run_safely(task, work))
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

    def map_unordered(self, tasks: Iterable[Any], work: Work = run_task) -> Generator[tuple[int, Columns], None, None]:
        from distributed import as_completed

        queue = iter(tasks)
        futures = as_completed()
        pending = set()
        try:
            for task in itertools.islice(queue, 2 * self.workers):  # a bounded number in flight
                future = self.client.submit(_run_safely, task, work, pure=False)
                pending.add(future)
                futures.add(future)
            for future in futures:
                pending.discard(future)
                following = next(queue, None)
                if following is not None:
                    nxt = self.client.submit(_run_safely, following, work, pure=False)
                    pending.add(nxt)
                    futures.add(nxt)
                yield _unwrap(future.result())
        finally:
            for future in pending:
                future.cancel()

    def close(self) -> None:
        self.client.close()

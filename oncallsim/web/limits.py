"""How much one server holds: limits on live runs and rooms (in total and per client), and when what nobody uses
leaves memory.

A live run costs memory while it is in memory (a minute-engine run about 1 MB, a request-engine run 30 MB and
more), and a client could otherwise create them as fast as the loop answers (an audit made 300 runs in 0.7 s and
200 rooms in 1.9 s). So a new run or room is admitted only while its client has fewer than its share in memory
and has not created too many in the last minute, and while the server has room; a refusal is a 429 whose text
says what to do (``Full``, translated on the page and in the JSON). What nobody watches leaves memory after a
while — a finished run soon, an unfinished one after longer — and stays in SQLite, to be rebuilt on demand as
after a restart (``RunManager.get``, ``RoomManager.get``).
"""

from __future__ import annotations

import asyncio
import ctypes
import dataclasses
import gc
import logging
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from oncallsim.model import InvalidInput

__all__ = ["BUSY", "Full", "Gate", "Limits", "client_of", "sweep_forever"]

# What a refusal says (gettext msgids; scripts/update_catalogs.py extracts them): what the limit is and what to do.
BUSY = {
    "runs": "the server holds %(max)s live runs, its limit: end or delete a run you no longer play (Runs page), "
    "or try again in a few minutes",
    "request_runs": "the server holds %(max)s live request-engine runs, its limit: end or delete one you no "
    "longer play, play this scenario on the minute engine, or try again in a few minutes",
    "runs_per_client": "you have %(max)s live runs, the limit for one player: end or delete one you no longer "
    "play (Runs page), then start again",
    "new_runs_per_minute": "at most %(max)s new runs a minute from one player: wait %(wait)s seconds, then start again",
    "rooms": "the server holds %(max)s open rooms, its limit: close a room that is over, or try again later",
    "rooms_per_client": "you have %(max)s open rooms, the limit for one facilitator: close one that is over, "
    "then create again",
    "new_rooms_per_minute": "at most %(max)s new rooms a minute from one facilitator: wait %(wait)s seconds, "
    "then create again",
}


class Full(Exception):
    """A new run or room refused because a limit is reached: answered 429 (``Retry-After``: ``wait_s``), its
    text (``BUSY[kind] % args``) translated into the page's language. Not an ``InvalidInput``: the input is
    fine, the server is full."""

    def __init__(self, kind: str, wait_s: float, **args: Any) -> None:
        self.kind, self.args_, self.wait_s = kind, args, max(1, math.ceil(wait_s))
        super().__init__(self.text(lambda s: s))

    def text(self, gettext: Any) -> str:
        return str(gettext(BUSY[self.kind]) % {**self.args_, "wait": self.wait_s})


@dataclass(frozen=True)
class Limits:
    """The server's limits (``oncallsim serve --limit NAME=VALUE`` changes one). A "client" is the address a
    request comes from; "live" means in memory and not over."""

    runs: int = 500  # live runs in memory, every client's (the clock's measured capacity at 16x, docs/web.md)
    request_runs: int = 24  # of those, on the request engine (30 MB and more each)
    runs_per_client: int = 20
    new_runs_per_minute: int = 30  # per client
    rooms: int = 100
    rooms_per_client: int = 10
    new_rooms_per_minute: int = 10  # per client
    resident: int = 1000  # runs in memory of any kind (finished ones rebuilt for a debrief or a zoom included)
    idle_s: float = 600.0  # an unfinished run nobody watches leaves memory after this long untouched
    finished_s: float = 60.0  # a finished run nobody watches (its debrief stays in the store)
    room_idle_s: float = 1800.0  # a room nobody is in (it comes back paused, for its facilitator to resume)

    @property
    def sweep_s(self) -> float:
        """How often the sweeper looks: a quarter of the shortest idle time, from 0.1 s to 30 s."""
        return min(30.0, max(0.1, min(self.idle_s, self.finished_s, self.room_idle_s) / 4))

    @classmethod
    def parse(cls, items: list[str] | None) -> Limits:
        """``NAME=VALUE`` pairs over the defaults; a bad one raises naming ``--limit`` and what is allowed."""
        limits = cls()
        fields = {f.name: f for f in dataclasses.fields(cls)}
        for item in items or []:
            name, equals, raw = item.partition("=")
            name = name.strip()
            if not equals or name not in fields:
                raise InvalidInput("--limit", f"NAME=VALUE with NAME one of {', '.join(fields)}; got {item[:60]!r}")
            whole = fields[name].type in ("int", int)
            try:
                value: float = int(raw) if whole else float(raw)
            except ValueError:
                value = math.nan
            top = 10**6
            if not (1 <= value <= top if whole else 0.1 <= value <= top):
                low = "1" if whole else "0.1"
                kind = "a whole number" if whole else "a number of seconds"
                raise InvalidInput("--limit", f"{name} must be {kind} from {low} to {top}, got {raw[:40]!r}")
            limits = dataclasses.replace(limits, **{name: value})  # type: ignore[arg-type]
        return limits


class Gate:
    """Creations per client in the last minute (the rate half of the limits; the counts in memory are the
    managers'). Forgets a client a minute after its last creation."""

    def __init__(self, per_minute: int, kind: str) -> None:
        self.per_minute, self.kind = per_minute, kind
        self.recent: dict[str, deque[float]] = {}

    def check(self, client: str) -> None:
        """Refuse (``Full``) a client that created ``per_minute`` in the last 60 s (a refused input does not
        count: only what ``count`` was told of)."""
        now = time.monotonic()
        times = self.recent.get(client)
        while times and now - times[0] > 60.0:
            times.popleft()
        if times and len(times) >= self.per_minute:
            raise Full(self.kind, 60.0 - (now - times[0]), max=self.per_minute)

    def count(self, client: str) -> None:
        """One more created by ``client``."""
        self.recent.setdefault(client, deque()).append(time.monotonic())

    def forget_old(self) -> None:
        now = time.monotonic()
        for client in [c for c, t in self.recent.items() if not t or now - t[-1] > 60.0]:
            del self.recent[client]


def client_of(request: Any) -> str:
    """Who asks: the peer's address (behind a reverse proxy, every client is the proxy: set the limits per
    client to the whole team's)."""
    client = getattr(request, "client", None)
    return str(client.host) if client is not None else ""


async def sweep_forever(limits: Limits, sweeps: Callable[[], list[Awaitable[int]]]) -> None:
    """Every ``limits.sweep_s``: what nobody uses leaves memory (``sweeps``: the managers' sweeps, fresh each
    time); one failing sweep is logged, the next one comes."""
    log = logging.getLogger("oncallsim.web")
    while True:
        await asyncio.sleep(limits.sweep_s)
        gone = 0
        for sweep in sweeps():
            try:
                gone += await sweep
            except Exception:
                log.exception("a memory sweep failed")
        if gone:
            await asyncio.to_thread(give_back)


# The cyclic collector's thresholds in the server (``tune_collector``): a collection of the first generation after
# 50,000 allocations (700 by default), of the second after 20 of those, of the whole heap after 1,000 of those.
COLLECTOR_THRESHOLDS = (50_000, 20, 1_000)


def tune_collector() -> None:
    """The server's garbage collector, for many live runs in one process. With Python's defaults a full collection
    came every few seconds and scanned the whole heap (500 live runs: about 560 MB of objects), stopping the event
    loop long enough to make the minutes late: 500 runs at 16× had a p99 lateness of 242–328 ms; with the objects
    of the start-up frozen out of every scan (``gc.freeze``) and these thresholds, 36–38 ms (docs/web.md). What a
    run leaves when it goes is still collected at once (``give_back``: a full collection then)."""
    gc.freeze()
    gc.set_threshold(*COLLECTOR_THRESHOLDS)


def give_back() -> None:
    """Free what left memory now and hand the heap's free pages back to the system. A live run is a reference
    cycle (its bound methods, its tasks), so it is freed by the cyclic collector, whose thresholds count objects,
    not the 30 MB of arrays one holds: a full collection here, not whenever. Then glibc's ``malloc_trim``: freed
    pages otherwise stay in each thread's arena for reuse (nothing on other C libraries)."""
    global _libc
    gc.collect()
    if _libc is None:
        try:
            _libc = ctypes.CDLL("libc.so.6")
            _libc.malloc_trim.argtypes = [ctypes.c_size_t]
        except (OSError, AttributeError):
            _libc = False
    if _libc:
        _libc.malloc_trim(0)


_libc: Any = None

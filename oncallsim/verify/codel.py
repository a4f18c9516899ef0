"""CoDel against RFC 8289's own pseudocode, written here as the oracle (issue 23, item 10).

The oracle transcribes RFC 8289 §5 (``dodequeue``, ``dequeue``, ``control_law``) in plain Python: a request may be
dropped at dequeue once the sojourn of every request dequeued has stayed at or above ``target`` for
``interval``; then the drops come at times t + interval/√count while the sojourn stays above the target; a
sojourn below it (or an empty queue) ends the episode, and an episode that starts within 16 intervals of the last
one resumes from the count that controlled it (the drop count minus the last episode's start). The RFC's
``bytes() <= MAXPACKET`` test (a queue left with at most one packet is never dropped from) is the oracle's
``keep_last`` (on: the RFC; off: every dequeue may drop).

Both are driven through one scripted single-worker server: deterministic service of 10 ms (100/s), arrivals
every 1/150 s for 3 s (1.5× overload), every 1/50 s until 5 s (the queue drains, the state resets), 1.5× again
until 6.5 s (the re-entry rule), then nothing until the queue is empty. A free worker asks the discipline for
the next request (the engine's ``disciplines.take`` on a real world's queue, as the engine's workers do; the
oracle's ``dequeue``); what it removed besides the one it returns it dropped. The check compares the two lists
of drop times.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from typing import NamedTuple

from oncallsim.model.kernel import from_python
from oncallsim.model.request import disciplines
from oncallsim.model.request.queue_only import queue_only_world
from oncallsim.model.request.queues import Q_LEN, enqueue
from oncallsim.model.request.settings import set_world

__all__ = ["CodelRun", "Rfc8289", "engine_drops", "oracle_drops", "script"]

SERVICE_S = 0.010
PHASES = ((3.0, 150.0), (5.0, 50.0), (6.5, 150.0))  # (until, arrivals per second)
END_S = 10.0


def script() -> list[float]:
    """The arrival times."""
    times, start = [], 0.0
    for until, rate in PHASES:
        n = 0
        while start + n / rate < until:
            times.append(start + n / rate)
            n += 1
        start = until
    return times


class Rfc8289:
    """RFC 8289 §5's CoDel, on a FIFO of arrival times (the oracle)."""

    def __init__(self, target: float = 0.005, interval: float = 0.100, keep_last: bool = True) -> None:
        self.target, self.interval, self.keep_last = target, interval, keep_last
        self.queue: deque[float] = deque()
        self.first_above_time = 0.0
        self.drop_next = 0.0
        self.count = 0
        self.lastcount = 0
        self.dropping = False
        self.drops: list[float] = []

    def _dodequeue(self, now: float) -> tuple[float | None, bool]:
        if not self.queue:
            self.first_above_time = 0.0
            return None, False
        arrival = self.queue.popleft()
        sojourn = now - arrival
        ok_to_drop = False
        if sojourn < self.target or (self.keep_last and len(self.queue) <= 1):
            self.first_above_time = 0.0
        elif self.first_above_time == 0.0:
            self.first_above_time = now + self.interval
        elif now >= self.first_above_time:
            ok_to_drop = True
        return arrival, ok_to_drop

    def _control_law(self, t: float) -> float:
        return t + self.interval / math.sqrt(self.count)

    def dequeue(self, now: float) -> float | None:
        p, ok_to_drop = self._dodequeue(now)
        if self.dropping:
            if not ok_to_drop:
                self.dropping = False
            while now >= self.drop_next and self.dropping:
                self.drops.append(now)
                self.count += 1
                p, ok_to_drop = self._dodequeue(now)
                if not ok_to_drop:
                    self.dropping = False
                else:
                    self.drop_next = self._control_law(self.drop_next)
        elif ok_to_drop:
            self.drops.append(now)
            p, ok_to_drop = self._dodequeue(now)
            self.dropping = True
            delta = self.count - self.lastcount
            self.count = delta if delta > 1 and now - self.drop_next < 16 * self.interval else 1
            self.drop_next = self._control_law(now)
            self.lastcount = self.count
        return p


class CodelRun(NamedTuple):
    drops: list[float]  # when each drop happened (s)
    served: int


def _serve(arrive: Callable[[float], None], take: Callable[[float], int]) -> int:
    """The scripted server: arrivals enqueued at their times; a worker, when free, takes the next request (the
    discipline drops what it drops meanwhile); ``take`` returns how many it removed (0: the queue was empty)."""
    arrivals = script()
    served, free_at, k = 0, 0.0, 0
    while k < len(arrivals) or free_at < END_S:
        if k < len(arrivals) and arrivals[k] <= free_at:
            arrive(arrivals[k])
            k += 1
            continue
        now = free_at if k == len(arrivals) or free_at <= arrivals[k] else arrivals[k]
        if take(now) > 0:
            served += 1
            free_at = now + SERVICE_S
        elif k < len(arrivals):
            free_at = arrivals[k]
        else:
            break
    return served


def oracle_drops(target: float = 0.005, interval: float = 0.100, keep_last: bool = True) -> CodelRun:
    codel = Rfc8289(target, interval, keep_last)

    def take(now: float) -> int:
        return 1 if codel.dequeue(now) is not None else 0

    served = _serve(codel.queue.append, take)
    return CodelRun(codel.drops, served)


def engine_drops() -> CodelRun:
    """The engine's CoDel (``queue_discipline = "codel"``) on the script: one instance of one worker."""
    _, world, _ = queue_only_world(1, SERVICE_S, 0, workers_per_instance=1)
    set_world(world, balancer="round-robin", queue_discipline="codel")
    q = world.queues
    put, take_step = from_python(enqueue), from_python(disciplines.take)
    drops: list[float] = []

    def take(now: float) -> int:
        before = int(q.qs[Q_LEN, 0])
        slot = take_step(q, world.views, world.breaker, world.calls, world.meter, world.fleet, world.gen, 0, now, 0.0)
        removed = before - int(q.qs[Q_LEN, 0])
        drops.extend([now] * (removed - (1 if slot >= 0 else 0)))
        return 1 if slot >= 0 else 0

    served = _serve(lambda t: put(q, 0, t, 0, -1, -1, -1), take)
    return CodelRun(drops, served)

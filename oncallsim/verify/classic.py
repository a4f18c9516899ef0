"""The classic breaker's state sequence on a scripted error pattern, against a state machine written here from
Hystrix's documented rules (issue 23, item 10).

The oracle, in plain Python and nothing of the engine: a client keeps the last ``window`` seconds of answers in
1 s buckets; **closed**, it trips **open** when an answer arrives and its window holds at least ``volume``
requests with ``share`` or more of them failed; **open**, it rejects every request for ``sleep`` seconds; the
first request after that is sent as a probe (**half-open**; the others are rejected meanwhile); the probe's
answer closes it, with an empty window, or opens it again for another ``sleep``. Answers to requests sent before
the probe do not decide, and answers that arrive while open are not counted.

The script: a request every 100 ms, each answered 50 ms later; all succeed for 10 s, then 2 of every 5 fail for
10 s (40 %: below the ratio, it must stay closed), then 4 of every 5 fail (it trips; its probes fail, it opens
again), and from 32 s every request succeeds (the next probe succeeds: closed). Both the engine's breaker
(``breaker.rejects`` and ``breaker.heard``, called as the engine calls them) and the oracle are driven through
the same script; the check compares their sequences of (time, state).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from oncallsim.model.kernel import from_python
from oncallsim.model.params import Params
from oncallsim.model.request import breaker as engine_breaker
from oncallsim.model.request.balancers import A_ERROR, A_OK
from oncallsim.model.request.settings import set_parameters, set_world
from oncallsim.model.request.world import new_world

__all__ = ["SCRIPT_S", "Hystrix", "StateChange", "engine_sequence", "oracle_sequence", "script_fails"]

STATES = ("closed", "open", "half-open")
GAP_S = 0.1  # a request every 100 ms
RTT_S = 0.05  # each answered 50 ms later
SCRIPT_S = 40.0


class StateChange(NamedTuple):
    at_s: float
    state: str


def script_fails(n: int) -> bool:
    """Whether the script's ``n``-th request (sent at n × 100 ms) fails."""
    t = n * GAP_S
    if t < 10.0:
        return False
    if t < 20.0:
        return n % 5 < 2
    if t < 32.0:
        return n % 5 != 0
    return False


class Hystrix:
    """The oracle: one client's classic breaker, from the documented rules above."""

    def __init__(self, volume: float, share: float, sleep_s: float, window: int = 10) -> None:
        self.volume, self.share, self.sleep_s, self.window = volume, share, sleep_s, window
        self.state = "closed"
        self.buckets: dict[int, list[int]] = {}  # second → [requests, failures]
        self.until = 0.0
        self.probe_sent: float | None = None

    def allow(self, t: float) -> bool:
        if self.state == "open" and t >= self.until:
            self.state, self.probe_sent = "half-open", None
        if self.state == "closed":
            return True
        if self.state == "half-open" and self.probe_sent is None:
            self.probe_sent = t
            return True
        return False

    def answer(self, t: float, sent: float, failed: bool) -> None:
        if self.state == "half-open":
            if self.probe_sent is None or sent < self.probe_sent:
                return
            if failed:
                self.state, self.until = "open", t + self.sleep_s
            else:
                self.state, self.buckets = "closed", {}
            self.probe_sent = None
            return
        if self.state == "open":
            return
        second = int(t)
        counts = self.buckets.setdefault(second, [0, 0])
        counts[0] += 1
        counts[1] += failed
        recent = [c for s, c in self.buckets.items() if second - self.window < s <= second]
        requests, failures = sum(c[0] for c in recent), sum(c[1] for c in recent)
        if failed and requests >= self.volume and failures >= self.share * requests:
            self.state, self.until = "open", t + self.sleep_s


def _drive(
    allow: Callable[[float], bool], answer: Callable[[float, float, bool], None], state: Callable[[], str]
) -> tuple[list[StateChange], int]:
    """The script through one breaker: its (time, state) changes and how many requests it rejected."""
    changes = [StateChange(0.0, state())]
    rejected = 0
    answers: list[tuple[float, float, bool]] = []  # (at, sent, failed), in time order
    n = 0
    while n * GAP_S < SCRIPT_S:
        t = n * GAP_S
        while answers and answers[0][0] <= t:
            at, sent, failed = answers.pop(0)
            answer(at, sent, failed)
            if state() != changes[-1].state:
                changes.append(StateChange(round(at, 9), state()))
        if allow(t):
            answers.append((t + RTT_S, t, script_fails(n)))
        else:
            rejected += 1
        if state() != changes[-1].state:
            changes.append(StateChange(round(t, 9), state()))
        n += 1
    return changes, rejected


def oracle_sequence(volume: float = 20, share: float = 0.5, sleep_s: float = 5.0) -> tuple[list[StateChange], int]:
    h = Hystrix(volume, share, sleep_s)
    return _drive(h.allow, h.answer, lambda: h.state)


def engine_sequence(params: Params | None = None) -> tuple[list[StateChange], int]:
    """The engine's classic breaker (one client) on the script, with ``params``' volume, share and sleep."""
    params = params or Params()
    world = new_world(params, 0)
    set_parameters(world, params)
    set_world(world, breaker="classic")
    b, gen = world.breaker, world.gen
    rejects, heard = from_python(engine_breaker.rejects), from_python(engine_breaker.heard)
    return _drive(
        lambda t: not rejects(b, gen, 0, t),
        lambda at, sent, failed: heard(b, 0, at, at - sent, A_ERROR if failed else A_OK),
        lambda: STATES[int(b.state[0])],
    )

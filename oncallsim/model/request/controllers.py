"""Plug-in overload controllers on the request engine: Python code called at the engine's control ticks.

A controller is what a real overload controller is: a loop that every so often (its *tick*: a fixed period of
simulated time from 100 ms to 1 s, declared by the controller) reads what a server can read of itself and sets
what a server, or its clients, may set. It is never called per request: between two ticks the compiled loop runs
the requests on its own, with the controller's last settings (``limiter.controller_rejects``, ``throttled``).

- It reads (``Signals``, one line per instance slot, ``serving`` of them in use): in-flight (being served or
  waiting at the instance), the waiting alone, the CPU (the instance's EMA, ‰), and over the tick just ended its
  answers, their mean response time, their latency percentiles (bins of 10 %), their mean wait in the queue, its
  errors (failed or too late) and its own rejections; the age of the oldest request waiting (the queue delay a
  server reads at its queue's head); the clients' timeout.
- It sets (``Knobs``): each instance's concurrency limit (an arrival is rejected with 429 while in-flight is at the
  limit; ∞ none), each instance's shedding share (that share of its arrivals rejected with 429 at random), and the
  clients' throttle (that share of requests dropped by the client before sending: counted as throttled).

A run is the same, bit for bit, for the same scenario, seed, actions and controller: the ticks fall at fixed times
of the run's clock (n × tick from its start), the controller sees only the world, and its rejections draw from the
run's own generator. Without a controller the minute runs in one piece, as before (no tick, no cost).

Two controllers ship, written from their published descriptions (beside Kratos's BBR, the compiled ``limiter``):

- ``Gradient2`` (choice ``gradient2``): Netflix's concurrency-limits ``Gradient2Limit`` — a concurrency limit per
  instance moved by the gradient long RTT / short RTT, clamped to [0.5, 1], plus a queue allowance, smoothed.
- ``PidShedder`` (choice ``pid-shedder``): a load shedder whose rejection share is the output of a PID controller
  on the queueing delay, as Uber's Cinnamon describes its rejector.

The run's controller is the ``controller`` setting (a choice, validated as every control is); a user's controller
is attached through the Python API (``Simulation(..., controller="module:attr")``, or an object): its setting then
reads ``custom``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from oncallsim.model.errors import InvalidInput
from oncallsim.model.request.limiter import (
    CONTROLLERS,
    HIST_BASE_S,
    HIST_BINS,
    HIST_GROWTH,
    I_CONTROLLER,
    O_ANSWERS,
    O_ERRORS,
    O_REJECTED,
    O_RT_SUM,
    O_WAIT_SUM,
    R_THROTTLE,
)
from oncallsim.model.request.queues import Q_HEAD, Q_LEN

__all__ = [
    "BUILT_IN",
    "MAX_TICK_S",
    "MIN_TICK_S",
    "Controller",
    "ControllerRun",
    "Gradient2",
    "Knobs",
    "PidShedder",
    "Signals",
    "check_controller",
]

MIN_TICK_S = 0.1
MAX_TICK_S = 1.0
_F = npt.NDArray[np.float64]
# the upper edge of each latency bin (s): bin 0 up to 1 ms, bin b up to 1 ms × 1.1^b (limiter.observed)
_BIN_TOP = HIST_BASE_S * HIST_GROWTH ** np.arange(HIST_BINS, dtype=np.float64)


@runtime_checkable
class Controller(Protocol):
    """What the engine calls: ``tick_s`` (seconds of simulated time between calls, from 0.1 to 1) and
    ``control(signals, knobs)`` at each tick. Its state is its own (a run's fork deep-copies it)."""

    tick_s: float

    def control(self, signals: Signals, knobs: Knobs) -> None: ...


@dataclass(frozen=True)
class Signals:
    """What a controller reads at a tick, per instance slot (arrays of the fleet's slots; the first ``serving``
    serve). Means are NaN for an instance that answered nothing in the tick."""

    time_s: float  # the tick's time on the run's clock (s from its start)
    tick_s: float
    serving: int
    workers_per_instance: int
    timeout_s: float  # the clients' timeout
    in_flight: npt.NDArray[np.int64]  # served now or waiting at the instance
    queue: npt.NDArray[np.int64]  # waiting at the instance
    cpu_permille: _F  # the instance's CPU EMA (‰), as Kratos's limiter reads it
    answers: _F  # answered in the tick (any outcome)
    errors: _F  # … of them failed: an error, or past the client's timeout
    rejected: _F  # arrivals the controller's limit or shedding rejected in the tick
    rtt_mean_s: _F  # the answers' mean response time
    queue_delay_s: _F  # their mean wait in the queue before a worker took them
    oldest_wait_s: _F  # the age of the oldest request waiting now (0 when none)
    hist: npt.NDArray[np.int64] = field(repr=False)  # the answers' response times, in bins of 10 %

    def latency_s(self, q: float) -> _F:
        """The ``q`` quantile of each instance's response times over the tick (the upper edge of its 10 % bin;
        NaN with no answer)."""
        if not 0.0 < q <= 1.0:
            raise InvalidInput("q", f"must be a quantile above 0 and at most 1, got {q!r}")
        total = self.hist.sum(axis=1)
        cum = np.cumsum(self.hist, axis=1)
        b = (cum < q * total[:, None]).sum(axis=1)
        out: _F = _BIN_TOP[np.minimum(b, HIST_BINS - 1)]
        return np.where(total > 0, out, np.nan)


class Knobs:
    """What a controller may set: ``limit`` (per instance slot, the concurrency limit, ``np.inf`` none), ``shed``
    (per instance slot, the share of arrivals rejected, 0 to 1) — both arrays written in place — and ``throttle``
    (the clients' share of requests dropped before sending, 0 to 1). Checked after each tick: a value out of
    range stops the run with ``InvalidInput("controller", …)``, never clamped."""

    def __init__(self, limiter: Any) -> None:
        self._limiter = limiter
        self.limit: _F = limiter.ctl_limit
        self.shed: _F = limiter.ctl_shed

    @property
    def throttle(self) -> float:
        return float(self._limiter.reals[R_THROTTLE])

    @throttle.setter
    def throttle(self, share: float) -> None:
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0.0 <= share <= 1.0:
            raise InvalidInput("controller", f"set a throttle of {share!r}; a throttle is a share from 0 to 1")
        self._limiter.reals[R_THROTTLE] = float(share)

    def check(self) -> None:
        """Refuse what the controller left out of range (NaN included)."""
        if not (self.limit >= 0.0).all():  # NaN fails the comparison too
            raise InvalidInput("controller", "set a concurrency limit below 0 or NaN; a limit is from 0 (∞: none)")
        if not ((self.shed >= 0.0) & (self.shed <= 1.0)).all():
            raise InvalidInput("controller", "set a shedding share outside 0 to 1 (or NaN)")

    def clear(self) -> None:
        """No limit, no shedding, no throttle (a controller switched off)."""
        self.limit[:] = np.inf
        self.shed[:] = 0.0
        self._limiter.reals[R_THROTTLE] = 0.0


def check_controller(controller: Any) -> None:
    """Refuse an object that is not a controller, or whose tick is out of range, in one line naming the field."""
    if not isinstance(controller, Controller):
        raise InvalidInput(
            "controller",
            f"{type(controller).__name__} is not a controller: it needs a tick_s and a control(signals, knobs) method",
        )
    tick = controller.tick_s
    if isinstance(tick, bool) or not isinstance(tick, (int, float)) or not MIN_TICK_S <= tick <= MAX_TICK_S:
        raise InvalidInput(
            "controller", f"tick_s must be from {MIN_TICK_S:g} to {MAX_TICK_S:g} s of simulated time, got {tick!r}"
        )


def signals_of(world: Any, time_s: float, tick_s: float, serving: int, wpi: int, timeout_s: float) -> Signals:
    """The world's signals at a tick (its arrays copied), and the tick's counts zeroed for the next one."""
    lim = world.limiter
    obs = lim.ctl_obs.copy()
    lim.ctl_obs[:] = 0.0
    hist = lim.ctl_hist.copy()
    lim.ctl_hist[:] = 0
    queues = world.queues
    slots = len(lim.ctl_limit)
    half = queues.qs.shape[1] // 2  # each instance's sheddable line (queues.py)
    critical = queues.qs[Q_LEN, :slots]
    sheddable = queues.qs[Q_LEN, half : half + slots]
    queue = (critical + sheddable).astype(np.int64)
    oldest = np.zeros(slots)
    if queue.any():  # the oldest waiting request's age: each line's head is its oldest
        for line, lengths in ((0, critical), (half, sheddable)):
            waiting = np.flatnonzero(lengths)
            if len(waiting):
                ages = time_s - queues.s_arrival[queues.qs[Q_HEAD, line + waiting]]
                oldest[waiting] = np.maximum(oldest[waiting], ages)
    answers = obs[O_ANSWERS]
    answered = answers > 0
    rtt = np.divide(obs[O_RT_SUM], answers, out=np.full(slots, np.nan), where=answered)
    wait = np.divide(obs[O_WAIT_SUM], answers, out=np.full(slots, np.nan), where=answered)
    return Signals(
        time_s=time_s,
        tick_s=tick_s,
        serving=serving,
        workers_per_instance=wpi,
        timeout_s=timeout_s,
        in_flight=world.workers.inst_busy[:slots] + queue,
        queue=queue,
        cpu_permille=world.cpu.ema[:slots].copy(),
        answers=answers,
        errors=obs[O_ERRORS],
        rejected=obs[O_REJECTED],
        rtt_mean_s=rtt,
        queue_delay_s=wait,
        oldest_wait_s=oldest,
        hist=hist,
    )


class ControllerRun:
    """A run's controller where it stands: the controller (None: none), which one the world's setting names, the
    user's controller attached (if any, to come back to), and the next tick's number (tick n at n × tick_s)."""

    def __init__(self, custom: Controller | None = None) -> None:
        self.custom = custom
        self.name = "off"
        self.controller: Controller | None = None
        self.next_tick = 1

    def sync(self, world: Any, params: Any, minute: int) -> None:
        """Follow the world's ``controller`` setting at the start of ``minute``: a new controller when it changed
        (its state starts afresh, its first tick the first multiple of its tick after now), the knobs cleared when
        switched off."""
        name = CONTROLLERS[int(world.limiter.ints[I_CONTROLLER])]
        if name == self.name:
            return
        if name == "off":
            Knobs(world.limiter).clear()
            self.controller = None
        elif name == "custom":
            if self.custom is None:
                raise InvalidInput(
                    "controller", "custom is a controller attached through the Python API (Simulation(controller=…))"
                )
            self.controller = self.custom
        else:
            self.controller = BUILT_IN[name](params)
        if self.controller is not None:
            check_controller(self.controller)
            self.next_tick = math.floor(60.0 * minute / float(self.controller.tick_s)) + 1
        self.name = name

    def minute(self, world: Any, minute: int, serving: int, wpi: int, timeout_s: float, segment: Any) -> None:
        """The minute's events in segments, the controller called at each tick inside it: ``segment(until)`` runs
        the events before ``until``; the caller opens and closes the minute."""
        controller = self.controller
        assert controller is not None
        tick = float(controller.tick_s)
        t1 = 60.0 * minute + 60.0
        knobs = Knobs(world.limiter)
        while self.next_tick * tick < t1:
            now = self.next_tick * tick
            segment(now)
            controller.control(signals_of(world, now, tick, serving, wpi, timeout_s), knobs)
            knobs.check()
            self.next_tick += 1
        segment(t1)


class Gradient2:
    """Netflix's Gradient2 concurrency limit (concurrency-limits, ``Gradient2Limit``), per instance.

    Each tick (Netflix's ``WindowedLimit``: one update per window of samples, here the tick, with the window's
    average RTT, ignored below ``min_samples`` answers) for each instance with enough answers::

        short = the tick's mean RTT                      (a single measurement)
        long  = EMA of the ticks' RTTs, factor 2 / (long_window + 1), a plain mean over the first 10
        if long / short > 2: long ← 0.9 · long           (recovering after a long overload)
        if in_flight < limit / 2: the limit stays        (not limited by the limit: the app is)
        gradient = clamp(long / short, 0.5, 1)
        new   = limit · gradient + queue_size
        limit ← clamp(limit · (1 − smoothing) + new · smoothing, min_limit, max_limit)

    The instance rejects an arrival while its in-flight is at int(limit). Netflix's defaults are for servers of
    hundreds of threads (initial 20, min 20, max 200, queue size 4, smoothing 0.2, long window 600); an instance
    here has ``workers_per_instance`` workers, so the shipped defaults start at and never go below those workers
    (``min_limit``), up to 20 × them, with Netflix's queue size, smoothing and windows."""

    def __init__(
        self,
        workers: int = 8,
        *,
        tick_s: float = 1.0,
        initial_limit: float | None = None,
        min_limit: float | None = None,
        max_limit: float | None = None,
        queue_size: float = 4.0,
        smoothing: float = 0.2,
        long_window: int = 600,
        warmup: int = 10,
        min_samples: int = 10,
    ) -> None:
        self.tick_s = tick_s
        self.min_limit = float(workers if min_limit is None else min_limit)
        self.max_limit = float(20 * workers if max_limit is None else max_limit)
        self.initial = float(self.min_limit if initial_limit is None else initial_limit)
        self.queue_size = queue_size
        self.smoothing = smoothing
        self.factor = 2.0 / (long_window + 1)
        self.warmup = warmup
        self.min_samples = min_samples
        self.limit: _F = np.zeros(0)
        self.long: _F = np.zeros(0)
        self.count: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self.sum: _F = np.zeros(0)

    @classmethod
    def from_params(cls, params: Any) -> Gradient2:
        """The shipped ``gradient2``: its limits in the run's workers per instance."""
        return cls(int(params.workers_per_instance))

    def _sized(self, slots: int) -> None:
        if len(self.limit) != slots:
            self.limit = np.full(slots, self.initial)
            self.long = np.zeros(slots)
            self.count = np.zeros(slots, dtype=np.int64)
            self.sum = np.zeros(slots)

    def update(self, i: int, rtt: float, in_flight: float) -> float:
        """One instance's window: Gradient2Limit's update with the window's RTT and in-flight; returns the limit."""
        if self.count[i] < self.warmup:
            self.count[i] += 1
            self.sum[i] += rtt
            self.long[i] = self.sum[i] / self.count[i]
        else:
            self.long[i] = self.long[i] * (1.0 - self.factor) + rtt * self.factor
        short = rtt
        if self.long[i] / short > 2.0:
            self.long[i] *= 0.9
        est = self.limit[i]
        if in_flight < est / 2.0:
            return float(est)
        gradient = max(0.5, min(1.0, self.long[i] / short))
        new = est * gradient + self.queue_size
        new = est * (1.0 - self.smoothing) + new * self.smoothing
        self.limit[i] = max(self.min_limit, min(self.max_limit, new))
        return float(self.limit[i])

    def control(self, signals: Signals, knobs: Knobs) -> None:
        self._sized(len(signals.answers))
        for i in range(signals.serving):
            if signals.answers[i] >= self.min_samples and signals.rtt_mean_s[i] > 0.0:
                self.update(i, float(signals.rtt_mean_s[i]), float(signals.in_flight[i]))
        knobs.limit[: signals.serving] = np.floor(self.limit[: signals.serving])


class PidShedder:
    """A load shedder whose share of rejected arrivals is a PID controller's output on the queueing delay, as Uber's
    Cinnamon describes its rejector (J. H. Thomsen et al., "PID Controller for Cinnamon", Uber Engineering blog,
    2023, https://www.uber.com/blog/pid-controller-for-cinnamon/; and "Cinnamon: Using Century Old Tech to Build a
    Mean Load Shedder"): the share is set every tick, the controller's state carried from tick to tick, so the
    share settles where the queue holds its target instead of oscillating.

    Per instance, each tick of ``dt`` seconds, the error is the queue delay over its target, relative to the target
    (so the gains need no unit)::

        delay = max(the oldest waiting request's age, the tick's answers' mean wait)
        e     = (delay − target) / target                target = target_share × the clients' timeout
        I     ← I + e · dt        (only while the share is not held at 0 or at max_shed by the clamp: anti-windup)
        D     = (e − e_before) / dt
        shed  = clamp(kp · e + ki · I + kd · D, 0, max_shed)

    Our target function is the queue delay against a setpoint; Cinnamon's own is built from its queue and its
    inflight limit (the blog's "target function"), the idea — a PID loop turning a queueing signal into a stable
    rejection ratio, with no per-service tuning — is the same."""

    def __init__(
        self,
        *,
        tick_s: float = 0.25,
        target_share: float = 0.05,
        kp: float = 0.05,
        ki: float = 0.2,
        kd: float = 0.0,
        max_shed: float = 0.95,
    ) -> None:
        self.tick_s = tick_s
        self.target_share = target_share
        self.kp, self.ki, self.kd = kp, ki, kd
        self.max_shed = max_shed
        self.integral: _F = np.zeros(0)
        self.error: _F = np.zeros(0)
        self.shed: _F = np.zeros(0)

    @classmethod
    def from_params(cls, params: Any) -> PidShedder:
        """The shipped ``pid-shedder``: its target is relative to the clients' timeout, read at each tick."""
        return cls()

    def step(self, delay: _F, target: float, dt: float) -> _F:
        """One PID step of the first ``len(delay)`` instances on their queue delays; returns their shedding shares."""
        n = len(delay)
        e = (delay - target) / target
        d = (e - self.error[:n]) / dt
        integral = self.integral[:n] + e * dt
        out = self.kp * e + self.ki * integral + self.kd * d
        free = (out >= 0.0) & (out <= self.max_shed)  # the integral moves only while the output is not clamped
        self.integral[:n] = np.where(free, integral, self.integral[:n])
        out = np.where(free, out, self.kp * e + self.ki * self.integral[:n] + self.kd * d)
        self.error[:n] = e
        self.shed[:n] = np.minimum(self.max_shed, np.maximum(0.0, out))
        return self.shed[:n]

    def control(self, signals: Signals, knobs: Knobs) -> None:
        slots = len(signals.answers)
        if len(self.shed) != slots:
            self.integral = np.zeros(slots)
            self.error = np.zeros(slots)
            self.shed = np.zeros(slots)
        n = signals.serving
        wait = np.nan_to_num(signals.queue_delay_s[:n], nan=0.0)
        delay = np.maximum(signals.oldest_wait_s[:n], wait)
        knobs.shed[:n] = self.step(delay, self.target_share * signals.timeout_s, signals.tick_s)
        knobs.shed[n:] = 0.0


# the shipped controllers by their setting's name: each makes a fresh controller for a run's parameters
BUILT_IN: dict[str, Any] = {"gradient2": Gradient2.from_params, "pid-shedder": PidShedder.from_params}

"""The server side's adaptive concurrency limit: Kratos's BBR-like limiter, per instance (reference §3.1,
aegis / Kratos v2 ``ratelimit/bbr``).

- CPU: the EMA of the instance's sampled CPU (``cpu.py``: its workers' CPU time, not their waits on the
  database, so a database-bound instance does not trip it; cpu = 0.95·cpu + 0.05·reading every 500 ms).
- Window: 100 buckets of 100 ms; aegis's reduce reads the 99 before the current one (model version 3; versions 1
  and 2 read 100). maxPass = the most completions in a bucket (≥ 1); minRT = the least average time of a bucket's
  requests, ms rounded up (≥ 1); the in-flight cap is floor(maxPass × minRT × 10 / 1000): peak throughput × least
  latency, Little's law's bandwidth-delay product.
- A request's time, as aegis's middleware times its handler: since model version 3 from its worker's start to its
  answer. A Go server has no queue before its handlers — every admitted request is a goroutine in its handler at
  once, sharing the cores, so its time stretches with the load in proportion to its own work; the engine's
  instance is a pool of workers behind a FIFO queue. Timed from its admission (versions 1 and 2), a request's
  time is mostly the queue's wait once a queue stands, minRT becomes that wait and maxPass × minRT (maxPass the
  window's peak, above the mean) covers the standing queue: after a sudden step of load, whose queue grows past
  the timeout while the CPU EMA climbs to 800 ‰, the limiter kept that queue and goodput stayed at 0 while the
  overload lasted (docs/validation.md: the sudden step, against aegis simulated apart on both servers).
- A request arriving at the instance is rejected with 429 at once when the CPU EMA is ≥ 800 ‰ and in-flight
  (being served or waiting at the instance) is above 1 and above the cap; after the CPU falls below, the same
  in-flight test holds for 1 s counted from the episode's first drop (a cool-down).
- An empty window (no completion in the last 10 s): version 1 never dropped; aegis's maxPass is then 1 and its
  minRT, the float maximum turned into an integer, wraps below zero and is taken as 1, so the cap is
  floor(1 × 1 × 10 / 1000) = 0 and it drops whenever more than one request is in flight (version 2).

The limiter the article contrasts it with, ``token-bucket``: each instance admits ``bucket_rate_per_s`` requests
a second with bursts of ``bucket_burst`` (Go's ``x/time/rate``, as a service's QPS quota was set by hand: the
bucket starts full, refills continuously, a request takes one token or is rejected with 429 at once). Its rate is
right for one size of fleet and one speed of its database, and wrong after either changes.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from oncallsim.model.control_spec import REQUEST_ONLY, ControlSpec
from oncallsim.model.jit import by_reference
from oncallsim.model.kernel import step
from oncallsim.model.request.generator import uniform
from oncallsim.model.request.queues import waiting
from oncallsim.model.request.windows import ring_bucket

__all__ = ["BUCKET_S", "bucket_empty", "cap", "completed", "controller_rejects", "limited", "observed", "throttled"]

LIMITER_BUCKETS = 100  # the window: 100 buckets of 100 ms
# ints[...]: the limiter (``LIMITERS``' index); 1 while an instance limited in the last minute; the model
# revision's rules (settings.set_revision); the plug-in controller (``CONTROLLERS``' index, 0 none: controllers.py)
I_LIMITER, I_LIMITING, I_REVISION, I_CONTROLLER = range(4)
LIMITERS = ("off", "bbr", "token-bucket")
OFF, BBR, TOKEN_BUCKET = range(3)
# reals[...]: the token bucket's rate (per s) and burst (tokens); the controller's client throttle (a share)
R_BUCKET_RATE, R_BUCKET_BURST, R_THROTTLE = range(3)
# A plug-in controller (controllers.py): none, the two shipped (Netflix's Gradient2 limit, a PID shedder on queue
# delay as Uber's Cinnamon describes), or a user's attached through the Python API ("custom": never chosen by name)
CONTROLLERS = ("off", "gradient2", "pid-shedder", "custom")
# ctl_obs[line, instance]: what the controller reads of each instance since its last tick (zeroed at each tick)
O_ANSWERS, O_RT_SUM, O_WAIT_SUM, O_ERRORS, O_REJECTED = range(5)
OBS_LINES = 5
# ctl_hist[instance, bin]: the answers' response times since the last tick, bins growing by 10 % from 1 ms
HIST_BASE_S = 1e-3
HIST_GROWTH = 1.1
HIST_BINS = 128

CONTROLS = (
    ControlSpec(
        "limiter",
        "choice",
        "Concurrency limiter",
        "bbr: each instance rejects with 429 at once the requests beyond its measured capacity (peak "
        "throughput × least latency) while its CPU stays above 80 % (Kratos's BBR limiter); token-bucket: each "
        "instance admits its rate of requests a second, bursts up to its size, whatever its state (a "
        "fixed quota set by hand); off: none.",
        "off",
        choices=LIMITERS,
        engines=REQUEST_ONLY,
        section="overload",
        piece="limiter",
        slot=I_LIMITER,
        moves={"": "set the concurrency limiter to %(value)s"},
        in_force={"off": "", "": "the %(value)s limiter"},
    ),
    ControlSpec(
        "controller",
        "choice",
        "Overload controller",
        "A controller run at fixed ticks of simulated time, reading each instance's in-flight, latency, CPU, errors "
        "and queue delay and setting its concurrency limit, shedding share and the clients' throttle. gradient2: "
        "a concurrency limit from the ratio of the long-term to the recent latency (Netflix's Gradient2); "
        "pid-shedder: a share of requests rejected, set by a PID controller on the queueing delay (as Uber's "
        "Cinnamon describes); custom: one attached through the Python API; off: none.",
        "off",
        choices=CONTROLLERS,
        unchosen=("custom",),
        engines=REQUEST_ONLY,
        section="overload",
        piece="limiter",
        slot=I_CONTROLLER,
        moves={"": "set the overload controller to %(value)s"},
        in_force={"off": "", "": "the %(value)s controller"},
    ),
    ControlSpec(
        "bucket_rate_per_s",
        "int",
        "Token bucket rate",
        "The token bucket's rate: the requests each instance admits a second.",
        100,
        1,
        100_000,
        "req/s",
        step=5,
        engines=REQUEST_ONLY,
        section="overload",
        piece="limiter",
        slot=R_BUCKET_RATE,
        real=True,
        moves={"": "set the token bucket's rate to %(value)s"},
        only_with="limiter",
    ),
    ControlSpec(
        "bucket_burst",
        "int",
        "Token bucket burst",
        "The token bucket's size: the most requests an instance admits at once after a quiet spell.",
        100,
        1,
        100_000,
        "requests",
        step=5,
        engines=REQUEST_ONLY,
        section="overload",
        piece="limiter",
        slot=R_BUCKET_BURST,
        real=True,
        moves={"": "set the token bucket's burst to %(value)s"},
        only_with="limiter",
    ),
)


@by_reference
class Limiter(NamedTuple):
    """Each instance's window of completions and its drop episode, and which limiter is on."""

    ints: npt.NDArray[np.int64]
    reals: npt.NDArray[np.float64]
    drop_at: npt.NDArray[np.float64]  # per instance: the first drop of this episode (s), −1 none
    lim_pass: npt.NDArray[np.int64]  # lim_pass[instance, bucket]: completions in that 100 ms bucket
    lim_rt: npt.NDArray[np.float64]  # … their response times summed (ms, each rounded up)
    lim_stamp: npt.NDArray[np.int64]  # … the bucket's number (time / 100 ms), to know a stale one
    tokens: npt.NDArray[np.float64]  # per instance: the token bucket's tokens
    tokens_at: npt.NDArray[np.float64]  # … when they were counted (s); −∞ never: the bucket is full
    ctl_limit: npt.NDArray[np.float64]  # per instance: the controller's concurrency limit (∞ none)
    ctl_shed: npt.NDArray[np.float64]  # … the share of its arrivals the controller rejects
    ctl_obs: npt.NDArray[np.float64]  # ctl_obs[O_…, instance]: the instance since the controller's last tick
    ctl_hist: npt.NDArray[np.int64]  # ctl_hist[instance, bin]: its answers' response times since then


def new_limiter(instances: int) -> Limiter:
    """Off, an empty window, full buckets."""
    reals = np.zeros(3)
    reals[R_BUCKET_RATE] = 100.0
    reals[R_BUCKET_BURST] = 100.0
    return Limiter(
        ints=np.zeros(4, dtype=np.int64),
        reals=reals,
        drop_at=np.full(instances, -1.0),
        lim_pass=np.zeros((instances, LIMITER_BUCKETS), dtype=np.int64),
        lim_rt=np.zeros((instances, LIMITER_BUCKETS)),
        lim_stamp=np.full((instances, LIMITER_BUCKETS), -1, dtype=np.int64),
        tokens=np.zeros(instances),
        tokens_at=np.full(instances, -np.inf),
        ctl_limit=np.full(instances, np.inf),
        ctl_shed=np.zeros(instances),
        ctl_obs=np.zeros((OBS_LINES, instances)),
        ctl_hist=np.zeros((instances, HIST_BINS), dtype=np.int64),
    )


BUCKET_S = 0.1
THRESHOLD = 800.0  # ‰
COOL_DOWN_S = 1.0


@step
def completed(limiter: Any, i: int, x: float, response: float, service: float) -> None:
    """A completion at instance ``i`` (any outcome) in the window's current bucket: its time from its admission
    (``response``) under model versions 1 and 2, from its worker's start (``service``) since version 3."""
    rt = service if limiter.ints[I_REVISION] >= 3 else response
    b, stale = ring_bucket(limiter.lim_stamp[i], int(x / BUCKET_S))
    if stale:
        limiter.lim_pass[i, b] = 0
        limiter.lim_rt[i, b] = 0.0
    limiter.lim_pass[i, b] += 1
    ms = math.ceil(rt * 1000.0)
    if ms > 0:
        limiter.lim_rt[i, b] += ms


@step
def cap(limiter: Any, i: int, x: float) -> int:
    """floor(maxPass × minRT × buckets per second / 1000) over the window before the current bucket (its 99 buckets
    since version 3, as aegis's reduce reads them; 100 before). When the window holds no completion: 0 (aegis: drop
    above one in flight), −1 under version 1 (no drop)."""
    current = int(x / BUCKET_S)
    oldest = current - LIMITER_BUCKETS + (1 if limiter.ints[I_REVISION] >= 3 else 0)
    max_pass = 0
    min_rt = math.inf
    for b in range(LIMITER_BUCKETS):
        number = limiter.lim_stamp[i, b]
        if number < 0 or number >= current or number < oldest:
            continue
        n = limiter.lim_pass[i, b]
        if n > max_pass:
            max_pass = n
        if n > 0:
            avg = math.ceil(limiter.lim_rt[i, b] / n)
            if avg < min_rt:
                min_rt = avg
    if max_pass == 0:
        return -1 if limiter.ints[I_REVISION] < 2 else 0
    if min_rt < 1.0:
        min_rt = 1.0
    return math.floor(max_pass * min_rt * (1.0 / BUCKET_S) / 1000.0)


@step
def bucket_empty(limiter: Any, i: int, x: float) -> bool:
    """Whether instance ``i``'s token bucket has no token for a request arriving at ``x`` (else it takes one)."""
    rate = limiter.reals[R_BUCKET_RATE]
    burst = limiter.reals[R_BUCKET_BURST]
    tokens = limiter.tokens[i] + rate * (x - limiter.tokens_at[i])  # −∞ stamp: +∞ tokens, the bucket full
    if tokens > burst:
        tokens = burst
    limiter.tokens_at[i] = x
    if tokens < 1.0:
        limiter.tokens[i] = tokens
        return True
    limiter.tokens[i] = tokens - 1.0
    return False


@step
def limited(limiter: Any, cpu: Any, workers: Any, queues: Any, i: int, x: float) -> bool:
    """Whether instance ``i`` rejects a request arriving at ``x`` (Kratos's shouldDrop, or the token bucket)."""
    if limiter.ints[I_LIMITER] == TOKEN_BUCKET:
        return bucket_empty(limiter, i, x)
    in_flight = workers.inst_busy[i] + waiting(queues, i)
    if cpu.ema[i] < THRESHOLD:
        if limiter.drop_at[i] < 0.0:
            return False
        if x - limiter.drop_at[i] <= COOL_DOWN_S:
            limit = cap(limiter, i, x)
            return limit >= 0 and in_flight > 1 and in_flight > limit
        limiter.drop_at[i] = -1.0
        return False
    limit = cap(limiter, i, x)
    drop = limit >= 0 and in_flight > 1 and in_flight > limit
    if drop and limiter.drop_at[i] < 0.0:
        limiter.drop_at[i] = x
    return drop


@step
def controller_rejects(limiter: Any, workers: Any, queues: Any, gen: Any, i: int) -> bool:
    """Whether instance ``i`` rejects an arriving request by its controller's settings: its in-flight (served or
    waiting there) at its concurrency limit, or a draw under its shedding share (drawn only when the share is
    above 0, so a controller that sheds nothing leaves the generator's sequence as it was)."""
    in_flight = workers.inst_busy[i] + waiting(queues, i)
    reject = in_flight >= limiter.ctl_limit[i]
    if not reject and limiter.ctl_shed[i] > 0.0:
        reject = uniform(gen) < limiter.ctl_shed[i]
    if reject:
        limiter.ctl_obs[O_REJECTED, i] += 1.0
    return reject


@step
def throttled(limiter: Any, gen: Any) -> bool:
    """Whether a client drops a request before sending it, by the controller's throttle (a share; no draw at 0)."""
    share = limiter.reals[R_THROTTLE]
    return share > 0.0 and uniform(gen) < share


@step
def observed(limiter: Any, i: int, response: float, wait: float, error: bool) -> None:
    """An answer of instance ``i`` as its controller reads it at the next tick: its response time (counted and
    binned), its wait in the queue, whether it failed (an error or past the client's timeout)."""
    limiter.ctl_obs[O_ANSWERS, i] += 1.0
    limiter.ctl_obs[O_RT_SUM, i] += response
    limiter.ctl_obs[O_WAIT_SUM, i] += wait
    if error:
        limiter.ctl_obs[O_ERRORS, i] += 1.0
    b = 0
    if response > HIST_BASE_S:
        b = int(math.log(response / HIST_BASE_S) / math.log(HIST_GROWTH)) + 1
        if b >= HIST_BINS:
            b = HIST_BINS - 1
    limiter.ctl_hist[i, b] += 1

"""The client's breaker: the classic circuit breaker the article's Bilibili had, or Google SRE's adaptive
throttling that replaced it (reference §2; the article: "a breaker that shut everything off or let everything
through"). Each client that balances on its own (any balancer but ``pooled``) keeps its own.

``sre`` — adaptive throttling (the SRE book, ch. 21): over the last 3 s (10 buckets of 300 ms) a client counts its
``requests`` and the ``accepts`` its backends answered; once it has at least ``min`` requests and requests ≥
K·accepts it rejects a new request itself with probability max(0, (requests − K·accepts)/(requests + 1)). Kratos
wrote it three times, told apart by ``throttle_preset``:

========  ==================  =====  ============================================  ============================
preset    source              min    what counts as not accepted                    a request it rejected itself
========  ==================  =====  ============================================  ============================
warden    kratos v1.0.1       100    every error: 500, 429, 503, deadline, refused  not counted (returns first)
          (K 1.5)
aegis     aegis v0.2.0        100    500, 503, 504 (a deadline), refused; a 429     counted, as not accepted
          (K 1/0.6 ≈ 1.67)           is accepted
v3        kratos v3 (K 2:     20     as aegis                                       counted, as not accepted
          ``throttle_k``)
========  ==================  =====  ============================================  ============================

``v3`` is the default: today's Kratos, and what oncallsim's ``client_throttle`` did before this breaker (version 1
counted a 429 as not accepted too; its run files replay with that rule). ``client_throttle`` (true/false) is still
read, as ``breaker`` = ``sre``/``none`` (controls.RENAMED).

``classic`` — the Hystrix-style state machine (Netflix Hystrix's defaults): over the last 10 s (10 buckets of 1 s)
a client counts its requests and those that failed (any error, a timeout or a refused connection); **closed**, it
sends everything, and trips **open** once it has ``breaker_volume`` requests with ``breaker_error_share`` or more of
them failed; open, it rejects every request itself for ``breaker_sleep_s``; then **half-open**, it lets one request
through as a probe and rejects the rest until the probe's answer: a success closes it (its window starts empty), a
failure opens it again. Requests it rejected itself are not counted.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from oncallsim.model.control_spec import REQUEST_ONLY, ControlSpec
from oncallsim.model.jit import by_reference
from oncallsim.model.kernel import step
from oncallsim.model.request.generator import uniform
from oncallsim.model.request.windows import ring_bucket

__all__ = ["BREAKERS", "CONTROLS", "PRESETS", "Breaker", "heard", "new_breaker", "rejects"]

# the choices: "sre" is index 1, which is what version 1's client_throttle stored in the same slot
BREAKERS = ("none", "sre", "classic")
NONE, SRE, CLASSIC = range(len(BREAKERS))
PRESETS = ("warden", "aegis", "v3")
WARDEN, AEGIS, V3 = range(len(PRESETS))
# ints[...]: the breaker; the SRE preset; the model revision's rules (world.set_revision)
I_BREAKER, I_PRESET, I_REVISION = range(3)
# reals[...]: v3's K; the classic breaker's volume, error share and sleep window
R_THROTTLE_K, R_VOLUME, R_ERROR_SHARE, R_SLEEP = range(4)
# what a client heard of an attempt: the kinds of balancers.A_… (repeated here: balancers imports this module)
_A_OK, _A_ERROR, _A_LIMITED, _A_DROPPED, _A_TIMEOUT, _A_REFUSED = range(6)
# the classic breaker's states
CLOSED, OPEN, HALF_OPEN = range(3)

SRE_BUCKETS = 10
SRE_BUCKET_S = 0.3
CLASSIC_BUCKETS = 10
CLASSIC_BUCKET_S = 1.0
# (K, the minimum of requests) of the presets; v3's K is the parameter ``throttle_k``
_WARDEN_K, _AEGIS_K = 1.5, 1.0 / 0.6
_WARDEN_MIN, _AEGIS_MIN, _V3_MIN = 100.0, 100.0, 20.0

CONTROLS = (
    ControlSpec(
        "breaker",
        "choice",
        "Client breaker",
        "How each client protects a failing backend from itself: none; sre (it rejects requests itself with "
        "probability max(0, (requests − K·accepts)/(requests + 1)) over the last 3 s, Google SRE's adaptive "
        "throttling); classic (it stops sending for ⟪breaker_sleep_s⟫ s once ⟪breaker_error_share%⟫ of its "
        "requests of the last 10 s failed, then lets one probe through).",
        "none",
        choices=BREAKERS,
        engines=REQUEST_ONLY,
        section="overload",
        piece="breaker",
        slot=I_BREAKER,
        moves={"": "switched the clients' breaker to %(value)s"},
        in_force={"none": "", "sre": "adaptive throttling at the clients", "classic": "classic breakers"},
    ),
    ControlSpec(
        "throttle_preset",
        "choice",
        "Throttling preset",
        "Which of Kratos's adaptive throttles the sre breaker is: warden (K 1.5, from 100 requests, every error "
        "counts), aegis (K 1.67, from 100, a 429 counts as accepted) or v3 (K ⟪throttle_k⟫, from 20, as aegis).",
        "v3",
        choices=PRESETS,
        engines=REQUEST_ONLY,
        section="overload",
        piece="breaker",
        slot=I_PRESET,
        moves={"": "set the throttling preset to %(value)s"},
        in_force={"v3": "", "": "%(value)s's throttling"},
        only_with="breaker",
        presets={
            "warden": {
                "source": "kratos v1.0.1 (warden)",
                "K": f"{_WARDEN_K:g}",
                "minimum requests": f"{_WARDEN_MIN:g}",
                "what counts as a failure": "every error: 500, 429, 503, a deadline, a refused connection",
                "a request it rejected itself": "not counted",
            },
            "aegis": {
                "source": "aegis v0.2.0",
                "K": f"1/0.6 ≈ {_AEGIS_K:.3g}",
                "minimum requests": f"{_AEGIS_MIN:g}",
                "what counts as a failure": "500, 503, a deadline, a refused connection (a 429 is accepted)",
                "a request it rejected itself": "counted as not accepted",
            },
            "v3": {
                "source": "kratos v3",
                "K": "⟪throttle_k⟫",
                "minimum requests": f"{_V3_MIN:g}",
                "what counts as a failure": "500, 503, a deadline, a refused connection (a 429 is accepted)",
                "a request it rejected itself": "counted as not accepted",
            },
        },
    ),
)


@by_reference
class Breaker(NamedTuple):
    """Each client's windows and its classic breaker's state, and the breaker's settings."""

    ints: npt.NDArray[np.int64]
    reals: npt.NDArray[np.float64]
    thr: npt.NDArray[np.float64]  # thr[0 requests | 1 accepts, client, bucket]: the sre window
    thr_stamp: npt.NDArray[np.int64]  # thr_stamp[client, bucket]: the bucket's number (time / 300 ms)
    cls: npt.NDArray[np.float64]  # cls[0 requests | 1 failures, client, bucket]: the classic window
    cls_stamp: npt.NDArray[np.int64]  # cls_stamp[client, bucket]: the bucket's number (time / 1 s)
    state: npt.NDArray[np.int64]  # per client: CLOSED, OPEN, HALF_OPEN
    until: npt.NDArray[np.float64]  # per client: when an open breaker turns half-open (s)
    probe: npt.NDArray[np.float64]  # per client: when the half-open probe was sent (s); ∞ none yet


def new_breaker(clients: int) -> Breaker:
    """None, empty windows, every classic breaker closed, for each of ``clients``."""
    ints = np.zeros(3, dtype=np.int64)
    ints[I_PRESET] = V3
    return Breaker(
        ints=ints,
        reals=np.zeros(4),
        thr=np.zeros((2, clients, SRE_BUCKETS)),
        thr_stamp=np.full((clients, SRE_BUCKETS), -1, dtype=np.int64),
        cls=np.zeros((2, clients, CLASSIC_BUCKETS)),
        cls_stamp=np.full((clients, CLASSIC_BUCKETS), -1, dtype=np.int64),
        state=np.zeros(clients, dtype=np.int64),
        until=np.zeros(clients),
        probe=np.full(clients, np.inf),
    )


@step
def _sre_count(breaker: Any, c: int, x: float, accepted: bool) -> None:
    b, stale = ring_bucket(breaker.thr_stamp[c], int(x / SRE_BUCKET_S))
    if stale:
        breaker.thr[0, c, b] = 0.0
        breaker.thr[1, c, b] = 0.0
    breaker.thr[0, c, b] += 1.0
    if accepted:
        breaker.thr[1, c, b] += 1.0


@step
def reject_probability(breaker: Any, c: int, x: float) -> float:
    """The sre breaker's max(0, (requests − K·accepts)/(requests + 1)) over its window; 0 below its minimum."""
    number = int(x / SRE_BUCKET_S)
    requests = 0.0
    accepts = 0.0
    for b in range(SRE_BUCKETS):
        stamp = breaker.thr_stamp[c, b]
        if stamp > number - SRE_BUCKETS and stamp <= number:
            requests += breaker.thr[0, c, b]
            accepts += breaker.thr[1, c, b]
    preset = breaker.ints[I_PRESET]
    k = breaker.reals[R_THROTTLE_K]
    least = _V3_MIN
    if breaker.ints[I_REVISION] >= 2 and preset == WARDEN:
        k = _WARDEN_K
        least = _WARDEN_MIN
    elif breaker.ints[I_REVISION] >= 2 and preset == AEGIS:
        k = _AEGIS_K
        least = _AEGIS_MIN
    if requests < least or requests < k * accepts:
        return 0.0
    return (requests - k * accepts) / (requests + 1.0)


@step
def _classic_window(breaker: Any, c: int, x: float) -> tuple[float, float]:
    number = int(x / CLASSIC_BUCKET_S)
    requests = 0.0
    failures = 0.0
    for b in range(CLASSIC_BUCKETS):
        stamp = breaker.cls_stamp[c, b]
        if stamp > number - CLASSIC_BUCKETS and stamp <= number:
            requests += breaker.cls[0, c, b]
            failures += breaker.cls[1, c, b]
    return requests, failures


@step
def _classic_heard(breaker: Any, c: int, x: float, rtt: float, failed: bool) -> None:
    state = breaker.state[c]
    if state == HALF_OPEN:
        if x - rtt < breaker.probe[c]:
            return  # an answer to a request sent before the probe: only the probe decides
        if failed:
            breaker.state[c] = OPEN
            breaker.until[c] = x + breaker.reals[R_SLEEP]
        else:
            breaker.state[c] = CLOSED
            breaker.cls[:, c, :] = 0.0
            breaker.cls_stamp[c, :] = -1
        breaker.probe[c] = np.inf
        return
    if state == OPEN:
        return
    b, stale = ring_bucket(breaker.cls_stamp[c], int(x / CLASSIC_BUCKET_S))
    if stale:
        breaker.cls[0, c, b] = 0.0
        breaker.cls[1, c, b] = 0.0
    breaker.cls[0, c, b] += 1.0
    if failed:
        breaker.cls[1, c, b] += 1.0
        requests, failures = _classic_window(breaker, c, x)
        if requests >= breaker.reals[R_VOLUME] and failures >= breaker.reals[R_ERROR_SHARE] * requests:
            breaker.state[c] = OPEN
            breaker.until[c] = x + breaker.reals[R_SLEEP]


@step
def heard(breaker: Any, c: int, x: float, rtt: float, how: int) -> None:
    """Client ``c`` heard of an attempt at ``x`` (``how``: balancers.A_…; sent ``rtt`` before): its breaker counts
    it."""
    kind = breaker.ints[I_BREAKER]
    if kind == SRE:
        if breaker.ints[I_REVISION] >= 2 and breaker.ints[I_PRESET] != WARDEN:
            accepted = how == _A_OK or how == _A_LIMITED  # aegis, v3: a 429 is no failure
        else:
            accepted = how == _A_OK
        _sre_count(breaker, c, x, accepted)
    elif kind == CLASSIC:
        _classic_heard(breaker, c, x, rtt, how != _A_OK)


@step
def rejects(breaker: Any, gen: Any, c: int, x: float) -> bool:
    """Whether client ``c``'s breaker rejects a request it would send at ``x`` (the client fails it at once)."""
    kind = breaker.ints[I_BREAKER]
    if kind == SRE:
        p = reject_probability(breaker, c, x)
        if p > 0.0 and uniform(gen) < p:
            if breaker.ints[I_REVISION] < 2 or breaker.ints[I_PRESET] != WARDEN:
                _sre_count(breaker, c, x, False)  # aegis, v3: a local reject counts as not accepted
            return True
        return False
    if kind != CLASSIC:
        return False
    state = breaker.state[c]
    if state == CLOSED:
        return False
    if state == OPEN:
        if x < breaker.until[c]:
            return True
        breaker.state[c] = HALF_OPEN
        breaker.probe[c] = np.inf
    if breaker.probe[c] == np.inf:  # half-open: this one is the probe
        breaker.probe[c] = x
        return False
    return True

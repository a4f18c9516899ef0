"""Weighted round robin, static and dynamic, as the article contrasts them with P2C (reference §1.4).

Both are nginx's *smooth* weighted round robin (kratos v1.0.1 ``warden/balancer/wrr``): at each pick every
instance in the client's rotation adds its weight to its current weight, the largest current weight wins (the
first of equals), and the winner's current weight drops by the sum of the weights; over a cycle each instance is
picked in proportion to its weight, spread out rather than in runs.

- ``weighted-round-robin``: the weights are the registry's (each instance's ``weight``, default 10; a scenario
  may give its fleet weights, the article's 3:2:1).
- ``dynamic-wrr``: warden's v2, each client's weights from what it sees of each instance. Every answer adds to a
  rolling window of one second (10 buckets of 100 ms) its latency (in units of 100 µs, as warden records it) and
  whether it failed (gRPC's own failures: the deadline, a refused connection); the answer carries the server's
  CPU (its last 500 ms reading). At most once a second, at an answer, the client scores every instance:
  cs = 1 − errors/requests (≤ 0 → 0.1; ≤ 0.2 with at most 5 requests → 0.2), score = √(cs × 10⁹ / (mean latency ×
  CPU)), and its weight = ⌊score × registry weight⌋; an instance with no answers in the window keeps its last
  score, one never scored gets the mean score; nothing changes while fewer than two are scored. The CPU it reads
  is up to 1.5 s old and every client reads the same: when one instance looks cool all clients send it more at
  once, it heats, they all leave it — the herd the article describes.
"""

from __future__ import annotations

import math
from typing import Any

from oncallsim.model.kernel import inline_step, step

__all__ = ["WINDOW_BUCKETS", "dynamic_answer", "smooth_pick"]

WINDOW_BUCKETS = 10  # a second of answers: 10 buckets of 100 ms
BUCKET_S = 0.1
UPDATE_S = 1.0  # the weights are recomputed at most this often
CPU_DEFAULT = 500.0  # ‰: what a client assumes before a server reports (warden's serverInfo)
# w_win[...]: per client, instance and bucket: answers, failures, latency summed (units of 100 µs)
W_REQ, W_ERR, W_LAT = range(3)


@inline_step
def smooth_pick(views: Any, c: int, n: int, dynamic: bool, weight: Any) -> int:
    """The instance client ``c`` sends to: nginx's smooth weighted round robin over its rotation, with the
    registry's weights, or its own (``dynamic``)."""
    total = 0.0
    best = -1
    for j in range(n):
        i = views.rot[c, j]
        w = views.w_ewt[c, i] if dynamic else weight[i]
        views.w_cw[c, i] += w
        total += w
        if best < 0 or views.w_cw[c, best] < views.w_cw[c, i]:
            best = i
    views.w_cw[c, best] -= total
    return best


@step
def dynamic_answer(views: Any, weight: Any, c: int, i: int, x: float, rtt: float, failed: bool, cpu: float) -> None:
    """Client ``c`` heard of its attempt on instance ``i`` at ``x``: the window counts it, the CPU the server
    reported is kept, and the client's weights are recomputed when a second has passed since the last time."""
    if c >= len(views.w_update):
        return  # a client beyond those the run declared (params.clients) has no window
    number = int(x / BUCKET_S)
    b = number % WINDOW_BUCKETS
    if views.w_stamp[c, i, b] != number:
        views.w_stamp[c, i, b] = number
        views.w_win[W_REQ, c, i, b] = 0.0
        views.w_win[W_ERR, c, i, b] = 0.0
        views.w_win[W_LAT, c, i, b] = 0.0
    views.w_win[W_REQ, c, i, b] += 1.0
    if failed:
        views.w_win[W_ERR, c, i, b] += 1.0
    views.w_win[W_LAT, c, i, b] += math.floor(rtt * 1e4)  # warden: nanoseconds / 1e5
    if cpu > 0.0:
        views.w_cpu[c, i] = cpu
    if x - views.w_update[c] < UPDATE_S:
        return
    views.w_update[c] = x
    _rescore(views, weight, c, number)


@step
def _rescore(views: Any, weight: Any, c: int, number: int) -> None:
    total = 0.0
    count = 0
    n = views.nrot[c]
    for j in range(n):
        i = views.rot[c, j]
        req = 0.0
        err = 0.0
        lat = 0.0
        for b in range(WINDOW_BUCKETS):
            if number - WINDOW_BUCKETS < views.w_stamp[c, i, b] <= number:
                req += views.w_win[W_REQ, c, i, b]
                err += views.w_win[W_ERR, c, i, b]
                lat += views.w_win[W_LAT, c, i, b]
        if req > 0.0 and lat > 0.0:
            cs = 1.0 - err / req
            if cs <= 0.0:
                cs = 0.1
            elif cs <= 0.2 and req <= 5.0:
                cs = 0.2
            views.w_score[c, i] = math.sqrt(cs * 1e9 / ((lat / req) * views.w_cpu[c, i]))
        if views.w_score[c, i] > 0.0:
            total += views.w_score[c, i]
            count += 1
    if count < 2:
        return
    mean = total / count
    for j in range(n):
        i = views.rot[c, j]
        if views.w_score[c, i] <= 0.0:
            views.w_score[c, i] = mean
        views.w_ewt[c, i] = math.floor(views.w_score[c, i] * weight[i])

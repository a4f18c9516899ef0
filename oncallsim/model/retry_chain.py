"""A retrying server as a continuous-time Markov chain (issue 26; docs/cliff.md, "The chain").

The state is (n, o): n requests at the server (waiting in its FIFO queue or in service at one of its c workers),
o calls waiting to retry (the *orbit*). Requests arrive as a Poisson stream of λ per second; a worker serves one
in an exponential time of mean S. A client gives up on an attempt after its timeout T; the server does not know
and serves the abandoned attempt anyway (wasted work), unless ``deadlines`` (deadline propagation) drops it
unserved. A failed attempt is retried, up to N times, after a backoff.

What the chain decides when, and why (each an approximation the validation report measures):

- **An attempt's fate at its arrival.** An attempt that finds n requests ahead waits for k = n − c + 1 service
  completions, each at rate cμ while the queue is not empty (FIFO, nobody overtakes it): its response time is
  W + S with W ~ Erlang(k, cμ), S ~ Exp(μ). It times out with probability p(n) = P(W + S > T) for a fixed
  timeout (exact for FIFO M/M/c), or 1 − E[e^(−(W+S)/T)] for a timeout drawn Exp(1/T) (the textbook CTMC's
  exponential timeout). A doomed attempt still joins the queue: its work is done, for nothing.
- **The orbit.** A doomed attempt's retry enters the orbit at once and leaves it after an exponential delay of
  mean D = T + the mean backoff (the client's timer, then its backoff): a fixed delay made exponential.
- **How many retries.** The chain does not track an attempt's number. Of the attempts that fail when each
  fails with probability p, a share r(p) = (1 − pᴺ)/(1 − pᴺ⁺¹) is not a call's last (N/(N+1) when every attempt
  fails, 1 when almost none does): a doomed attempt is retried with probability r(p(n)), with the retry budget
  b capping the retries at b·λ (the token bucket's long-run rate; its burst left out).
- **Finite sizes.** A queue limit L rejects an attempt that finds L waiting (a failure the client retries); the
  state space stops at a largest n and o (work arriving past them is dropped: choose them past where the chain
  goes).

Large servers: the levels of n and o may grow geometrically (``Grid``). A flow of F requests per second that
moves n up from level x_i does so at rate F/(x_{i+1} − x_i): the chain's mean drift is the model's at every
level, its noise larger where the steps are. With unit steps (``growth=0``) it is the exact chain above, and
joint moves (a retry leaves the orbit and joins the queue in one event) stay joint.

What it computes: the generator (``generator``, a ``scipy.sparse`` CSR matrix), the stationary distribution, the
second eigenvalue (its relaxation time 1/|λ₂| is the mixing time's scale: it grows without bound as the chain
turns bistable), expected hitting times and their variance by sparse solves, and the fluid limit (the mean drift,
integrated: ``fluid``), which the live gauge uses.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field, replace
from typing import Any, Literal, NamedTuple

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.special import gammainc, gammaincc

from oncallsim.model.errors import InvalidInput

__all__ = [
    "NEVER_S",
    "TIMEOUT_SHAPES",
    "Fluid",
    "Grid",
    "RetryServer",
    "Spectrum",
    "doom_probability",
    "fluid",
    "generator",
    "hitting_times",
    "relaxation",
    "retried_share",
    "stationary",
]

TIMEOUT_SHAPES = ("fixed", "exponential")
Vector = npt.NDArray[np.float64]
MAX_STATES = 2_000_000  # a sparse LU of a chain this size takes seconds and a few GB: the map's are ~50,000


@dataclass(frozen=True)
class RetryServer:
    """The chain's parameters: a server of ``workers`` workers and the clients that retry against it."""

    arrivals_per_s: float  # λ: calls per second (first attempts)
    workers: int  # c
    service_s: float  # S: mean service time, exponential (μ = 1/S)
    timeout_s: float  # T
    retries: int = 0  # N: extra attempts per call (0–5)
    backoff_s: float = 0.0  # the mean backoff before a retry (averaged over a call's retries)
    retry_budget: float = 0.0  # b: retries per call the clients' token buckets allow (0: no budget)
    queue_limit: int = 0  # requests a queue may hold (0: no limit)
    deadlines: bool = False  # deadline propagation: an attempt whose client gave up is dropped, not served
    timeout_shape: Literal["fixed", "exponential"] = "fixed"

    def __post_init__(self) -> None:
        _positive("arrivals_per_s", self.arrivals_per_s, allow_zero=True)
        if isinstance(self.workers, bool) or not isinstance(self.workers, int) or not 1 <= self.workers <= 100_000:
            raise InvalidInput("workers", f"must be a whole number from 1 to 100000, got {self.workers!r}")
        _positive("service_s", self.service_s)
        _positive("timeout_s", self.timeout_s)
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) or not 0 <= self.retries <= 5:
            raise InvalidInput("retries", f"must be a whole number from 0 to 5, got {self.retries!r}")
        _positive("backoff_s", self.backoff_s, allow_zero=True)
        _positive("retry_budget", self.retry_budget, allow_zero=True)
        if isinstance(self.queue_limit, bool) or not isinstance(self.queue_limit, int) or self.queue_limit < 0:
            raise InvalidInput("queue_limit", f"must be a whole number from 0 (no limit), got {self.queue_limit!r}")
        if self.timeout_shape not in TIMEOUT_SHAPES:
            raise InvalidInput(
                "timeout_shape", f"must be one of {', '.join(TIMEOUT_SHAPES)}, got {self.timeout_shape!r}"
            )

    @property
    def capacity_per_s(self) -> float:
        """cμ: what the workers complete per second when all are busy."""
        return self.workers / self.service_s

    @property
    def retry_delay_s(self) -> float:
        """D: the mean time from a doomed attempt's send to its retry (the timer, then the backoff)."""
        return self.timeout_s + self.backoff_s

    @property
    def amplification(self) -> float:
        """Attempts per call when every attempt fails: N + 1, or 1 + b with a tighter retry budget."""
        retries = float(self.retries)
        if self.retry_budget > 0:
            retries = min(retries, self.retry_budget)
        return 1.0 + retries

    def with_service(self, service_s: float) -> RetryServer:
        """The same server and clients, another service time (a trigger: a brownout slows every request)."""
        return replace(self, service_s=service_s)


def _positive(name: str, value: Any, allow_zero: bool = False) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0 or (value == 0 and not allow_zero):
        bound = "from 0" if allow_zero else "above 0"
        raise InvalidInput(name, f"must be a finite number {bound}, got {value!r}")


@dataclass(frozen=True)
class Grid:
    """The levels of n and o (requests): from 0 in steps of one request, growing by ``growth`` (a share of the
    level) once that is more than one request, up to at least ``max_queue`` and ``max_orbit``."""

    max_queue: int
    max_orbit: int
    growth: float = 0.0
    queue_levels: Vector = field(init=False, repr=False, compare=False)
    orbit_levels: Vector = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("max_queue", "max_orbit"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidInput(name, f"must be a whole number from 1, got {value!r}")
        if not (isinstance(self.growth, (int, float)) and 0.0 <= self.growth <= 1.0):
            raise InvalidInput("growth", f"must be from 0 (unit steps) to 1, got {self.growth!r}")
        object.__setattr__(self, "queue_levels", _levels(self.max_queue, self.growth))
        object.__setattr__(self, "orbit_levels", _levels(self.max_orbit, self.growth))
        if self.states > MAX_STATES:
            raise InvalidInput(
                "grid", f"has {self.states:,} states, more than {MAX_STATES:,}: raise growth or lower the sizes"
            )

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.queue_levels), len(self.orbit_levels)

    @property
    def states(self) -> int:
        return len(self.queue_levels) * len(self.orbit_levels)

    def index(self, queue: float, orbit: float) -> int:
        """The state nearest to (n, o) requests (the state space's edges for values past them)."""
        i = int(np.argmin(np.abs(self.queue_levels - queue)))
        j = int(np.argmin(np.abs(self.orbit_levels - orbit)))
        return i * len(self.orbit_levels) + j

    def queue_of_states(self) -> Vector:
        """n of every state, in the generator's order."""
        return np.repeat(self.queue_levels, len(self.orbit_levels))

    def orbit_of_states(self) -> Vector:
        return np.tile(self.orbit_levels, len(self.queue_levels))


def _levels(top: int, growth: float) -> Vector:
    levels = [0.0]
    while levels[-1] < top:
        levels.append(float(max(levels[-1] + 1.0, round(levels[-1] * (1.0 + growth)))))
    return np.array(levels)


def doom_probability(server: RetryServer, queue: Vector) -> Vector:
    """p(n): the probability that an attempt which finds n requests at the server (FIFO) times out."""
    c, mu, t = server.workers, 1.0 / server.service_s, server.timeout_s
    n = np.asarray(queue, dtype=np.float64)
    k = np.maximum(0.0, np.floor(n) - c + 1.0)  # completions to wait for before its own service starts
    a = c * mu
    if server.timeout_shape == "exponential":
        theta = 1.0 / t
        return np.asarray(1.0 - (a / (a + theta)) ** k * (mu / (mu + theta)))
    if c == 1:  # W + S ~ Erlang(k + 1, μ)
        return np.asarray(gammaincc(k + 1.0, mu * t))
    out = np.full(n.shape, math.exp(-mu * t))  # a free worker: only the service can outlast the timeout
    waits = k > 0
    kw = k[waits]
    # P(W + S > T) = P(W > T) + ∫₀ᵀ f_W(w) e^(−μ(T − w)) dw, W ~ Erlang(k, a): the second term is
    # e^(−μT) (a/(a − μ))ᵏ P(Erlang(k, a − μ) ≤ T), computed in logarithms (it may be tiny times huge)
    with np.errstate(divide="ignore"):
        log_rest = -mu * t + kw * math.log(a / (a - mu)) + np.log(gammainc(kw, (a - mu) * t))
    out[waits] = np.minimum(1.0, gammaincc(kw, a * t) + np.exp(log_rest))
    return out


def retried_share(p: Vector, retries: int) -> Vector:
    """r(p) = (1 − pᴺ)/(1 − pᴺ⁺¹): of the attempts that fail, when each fails with probability p, the share
    that is not its call's last (and is retried)."""
    p = np.clip(np.asarray(p, dtype=np.float64), 0.0, 1.0)
    if retries == 0:
        return np.zeros_like(p)
    out = np.full(p.shape, retries / (retries + 1.0))
    inner = p < 1.0 - 1e-9
    out[inner] = (1.0 - p[inner] ** retries) / (1.0 - p[inner] ** (retries + 1))
    return out


class _Flows(NamedTuple):
    """The flows (requests per second) out of each state, by the move they make: (Δn, Δo) → flow."""

    moves: dict[tuple[int, int], Vector]


def _flows(server: RetryServer, queue: Vector, orbit: Vector) -> _Flows:
    """Every flow of the model at states (n, o) given as arrays, grouped by their move in requests."""
    c, mu, lam = server.workers, 1.0 / server.service_s, server.arrivals_per_s
    retry_flow = orbit / server.retry_delay_s  # attempts sent from the orbit
    admitted = np.ones_like(queue, dtype=bool)
    if server.queue_limit > 0:
        admitted = queue < c + server.queue_limit
    p = np.where(admitted, doom_probability(server, queue), 1.0)
    # a first attempt that fails is always retried (while N ≥ 1); one sent from the orbit is retried unless it
    # was the call's last: r_(N−1)(p) of them (its attempt number is 2…N + 1, in proportion to pʲ⁻¹)
    share_fresh = np.full_like(queue, 1.0 if server.retries > 0 else 0.0)
    share_orbit = retried_share(p, server.retries - 1) if server.retries > 0 else np.zeros_like(queue)
    if server.retry_budget > 0 and server.retries > 0:
        wanted = p * (lam * share_fresh + retry_flow * share_orbit)
        allowed = server.retry_budget * lam
        cut = np.where(wanted > allowed, allowed / np.maximum(wanted, 1e-300), 1.0)
        share_fresh, share_orbit = share_fresh * cut, share_orbit * cut
    # does a doomed attempt add work? (it waits and is served) — not when rejected, nor with deadlines
    doomed_joins = admitted & (not server.deadlines)
    moves: dict[tuple[int, int], Vector] = {}

    def add(dn: int, do: int, flow: Vector) -> None:
        moves[(dn, do)] = moves.get((dn, do), np.zeros_like(queue)) + flow

    for source, leaves, share in ((lam * np.ones_like(queue), 0, share_fresh), (retry_flow, -1, share_orbit)):
        add(1, leaves, source * (1.0 - p))  # served in time (only an admitted attempt can be: p = 1 if rejected)
        join = np.where(doomed_joins, 1, 0)
        for dn in (0, 1):
            where = join == dn
            add(dn, leaves + 1, np.where(where, source * p * share, 0.0))  # doomed, to be retried
            add(dn, leaves, np.where(where, source * p * (1.0 - share), 0.0))  # doomed, its call's last
    add(-1, 0, np.minimum(queue, c) * mu)
    moves.pop((0, 0), None)  # no move: nothing to count
    return _Flows(moves)


def generator(server: RetryServer, grid: Grid) -> sp.csr_matrix:
    """The chain's generator Q (rows: from; each row sums to 0), a sparse matrix over ``grid``'s states
    (state i·|orbit levels| + j is queue level i, orbit level j)."""
    nq, no = grid.shape
    qi = np.repeat(np.arange(nq), no)
    oj = np.tile(np.arange(no), nq)
    xs, ys = grid.queue_levels, grid.orbit_levels
    flows = _flows(server, xs[qi], ys[oj])
    rows: list[npt.NDArray[np.int64]] = []
    cols: list[npt.NDArray[np.int64]] = []
    rates: list[Vector] = []
    up_q = np.append(np.diff(xs), np.inf)  # the step to the next level (∞: none)
    down_q = np.insert(np.diff(xs), 0, np.inf)
    up_o = np.append(np.diff(ys), np.inf)
    down_o = np.insert(np.diff(ys), 0, np.inf)
    source = qi * no + oj

    def step(dq: int, do: int) -> tuple[Vector, Vector]:
        """(the step in requests, feasible) of each state's move along each axis."""
        sq = up_q[qi] if dq > 0 else down_q[qi] if dq < 0 else np.zeros(len(qi))
        so = up_o[oj] if do > 0 else down_o[oj] if do < 0 else np.zeros(len(oj))
        return sq, so

    def emit(mask: npt.NDArray[np.bool_], dq: int, do: int, rate: Vector) -> None:
        keep = mask & (rate > 0)
        rows.append(source[keep])
        cols.append((qi[keep] + dq) * no + oj[keep] + do)
        rates.append(rate[keep])

    for (dn, do), flow in flows.moves.items():
        sq, so = step(dn, do)
        can_q, can_o = np.isfinite(sq), np.isfinite(so)
        if dn != 0 and do != 0:
            joint = can_q & can_o & (sq == so)  # one event moves both, as in the model
            emit(joint, dn, do, flow / np.where(joint, sq, 1.0))
            apart = ~joint
            emit(apart & can_q, dn, 0, flow / np.where(can_q, sq, 1.0))  # past an edge: that axis stays
            emit(apart & can_o, 0, do, flow / np.where(can_o, so, 1.0))
        elif dn != 0:
            emit(can_q, dn, 0, flow / np.where(can_q, sq, 1.0))
        else:
            emit(can_o, 0, do, flow / np.where(can_o, so, 1.0))
    r, cidx, v = np.concatenate(rows), np.concatenate(cols), np.concatenate(rates)
    q = sp.csr_matrix((v, (r, cidx)), shape=(grid.states, grid.states))
    q.sum_duplicates()
    q = q - sp.diags(np.asarray(q.sum(axis=1)).ravel())
    return q.tocsr()


def stationary(q: sp.csr_matrix) -> Vector:
    """π with πQ = 0, Σπ = 1: the balance equations with π₀ fixed at 1 (one sparse LU), then normalised."""
    qt = q.T.tocsc()
    rest = qt[1:, 1:]
    x = spla.splu(rest).solve(-qt[1:, 0].toarray().ravel())
    pi = np.maximum(np.concatenate(([1.0], x)), 0.0)
    return np.asarray(pi / pi.sum())


# A mean time past this is "never" for anything a run can show (32 years); the solve's round-off on the
# astronomically long ones (a metastable state's escape: 10¹⁵ s and more) may even give them a negative sign.
NEVER_S = 1e9


def hitting_times(q: sp.csr_matrix, target: npt.NDArray[np.bool_], moments: int = 1) -> list[Vector]:
    """E[τ] (and E[τ²] with ``moments=2``) from every state, τ the time to reach a state of ``target``:
    h = 0 on the target, Q h = −1 elsewhere (and Q m₂ = −2h); one sparse LU for both. A mean past
    ``NEVER_S`` (or one the round-off made negative) is ∞."""
    rest = ~target
    out = [np.zeros(q.shape[0]) for _ in range(moments)]
    if not rest.any():
        return out
    lu = spla.splu(q[rest][:, rest].tocsc())
    first = lu.solve(-np.ones(int(rest.sum())))
    out[0][rest] = first
    if moments > 1:
        out[1][rest] = lu.solve(-2.0 * first)
    never = ~((out[0] >= 0.0) & (out[0] <= NEVER_S))
    for m in out:
        m[never] = math.inf
    return out


class Spectrum(NamedTuple):
    """The generator's eigenvalues nearest 0: 0 itself and λ₂ (the slowest decay); t = 1/|Re λ₂|."""

    second: complex
    relaxation_s: float


def relaxation(q: sp.csr_matrix) -> Spectrum:
    """λ₂ and the relaxation time 1/|Re λ₂| (how long the chain takes to forget where it started), by
    shift-invert Arnoldi a little to the right of 0 (Q itself is singular)."""
    scale = float(np.abs(q.diagonal()).max()) or 1.0
    sigma = 1e-9 * scale
    values = spla.eigs(q.T.tocsc(), k=2, sigma=sigma, which="LM", return_eigenvectors=False, tol=1e-10)
    values = sorted(values, key=lambda v: abs(v))
    second = complex(values[1])
    return Spectrum(second, 1.0 / abs(second.real) if second.real != 0 else math.inf)


class Fluid(NamedTuple):
    """The chain's mean path: n and o (requests) once a second from the start."""

    seconds: Vector
    queue: Vector
    orbit: Vector


def fluid(q: sp.csr_matrix, grid: Grid, queue: float, orbit: float, seconds: float, dt: float = 0.1) -> Fluid:
    """The fluid limit: the chain's mean drift (Q applied to n and to o: Σⱼ Q_ij (x_j − x_i), its flows'
    moves at every state) interpolated between the states and integrated as a path (Heun's method, step
    ``dt``), within the state space's edges. Sampled once a second."""
    nq, no = grid.shape
    xs, ys = grid.queue_levels, grid.orbit_levels
    dn = np.asarray(q @ grid.queue_of_states()).reshape(nq, no)
    do = np.asarray(q @ grid.orbit_of_states()).reshape(nq, no)
    steps = max(1, round(1.0 / dt))
    h = 1.0 / steps
    total = max(0, math.ceil(seconds))
    out_n, out_o = np.empty(total + 1), np.empty(total + 1)
    n = min(max(float(queue), 0.0), xs[-1])
    o = min(max(float(orbit), 0.0), ys[-1])
    out_n[0], out_o[0] = n, o
    xl, yl = xs.tolist(), ys.tolist()

    def drift(n: float, o: float) -> tuple[float, float]:
        i = min(max(bisect.bisect_right(xl, n) - 1, 0), nq - 2) if nq > 1 else 0
        j = min(max(bisect.bisect_right(yl, o) - 1, 0), no - 2) if no > 1 else 0
        u = (n - xl[i]) / (xl[i + 1] - xl[i]) if nq > 1 else 0.0
        v = (o - yl[j]) / (yl[j + 1] - yl[j]) if no > 1 else 0.0
        i1, j1 = min(i + 1, nq - 1), min(j + 1, no - 1)
        w = ((1 - u) * (1 - v), (1 - u) * v, u * (1 - v), u * v)
        cells = ((i, j), (i, j1), (i1, j), (i1, j1))
        return (
            sum(wk * float(dn[c]) for wk, c in zip(w, cells, strict=True)),
            sum(wk * float(do[c]) for wk, c in zip(w, cells, strict=True)),
        )

    for s in range(total):
        for _ in range(steps):
            a = drift(n, o)
            n1 = min(max(n + h * a[0], 0.0), xl[-1])
            o1 = min(max(o + h * a[1], 0.0), yl[-1])
            b = drift(n1, o1)
            n = min(max(n + h * (a[0] + b[0]) / 2.0, 0.0), xl[-1])
            o = min(max(o + h * (a[1] + b[1]) / 2.0, 0.0), yl[-1])
        out_n[s + 1], out_o[s + 1] = n, o
    return Fluid(np.arange(total + 1, dtype=np.float64), out_n, out_o)

"""Zoom into a minute of a chain of services: a sample of its client requests followed across hops (span trees).

A chain's zoom is a replay, not a reconstruction: the run is replayed from its file (its seed and its actions,
bit for bit) to the start of the minute; the minute is played once untraced (its record, to size the trace and
to check against), then again from the same state with the trace on, in the engine's own compiled loop
(``model/chain/trace.py``: ``span_open`` and its neighbours). The trace only writes rows of its own arrays, so the
traced minute is the run's minute exactly (checked: its record equals the untraced one, or the zoom refuses).
Every ``k``-th entry request of the minute is sampled (``k`` chosen so that about ``SAMPLED`` are); each of its
attempts at every service, the copies of every call (first tries, retries, hedges), is one span: its service,
the span of the attempt that called it, its moments (sent, reached the service, taken by a worker, own work
done, the service done with it, its caller done waiting), its deadline, and two outcomes, the service's (ok,
failed, refused, cancelled) and its caller's (answered, timed out, cancelled). When the run played the next
minute too, it is played traced as well (no new request sampled) so that requests late in the minute are
followed to their end; otherwise what was still in flight at the minute's end is shown open.

A request's spans form a tree (``check_tree``): a span's parent is an attempt at the service that made the call
(the edge's caller) of the same request; a child is sent at or after its parent's own work ended; and a child
whose answer reached its parent did so before the parent was done (a parent that finished first, failing or
given up on, cancelled its children: those may end later at their services, as may any child its caller gave up
on; this holds for held and asynchronous workers alike, since an asynchronous caller still waits for its
calls' answers before it answers).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from oncallsim.model import InvalidInput
from oncallsim.model.chain.layout import EI_CALLEE, EI_CALLER, EI_COPIES, SV_HEDGE_Q, SV_RETRIES
from oncallsim.model.chain.world import (
    CALLER_ANSWERED,
    CALLER_CANCELLED,
    CALLER_TIMED_OUT,
    OUT_CANCELLED,
    OUT_FAILED,
    OUT_OK,
    OUT_OPEN,
    OUT_REFUSED,
    R_DEADLINE,
    T_CALLER,
    T_COLUMNS,
    T_GROUP,
    T_KIND,
    T_OUTCOME,
    T_PARENT,
    T_REQUEST,
    T_SVC,
    T_TRY,
    TI_COLUMNS,
    TI_EVERY,
    TI_LOST,
    TI_ROWS,
    TR_ARRIVED,
    TR_CALLER_END,
    TR_COLUMNS,
    TR_DEADLINE,
    TR_END,
    TR_SENT,
    TR_START,
    TR_WORKED,
    ChainWorld,
)
from oncallsim.simulation import Action, RunFile, Simulation, load_actions

__all__ = [
    "OUTCOMES",
    "ChainZoom",
    "check_tree",
    "spans_bound",
    "trace_minute",
    "with_trace",
    "zoom_chain",
    "zoom_chain_at",
]

SAMPLED = 200  # about this many client requests followed
MAX_ROWS = 400_000  # the trace's rows at most (≈ 50 MB): a wider graph samples fewer requests
KINDS = ("first", "retry", "hedge")
SERVICE_OUTCOMES = {OUT_OPEN: "open", OUT_OK: "ok", OUT_FAILED: "failed", OUT_REFUSED: "refused",
                    OUT_CANCELLED: "cancelled"}  # fmt: skip
CALLER_SIDES = {0: "waiting", CALLER_ANSWERED: "answered", CALLER_TIMED_OUT: "timed out",
                CALLER_CANCELLED: "cancelled"}  # fmt: skip
# a span's outcome as the page shows it: its caller's view first (timed out, cancelled), else its service's
OUTCOMES = ("ok", "failed", "refused", "timed out", "cancelled", "open")


def with_trace(world: ChainWorld, every: int, rows: int) -> ChainWorld:
    """The world with a trace of ``rows`` spans, sampling every ``every``-th entry request (0: none new)."""
    if isinstance(every, bool) or not isinstance(every, int) or every < 0:
        raise InvalidInput("every", f"must be a whole number ≥ 0 (0: no request sampled), got {every!r}")
    if isinstance(rows, bool) or not isinstance(rows, int) or not 0 <= rows <= MAX_ROWS:
        raise InvalidInput("rows", f"must be a whole number from 0 to {MAX_ROWS}, got {rows!r}")
    tr_ints = np.zeros(TI_COLUMNS, dtype=np.int64)
    tr_ints[TI_EVERY] = every
    return world._replace(
        tr_ints=tr_ints, tr_i=np.zeros((rows, T_COLUMNS), dtype=np.int64), tr_r=np.full((rows, TR_COLUMNS), np.nan)
    )


def spans_bound(world: ChainWorld, entry: int) -> int:
    """The most spans one client request can make: its attempt at the entry, and for each call of each stage
    its copies × (1 + the caller's retries) × 2 if the caller hedges, each the callee's own bound (the graph
    has no cycles). Probabilistic calls counted as made."""
    svc, edges = world.svc, world.edge_i
    memo: dict[int, int] = {}

    def bound(s: int) -> int:
        if s not in memo:
            tries = (1 + int(svc[s, SV_RETRIES])) * (2 if svc[s, SV_HEDGE_Q] > 0 else 1)
            memo[s] = 1 + sum(
                int(edges[e, EI_COPIES]) * tries * bound(int(edges[e, EI_CALLEE]))
                for e in range(len(edges))
                if int(edges[e, EI_CALLER]) == s
            )
        return memo[s]

    return bound(entry)


def trace_minute(world: ChainWorld) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], int]:
    """The spans written so far: integer columns, times, and how many could not be written (no row left)."""
    n = int(world.tr_ints[TI_ROWS])
    return world.tr_i[:n].copy(), world.tr_r[:n].copy(), int(world.tr_ints[TI_LOST])


def shown_outcome(service: int, caller: int) -> str:
    if caller == CALLER_TIMED_OUT:
        return "timed out"
    if caller == CALLER_CANCELLED or service == OUT_CANCELLED:
        return "cancelled"
    return SERVICE_OUTCOMES[service]


@dataclass(frozen=True)
class ChainZoom:
    """A zoomed chain minute (``to_dict`` is its JSON form): the sampled requests, each with its spans (times in
    ms from the request's arrival), the spans counted per service, and the minute's own measures per service."""

    minute: int
    clock: str
    source_engine: str
    entry: str
    services: list[str]
    deadline_ms: float
    sample_every: int
    followed: bool  # the next minute was played traced too (requests late in the minute followed to their end)
    lost: int  # spans the trace had no row for (0 unless the graph is wider than its bound)
    record: dict[str, Any]
    requests: list[dict[str, Any]]
    counts: dict[str, dict[str, int]]  # per service: spans by outcome and kind, and those reached in the minute
    measured: dict[str, dict[str, float]]  # per service: the minute's attempts, retries, hedges (the record's)
    kind: str = field(default="chain")

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def check_tree(spans: list[dict[str, Any]], callers: dict[str, set[str]]) -> list[str]:
    """What breaks the tree rules (module docstring) in one request's spans (empty: none). ``callers``: each
    service's callers by name."""
    by_id = {s["id"]: s for s in spans}
    roots = [s for s in spans if s["parent"] is None]
    wrong: list[str] = []
    if len(roots) != 1:
        wrong.append(f"{len(roots)} roots")
    for s in spans:
        if s["parent"] is None:
            continue
        p = by_id.get(s["parent"])
        if p is None:
            wrong.append(f"span {s['id']}: parent {s['parent']} not in the request")
            continue
        if p["service"] not in callers.get(s["service"], set()):
            wrong.append(f"span {s['id']}: {p['service']} does not call {s['service']}")
        if p["worked_ms"] is None or s["sent_ms"] < p["worked_ms"]:
            wrong.append(f"span {s['id']}: sent before its parent's own work ended")
        if s["caller"] == "answered" and p["end_ms"] is not None and s["caller_end_ms"] > p["end_ms"]:
            wrong.append(f"span {s['id']}: answered after its parent was done")
        if s["end_ms"] is not None and s["arrived_ms"] is not None and s["end_ms"] < s["arrived_ms"]:
            wrong.append(f"span {s['id']}: done before it arrived")
    return wrong


def _ms(value: float, origin: float) -> float | None:
    return None if math.isnan(value) else (value - origin) * 1000.0


def _requests(ti: np.ndarray[Any, Any], tr: np.ndarray[Any, Any], names: list[str]) -> list[dict[str, Any]]:
    """The spans grouped by request, each request's in the order written (a parent before its children)."""
    out: dict[int, dict[str, Any]] = {}
    depth: dict[int, int] = {}
    for row in range(len(ti)):
        i, r = ti[row], tr[row]
        parent = int(i[T_PARENT])
        request = int(i[T_REQUEST])
        if parent < 0:
            origin = float(r[TR_SENT])
            out[request] = {"number": request, "arrival_s": origin % 60.0, "spans": [], "_origin": origin}
            depth[row] = 0
        else:
            depth[row] = depth[parent] + 1
        item = out[request]
        origin = item["_origin"]
        service, caller = int(i[T_OUTCOME]), int(i[T_CALLER])
        end = _ms(float(r[TR_END]), origin)
        arrived = _ms(float(r[TR_ARRIVED]), origin)
        start = _ms(float(r[TR_START]), origin)
        deadline = float(r[TR_DEADLINE])
        item["spans"].append(
            {
                "id": row,
                "parent": None if parent < 0 else parent,
                "group": int(i[T_GROUP]),
                "depth": depth[row],
                "service": names[int(i[T_SVC])],
                "kind": KINDS[int(i[T_KIND])],
                "try": int(i[T_TRY]),
                "outcome": shown_outcome(service, caller),
                "service_outcome": SERVICE_OUTCOMES[service],
                "caller": CALLER_SIDES[caller],
                "sent_ms": _ms(float(r[TR_SENT]), origin),
                "arrived_ms": arrived,
                "start_ms": start,
                "worked_ms": _ms(float(r[TR_WORKED]), origin),
                "end_ms": end,
                "caller_end_ms": _ms(float(r[TR_CALLER_END]), origin),
                "wait_ms": None if start is None or arrived is None else start - arrived,
                "deadline_ms": None if math.isinf(deadline) else (deadline - origin) * 1000.0,
            }
        )
    requests = []
    for item in out.values():
        del item["_origin"]
        root = item["spans"][0]
        item["outcome"] = root["outcome"] if root["caller"] != "answered" else root["service_outcome"]
        item["latency_ms"] = root["caller_end_ms"]
        item["attempts"] = len(item["spans"])
        requests.append(item)
    return requests


def _counts(ti: np.ndarray[Any, Any], tr: np.ndarray[Any, Any], names: list[str], t0: float) -> dict[str, Any]:
    counts: dict[str, dict[str, int]] = {
        name: {key: 0 for key in (*OUTCOMES, *KINDS, "spans", "reached_in_minute")} for name in names
    }
    for row in range(len(ti)):
        c = counts[names[int(ti[row, T_SVC])]]
        c["spans"] += 1
        c[shown_outcome(int(ti[row, T_OUTCOME]), int(ti[row, T_CALLER]))] += 1
        c[KINDS[int(ti[row, T_KIND])]] += 1
        arrived = float(tr[row, TR_ARRIVED])
        c["reached_in_minute"] += int(t0 <= arrived < t0 + 60.0)
    return counts


def zoom_chain_at(
    sim: Simulation, actions: list[Action], following: list[Action] | None, sample_every: int | None = None
) -> ChainZoom:
    """Zoom into the minute ``sim`` is about to play (``actions``: the run's at that minute); ``following``: the
    run's actions at the next minute, if the run played it (None: it did not; what is in flight at the minute's
    end stays open). ``sim`` is played on (a minute or two): pass a replay made for the zoom. ``sample_every``:
    trace every so many entry requests (default: about ``SAMPLED`` of the minute's)."""
    layout = sim.plan.graph
    if layout is None or sim.engine.name != "request":
        raise InvalidInput("minute", "a chain's zoom needs a chain of services played on the request engine")
    minute = sim.minute
    probe = sim.fork()
    untraced = probe.step(actions)  # the minute as the run played it: its arrivals size the trace
    arrivals = math.floor(untraced.admitted_per_s * 60.0 + 0.5)
    world: ChainWorld = sim.state.world
    bound = max(spans_bound(world, layout.entry), spans_bound(probe.state.world, layout.entry))
    every = sample_every if sample_every is not None else max(1, math.ceil(arrivals / SAMPLED))
    every = max(every, math.ceil(arrivals / max(1, MAX_ROWS // bound)))  # a wide graph: fewer requests
    rows = min(MAX_ROWS, math.ceil(arrivals / every) * bound + bound)
    sim.state = sim.state._replace(world=with_trace(world, every, rows))
    traced = sim.step(actions)
    if traced.to_dict() != untraced.to_dict():  # the trace must not change the minute (loop.py's promise)
        raise RuntimeError(f"minute {minute}: the traced minute differs from the run's; a bug in the trace")
    if following is not None and not sim.done:
        sim.state.world.tr_ints[TI_EVERY] = -1  # no request sampled, those sampled still followed
        sim.step(following)
    ti, tr, lost = trace_minute(sim.state.world)
    names = list(layout.names)
    services = untraced.extras["graph"]["services"] if untraced.extras else {}
    measured = {
        name: {k: float(services[name][f"{k}_per_s"]) * 60.0 for k in ("attempts", "retries", "hedges")}
        for name in names
        if name in services
    }
    return ChainZoom(
        minute=minute,
        clock=untraced.clock,
        source_engine=sim.engine.name,
        entry=names[layout.entry],
        services=names,
        deadline_ms=float(world.reals[R_DEADLINE]) * 1000.0,
        sample_every=every,
        followed=following is not None and minute + 1 < sim.length,
        lost=lost,
        record={k: v for k, v in untraced.to_dict().items() if k != "extras"},
        requests=_requests(ti, tr, names),
        counts=_counts(ti, tr, names, 60.0 * minute),
        measured=measured,
    )


def zoom_chain(run: RunFile | str | Path | Simulation, minute: int, sample_every: int | None = None) -> ChainZoom:
    """Zoom into minute ``minute`` of a chain run (a run file, its path, or a live simulation: replayed from its
    run file to the minute, the simulation itself left as it is)."""
    if isinstance(run, Simulation):
        run = run.run_file()
    elif not isinstance(run, RunFile):
        run = RunFile.load(run)
    start = Simulation.from_run_file(run)
    played = start.length if run.played is None else run.played
    if isinstance(minute, bool) or not isinstance(minute, int) or not 0 <= minute < played:
        last = f"0 to {played - 1}" if played else "none: no minute played yet"
        raise InvalidInput("minute", f"must be a minute of the run, {last}; got {minute!r}")
    if start.plan.graph is None:
        raise InvalidInput("minute", "this run is one service, not a chain: zoom it with zoom_run")
    sim = Simulation.replay(run, until=minute)
    actions = load_actions(run.actions)
    now = [a for a in actions if a.minute == minute]
    following = [a for a in actions if a.minute == minute + 1] if minute + 1 < played else None
    return zoom_chain_at(sim, now, following, sample_every)

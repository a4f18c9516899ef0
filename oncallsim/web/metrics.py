"""A live run's metrics for a team's own Prometheus and Grafana: ``GET /runs/{id}/metrics``, the values now.

A console run is behind the server's own rules (its token, when one is set); a game-day room's run is behind
the room's too: ``?room_token=`` with the facilitator's or the players' token, as the room's socket asks for one
(Prometheus sends it with ``params:`` in its scrape configuration; docs/metrics.md). ``?service=`` sets the
``service`` label. The text is OpenMetrics for a scraper that asks for it (Prometheus does), else Prometheus' older
text format. What a simulated minute is in wall-clock seconds at each speed, and what that does to ``rate()``,
is in docs/metrics.md.
"""

from __future__ import annotations

import asyncio
from weakref import WeakKeyDictionary

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from oncallsim.metrics import CONTENT_TYPE, DEFAULT_SERVICE, TEXT_CONTENT_TYPE, Accumulator, check_service, current_text
from oncallsim.model import InvalidInput
from oncallsim.simulation import Simulation
from oncallsim.web.api import manager_of
from oncallsim.web.gameday import rooms_of

__all__ = ["metrics_text", "router"]

router = APIRouter(include_in_schema=False)
# a run's counters so far, kept beside it (its timeline only grows); fed as a scrape comes
_KEPT: WeakKeyDictionary[Simulation, tuple[Accumulator, asyncio.Lock]] = WeakKeyDictionary()
FEED_INLINE = 120  # minutes fed on the event loop; more (a first scrape late in a run) on a worker thread


async def metrics_text(sim: Simulation, service: str, openmetrics: bool) -> str:
    """The run's metrics as of its last minute."""
    kept = _KEPT.get(sim)
    if kept is None:
        kept = _KEPT[sim] = (Accumulator(), asyncio.Lock())
    acc, lock = kept
    async with lock:
        timeline = list(sim.timeline)  # the minutes so far, copied at this instant
        if len(timeline) - acc.minutes > FEED_INLINE:
            await asyncio.to_thread(acc.feed, timeline)
        else:
            acc.feed(timeline)
        return current_text(acc, service, openmetrics)


@router.get("/runs/{run_id}/metrics")
async def run_metrics(
    request: Request,
    run_id: str,
    service: str = Query(default=DEFAULT_SERVICE, max_length=64),
    room_token: str | None = Query(default=None, max_length=200),
) -> Response:
    """A live run's or a game-day room's metrics (a room's only with one of its tokens)."""
    check_service(service)
    live = await manager_of(request).get(run_id[:40])
    if live is not None:
        sim = live.sim
    else:
        room = await rooms_of(request).get(run_id[:40])
        if room is None:
            raise InvalidInput("run", f"no run {run_id[:40]!r}")
        room.authenticate(room_token)
        sim = room.live.sim
    openmetrics = "application/openmetrics-text" in request.headers.get("accept", "")
    text = await metrics_text(sim, service, openmetrics)
    return Response(text, media_type=CONTENT_TYPE if openmetrics else TEXT_CONTENT_TYPE)

"""Zoom into a minute of a live or stored run: the JSON (``/api/runs/{id}/zoom``) and a page
(``/runs/{id}/zoom``), both computed off the event loop in ~40 ms (``oncallsim.zoom``). A chain of services'
minute is replayed from the run's start with a sample of its requests followed across hops (``zoom.chain``: a
replay, so it takes as long as the minutes before it, about 0.1 s a busy minute)."""

from __future__ import annotations

import asyncio
from typing import Annotated
from urllib.parse import quote

import orjson
from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from oncallsim.model import InvalidInput
from oncallsim.web.api import get_live
from oncallsim.web.pages import error_page, language_of, remember_language, with_lang
from oncallsim.zoom import ChainZoom, ZoomedMinute, zoom_chain, zoom_record
from oncallsim.zoom.chain_html import render_chain_zoom_html
from oncallsim.zoom.html import render_zoom_html

__all__ = ["router"]

router = APIRouter()

Minute = Annotated[int, Query(ge=0, le=10_000_000, description="the minute to zoom into, counted from 0")]


async def _zoom(request: Request, run_id: str, minute: int) -> ZoomedMinute | ChainZoom:
    live = await get_live(request, run_id)
    sim = live.sim
    played = len(sim.timeline)
    if not minute < played:
        last = f"0 to {played - 1}" if played else "none: no minute played yet"
        reason = f"must be a minute of the run, {last}; got {minute}"
        if played:
            raise InvalidInput("minute", reason, "minute", lo=0, hi=played - 1, got=minute)
        raise InvalidInput("minute", reason, "no_minute", got=minute)
    if sim.plan.graph is not None:  # a chain: its run file read on the event loop, replayed on a worker thread
        return await asyncio.to_thread(zoom_chain, sim.run_file(), minute)
    record = sim.timeline[minute]  # read on the event loop; the re-simulation runs on a worker thread
    return await asyncio.to_thread(zoom_record, record, sim.params, sim.seed, sim.engine.name)


@router.get("/api/runs/{run_id}/zoom")
async def zoom_json(request: Request, run_id: str, minute: Minute) -> Response:
    z = await _zoom(request, run_id, minute)
    return Response(orjson.dumps(z.to_dict()), media_type="application/json")


@router.get("/runs/{run_id}/zoom", response_class=HTMLResponse)
async def zoom_page(request: Request, run_id: str, minute: Minute) -> HTMLResponse:
    try:
        z = await _zoom(request, run_id, minute)
    except InvalidInput as exc:
        return error_page(request, exc, 404 if exc.field == "run" else 422)
    language = language_of(request)  # as every page: ?lang=, the remembered choice, the browser's
    back = with_lang(f"/runs/{quote(run_id, safe='')}", language)
    if isinstance(z, ChainZoom):
        html = await asyncio.to_thread(render_chain_zoom_html, z, True, language, back)
    else:
        html = await asyncio.to_thread(render_zoom_html, z, True, language, back)
    return remember_language(request, HTMLResponse(html))

"""The web console: FastAPI + Jinja2 pages, a JSON API, and one WebSocket per live run.

A thin surface: every number on a page comes from the core (Simulation, debrief, Params, formulas).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncIterator, Iterable
from importlib import resources
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from oncallsim.alerting.pagerduty import Pager, PagerConfig
from oncallsim.i18n import translations
from oncallsim.refusals import localized_fields
from oncallsim.store import RunStore, default_db_path
from oncallsim.web import api, engines, gameday, metrics, pages, zoom
from oncallsim.web.limits import Full, Gate, Limits, sweep_forever
from oncallsim.web.live import RunManager
from oncallsim.web.security import Guard, SecurityConfig
from oncallsim.web.workers import Busy, Workers

__all__ = ["create_app", "plotly_js_path"]

STATIC = Path(str(resources.files("oncallsim.web") / "static"))
log = logging.getLogger("oncallsim.web")


def plotly_js_path() -> Path:
    """plotly.min.js from the installed ``plotly`` package: served locally, never from a CDN."""
    return Path(str(resources.files("plotly") / "package_data" / "plotly.min.js"))


def _field_of(loc: Iterable[object]) -> str:
    parts = [str(p) for p in loc if p not in ("body", "query", "path", "header", "cookie")]
    return ".".join(parts) or "body"


def _wants_html(request: Request) -> bool:
    return not request.url.path.startswith("/api/")


def create_app(
    db_path: str | Path | None = None,
    *,
    host: str = "127.0.0.1",
    allow_hosts: Iterable[str] = (),
    token: str | None = None,
    pagerduty: PagerConfig | None = None,
    limits: Limits | None = None,
) -> FastAPI:
    """The app. ``host`` and ``allow_hosts`` make the Host allow-list; ``token`` (required by the CLI when
    binding beyond loopback) is asked of every request; ``pagerduty``: where the runs' and rooms' pages go;
    ``limits``: how many runs and rooms it holds, and when what nobody uses leaves memory (web/limits.py)."""
    store = RunStore(db_path or default_db_path())
    warmer = engines.EngineWarmer()
    pager = Pager(pagerduty) if pagerduty is not None else None
    limits = limits or Limits()
    workers = Workers()  # processes started on first use: request-engine minutes, debriefs, imports, replays
    manager = RunManager(store, engine_state=warmer.readiness, pager=pager, limits=limits, workers=workers)

    def sweeps() -> list[Any]:
        rooms = getattr(app.state, "rooms", None)
        return [manager.sweep()] + ([rooms.sweep(limits.room_idle_s)] if rooms is not None else [])

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.engines.start()
        sweeper = asyncio.get_running_loop().create_task(sweep_forever(limits, sweeps), name="memory-sweeper")
        yield
        sweeper.cancel()
        app.state.engines.stop()
        await manager.shutdown()
        workers.close()
        if pager is not None:
            pager.close()  # the events already queued are posted
        store.close()

    # the API's schema stays at /api/openapi.json; no docs UI (Swagger UI and ReDoc would load from a CDN)
    app = FastAPI(title="oncallsim", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url="/api/openapi.json")
    app.state.store = store
    app.state.manager = manager
    app.state.limits = limits
    app.state.room_gate = Gate(limits.new_rooms_per_minute, "new_rooms_per_minute")
    app.state.boot_token = secrets.token_hex(4)
    app.state.engines = warmer
    app.state.pager = pager
    app.add_middleware(Guard, config=SecurityConfig.for_bind(host, allow_hosts, token))  # type: ignore[arg-type]

    @app.get("/vendor/plotly.min.js", include_in_schema=False)
    async def plotly_js() -> FileResponse:
        return FileResponse(plotly_js_path(), media_type="text/javascript")

    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.exception_handler(api.InvalidInput)
    async def invalid_input(request: Request, exc: api.InvalidInput) -> JSONResponse:
        extra = localized_fields(exc, pages.language_of(request))  # a page's language; nothing for English
        return JSONResponse({"error": str(exc), "field": exc.field, **extra}, status_code=422)

    @app.exception_handler(Busy)
    async def busy(request: Request, exc: Busy) -> Response:
        """The heavy workers' queue is full: one line, nothing started; a page says it in its language."""
        if _wants_html(request):
            message = str(pages.refusal(request, "server", "busy", waiting=exc.waiting))
            return pages.render(request, "error.html", status=429, message=message)
        return JSONResponse({"error": str(exc), "field": "server"}, status_code=429, headers={"Retry-After": "60"})

    @app.exception_handler(Full)
    async def full(request: Request, exc: Full) -> Response:
        """A limit reached (web/limits.py): 429, saying what to do, in the page's language."""
        message = exc.text(translations(pages.language_of(request)).gettext)
        headers = {"Retry-After": str(exc.wait_s)}
        if _wants_html(request):
            page = pages.render(request, "error.html", status=429, message=message)
            page.headers.update(headers)
            return page
        return JSONResponse({"error": message, "field": "limit"}, status_code=429, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> Response:
        errors = exc.errors()
        first = errors[0] if errors else {"loc": (), "msg": "invalid request"}
        field = _field_of(first.get("loc", ()))
        message = f"{field}: {str(first.get('msg', 'invalid')).removeprefix('Value error, ')}"
        if first.get("type") == "json_invalid":
            context: Any = first.get("ctx") or {}
            field, message = "body", f"body: not valid JSON ({context.get('error', 'decode error')})"
        if len(errors) > 1:
            message += f" (and {len(errors) - 1} more)"
        if _wants_html(request):
            return pages.render(request, "error.html", status=422, message=message)
        return JSONResponse({"error": message, "field": field}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        detail = exc.detail if isinstance(exc.detail, str) else "invalid request"
        if exc.status_code == 400:
            detail = "not valid JSON (or not UTF-8, nested too deeply, or a number too long)"
        field = "body" if exc.status_code in (400, 413, 415) else "path" if exc.status_code == 404 else "request"
        if _wants_html(request) and exc.status_code == 404:
            return pages.render(request, "error.html", status=404, message=f"{request.url.path[:200]}: not found")
        return JSONResponse(
            {"error": f"{field}: {detail}", "field": field}, status_code=exc.status_code, headers=exc.headers
        )

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception) -> Response:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return JSONResponse({"error": "internal error (a bug; it is logged)", "field": "server"}, status_code=500)

    app.include_router(api.router)
    app.include_router(metrics.router)  # before the pages: /runs/{id}/metrics is not a page
    app.include_router(pages.router)
    app.include_router(zoom.router)
    app.include_router(engines.router)
    app.include_router(gameday.router)
    return app

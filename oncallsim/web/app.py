"""The web console: FastAPI + Jinja2 pages, a JSON API, and one WebSocket per live run.

A thin surface: every number on a page comes from the core (Simulation, debrief, Params, formulas).
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import AsyncIterator
from importlib import resources
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

from oncallsim.store import RunStore, default_db_path
from oncallsim.web import api, pages
from oncallsim.web.live import RunManager

__all__ = ["create_app", "plotly_js_path"]

STATIC = Path(str(resources.files("oncallsim.web") / "static"))


def plotly_js_path() -> Path:
    """plotly.min.js from the installed ``plotly`` package: served locally, never from a CDN."""
    return Path(str(resources.files("plotly") / "package_data" / "plotly.min.js"))


def create_app(db_path: str | Path | None = None) -> FastAPI:
    store = RunStore(db_path or default_db_path())
    manager = RunManager(store)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        await manager.shutdown()
        store.close()

    app = FastAPI(title="oncallsim", lifespan=lifespan, docs_url="/api/docs", redoc_url=None)
    app.state.store = store
    app.state.manager = manager
    app.state.boot_token = secrets.token_hex(4)

    @app.get("/vendor/plotly.min.js", include_in_schema=False)
    async def plotly_js() -> FileResponse:
        return FileResponse(plotly_js_path(), media_type="text/javascript")

    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.exception_handler(api.InvalidInput)
    async def invalid_input(request: Request, exc: api.InvalidInput) -> JSONResponse:
        return JSONResponse({"error": str(exc), "field": exc.field}, status_code=422)

    app.include_router(api.router)
    app.include_router(pages.router)
    return app

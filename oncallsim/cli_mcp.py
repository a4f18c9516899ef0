"""``oncallsim mcp``: the MCP server (``agents/mcp_server.py``) over stdio (a desktop client spawns it) or streamable
HTTP on loopback, behind the console's network rules (``cli_common.checked_bind``, ``web/security.py``)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from oncallsim.cli_common import checked_bind, err
from oncallsim.model.errors import InvalidInput

__all__ = ["mcp"]


class Transport(StrEnum):
    stdio = "stdio"
    http = "http"


def mcp(
    transport: Annotated[
        Transport, typer.Option(help="stdio (a desktop client spawns the server) or http (streamable HTTP).")
    ] = Transport.stdio,
    host: Annotated[str | None, typer.Option(help="HTTP: the address to bind; loopback by default.")] = None,
    port: Annotated[int | None, typer.Option(help="HTTP: the port, 1 to 65535 (default 8765).")] = None,
    allow_host: Annotated[
        list[str] | None,
        typer.Option("--allow-host", help="HTTP: also serve this Host name (e.g. the name a reverse proxy uses)."),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            envvar="ONCALLSIM_TOKEN",
            help="HTTP: access token asked of every request (generated when binding beyond loopback without one).",
        ),
    ] = None,
) -> None:
    """Serve the MCP server: an AI agent plays the scenarios through its tools (docs/agents.md)."""
    from oncallsim.extras import require

    require("mcp", "mcp")  # the extra missing: one line with the pip install that brings it
    if transport is Transport.stdio:
        for name, given in (("--host", host), ("--port", port), ("--allow-host", allow_host)):
            if given is not None:
                raise InvalidInput(name, "is for --transport http only (stdio serves the process's stdin/stdout)")
        from oncallsim.agents.mcp_server import serve_stdio

        serve_stdio()
        return
    from oncallsim.agents.mcp_server import MCP_PATH, serve_http

    host = "127.0.0.1" if host is None else host
    port = 8765 if port is None else port
    token = checked_bind(host, port, token, "MCP server")
    shown = f"[{host}]" if ":" in host else host
    auth = f"  (Authorization: Bearer {token})" if token is not None else ""
    err.print(f"oncallsim MCP server on http://{shown}:{port}{MCP_PATH}{auth}", soft_wrap=True)
    serve_http(host, port, token, allow_host or [])

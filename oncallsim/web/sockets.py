"""A WebSocket's life after its opening snapshot, one piece of code for the live run and the game-day room:
a sender task that writes what the queue brings (the only writer), a receive loop with a per-second message
limit, and errors that go back to that socket alone (a bug is logged; the socket and the run stay up)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import WebSocket, WebSocketDisconnect

from oncallsim.model import InvalidInput
from oncallsim.refusals import localized_fields
from oncallsim.web.language import language_of

__all__ = ["MESSAGES_PER_SECOND", "serve_socket"]

MESSAGES_PER_SECOND = 50
log = logging.getLogger("oncallsim.web")


async def serve_socket(
    websocket: WebSocket,
    queue: asyncio.Queue[str | None],
    on_frame: Callable[[Any], Awaitable[None]],
    unsubscribe: Callable[[], None],
    what: str,
) -> None:
    """Serve ``websocket`` until it closes: ``on_frame`` handles each received frame (raising ``InvalidInput``
    for a bad one); ``queue`` carries what to send, ``None`` when this socket fell too far behind (closed with
    1013 "try again later": the browser reconnects and gets a fresh snapshot); ``what`` names it in the log. A
    refusal frame adds its sentence in the page's language (``localized``: the socket's ?lang=, cookie or
    Accept-Language, as the page's own) to the English ``message``."""
    language = language_of(websocket)

    async def sender() -> None:
        while (text := await queue.get()) is not None:
            await websocket.send_text(text)
        await websocket.close(code=1013)

    sending = asyncio.create_task(sender())
    window_start, in_window = time.monotonic(), 0
    try:
        while True:
            raw = await websocket.receive()
            if raw["type"] == "websocket.disconnect":
                break
            try:
                now = time.monotonic()
                if now - window_start >= 1.0:
                    window_start, in_window = now, 0
                in_window += 1
                if in_window > MESSAGES_PER_SECOND:
                    if in_window == MESSAGES_PER_SECOND + 1:  # one warning per second, the rest dropped
                        raise InvalidInput("message", f"at most {MESSAGES_PER_SECOND} messages per second")
                    continue
                await on_frame(raw)
            except InvalidInput as exc:  # to this socket only, through its one writer
                extra = localized_fields(exc, language)
                queue.put_nowait(json.dumps({"type": "error", "field": exc.field, "message": str(exc), **extra}))
            except Exception:  # a bug: logged; the socket stays open
                log.exception("unexpected error on %s", what)
                queue.put_nowait(json.dumps({"type": "error", "field": "server", "message": "internal error"}))
    except WebSocketDisconnect:
        pass
    finally:
        sending.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await sending
        unsubscribe()

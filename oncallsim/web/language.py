"""The language a request or a WebSocket is answered in: the pages' (``pages.render``) and their refusals'
(``sockets.serve_socket``, the API's error answers), so a page and its socket speak one language."""

from __future__ import annotations

from starlette.requests import HTTPConnection

from oncallsim.i18n import negotiate

__all__ = ["LANG_COOKIE", "language_of"]

LANG_COOKIE = "oncallsim_lang"


def language_of(request: HTTPConnection) -> str:
    """The page's language: ?lang=, else the cookie the picker set, else Accept-Language, else English."""
    return negotiate(
        request.query_params.get("lang"), request.headers.get("accept-language"), request.cookies.get(LANG_COOKIE)
    )

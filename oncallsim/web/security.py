"""What stands between the network and the console: one ASGI middleware for every HTTP request and WebSocket.

- **Host allow-list** (against DNS rebinding): loopback names, the bind address, ``--allow-host`` names, and,
  when bound to a wildcard address, IP literals and this machine's name. A rebinding page reaches us under its
  own domain name, which is not on the list.
- **Origin** on the WebSocket and on every state-changing request: absent (not a browser), or the same origin
  as the Host (or an ``--allow-host`` origin behind a proxy). ``null`` and foreign origins are refused, and so is
  ``Sec-Fetch-Site: cross-site`` / ``same-site``.
- **Forms and uploads** (CSRF): a form or multipart POST must prove where it comes from: a same-origin
  ``Origin`` or ``Sec-Fetch-Site: same-origin`` (every current browser sends one of them). A form without
  either is refused.
- **JSON** POSTs must say ``Content-Type: application/json`` (a cross-site page can send ``text/plain`` without a
  preflight; it cannot send JSON). A ``DELETE`` without a body need not say a type (a DELETE is never sent
  cross-site without a preflight, and a form cannot send one); one with a body must.
- **Access token** when one is configured (always when bound beyond loopback): ``Authorization: Bearer T``, or
  the ``oncallsim_token`` cookie set by visiting any page once with ``?token=T``.
- **Sizes**: a POST must declare its ``Content-Length``, at most ``max_body`` (uploads ``max_upload``).
- **Headers** on every answer: CSP (no outside origin, no inline script, no framing), X-Frame-Options,
  nosniff, Referrer-Policy.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import socket
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

__all__ = [
    "CSP",
    "SECURITY_HEADERS",
    "TOKEN_COOKIE",
    "Guard",
    "SecurityConfig",
    "allowed_hosts_for",
    "is_loopback",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

TOKEN_COOKIE = "oncallsim_token"
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
    "font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
SECURITY_HEADERS = (
    (b"content-security-policy", CSP.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),  # no-referrer would make forms send Origin: null
    (b"cross-origin-opener-policy", b"same-origin"),
)
UNSAFE_METHODS = {"POST", "PUT", "PATCH", "DELETE"}
UPLOAD_PATHS = {"/runs/import", "/api/runs/import"}
LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1"}


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _is_wildcard(host: str) -> bool:
    return host.strip("[]") in ("0.0.0.0", "::", "")


def allowed_hosts_for(bind: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The Host names served: loopback names, the bind address, the extra names; a wildcard bind adds this
    machine's names (IP literals are always served: a rebinding attack needs a domain name)."""
    names = set(LOOPBACK_NAMES) | {bind.strip("[]").lower()} | {h.strip().lower() for h in extra if h.strip()}
    if _is_wildcard(bind):
        names |= {socket.gethostname().lower(), socket.getfqdn().lower()}
    return frozenset(n for n in names if n)


@dataclass(frozen=True)
class SecurityConfig:
    allowed_hosts: frozenset[str] = field(default_factory=lambda: allowed_hosts_for("127.0.0.1"))
    extra_origins: frozenset[str] = frozenset()  # --allow-host names: origins a proxy may present
    token: str | None = None
    max_body: int = 64 * 1024
    max_upload: int = 5 * 1024 * 1024

    @classmethod
    def for_bind(cls, host: str, allow_hosts: Iterable[str] = (), token: str | None = None) -> SecurityConfig:
        extra = frozenset(h.strip().lower() for h in allow_hosts if h.strip())
        return cls(allowed_hosts=allowed_hosts_for(host, extra), extra_origins=extra, token=token or None)


def _split_host(value: str) -> str:
    """'Example.com:8000' → 'example.com'; '[::1]:80' → '::1'."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False


class Refused(Exception):
    def __init__(self, status: int, field: str, reason: str) -> None:
        self.status = status
        self.field = field
        self.reason = reason
        super().__init__(f"{field}: {reason}")


class Guard:
    """The ASGI middleware (pure ASGI, so it sees WebSockets too)."""

    def __init__(self, app: ASGIApp, config: SecurityConfig) -> None:
        self.app = app
        self.config = config

    # --- checks ------------------------------------------------------------------------------------------

    def _headers(self, scope: Scope) -> dict[str, str]:
        out: dict[str, str] = {}
        for key, value in scope.get("headers", []):
            out[key.decode("latin-1").lower()] = value.decode("latin-1")
        return out

    def _check_host(self, headers: dict[str, str]) -> str:
        raw = headers.get("host", "")
        host = _split_host(raw)
        if host in self.config.allowed_hosts:
            return raw
        if _is_ip(host) and ("0.0.0.0" in self.config.allowed_hosts or "::" in self.config.allowed_hosts):
            return raw
        raise Refused(
            400,
            "host",
            f"{raw[:100]!r} is not served here (allowed: {', '.join(sorted(self.config.allowed_hosts))}"
            "; add names with --allow-host)",
        )

    def _origin_ok(self, origin: str, host_header: str) -> bool:
        if origin == "null":
            return False
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            return False
        if parts.netloc.lower() == host_header.strip().lower():
            return True
        return (parts.hostname or "") in self.config.extra_origins

    def _check_origin(self, headers: dict[str, str], host_header: str, required: bool) -> None:
        origin = headers.get("origin")
        fetch_site = headers.get("sec-fetch-site")
        if origin is not None and not self._origin_ok(origin, host_header):
            raise Refused(403, "origin", f"cross-origin request refused (Origin {origin[:100]!r})")
        if fetch_site is not None and fetch_site not in ("same-origin", "none"):
            raise Refused(403, "origin", f"cross-site request refused (Sec-Fetch-Site {fetch_site[:40]!r})")
        if required and origin is None and fetch_site is None:
            raise Refused(403, "origin", "a form must come from this site's own pages (no Origin header)")

    def _token_ok(self, scope: Scope, headers: dict[str, str]) -> tuple[bool, bool]:
        """(authorized, via the query string)."""
        token = self.config.token
        if token is None:
            return True, False
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer ") and hmac.compare_digest(auth[7:].strip().encode(), token.encode()):
            return True, False
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except Exception:
            pass
        if TOKEN_COOKIE in cookie and hmac.compare_digest(cookie[TOKEN_COOKIE].value.encode(), token.encode()):
            return True, False
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        if "token" in query and hmac.compare_digest(query["token"].encode(), token.encode()):
            return True, True
        return False, False

    # --- the middleware -----------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = self._headers(scope)
        try:
            host_header = self._check_host(headers)
            authorized, via_query = self._token_ok(scope, headers)
            if not authorized:
                raise Refused(401, "token", "an access token is required (see the server's start message)")
            if kind == "websocket":
                self._check_origin(headers, host_header, required=False)
            elif scope["method"] in UNSAFE_METHODS:
                self._check_post(scope, headers, host_header)
        except Refused as refused:
            if kind == "websocket":
                await self._refuse_socket(receive, send, refused)
            else:
                await self._refuse_http(scope, send, refused)
            return
        if kind == "http" and via_query and scope["method"] == "GET":
            await self._set_token_cookie(scope, send)
            return
        if kind == "websocket":
            await self.app(scope, receive, send)
            return
        await self.app(scope, self._limited(scope, receive), self._with_headers(send))

    def _check_post(self, scope: Scope, headers: dict[str, str], host_header: str) -> None:
        media = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        is_form = media in ("application/x-www-form-urlencoded", "multipart/form-data", "text/plain")
        self._check_origin(headers, host_header, required=is_form)
        path = scope["path"]
        limit = self.config.max_upload if path in UPLOAD_PATHS else self.config.max_body
        length = headers.get("content-length")
        if length is None:
            if headers.get("transfer-encoding"):
                raise Refused(411, "body", "send the body with a Content-Length")
            length = "0"
        if not (length.isascii() and length.isdigit()) or len(length) > 15:  # HTTP's digits: not "³", not "١٢"
            raise Refused(400, "body", "Content-Length must be a whole number")
        if int(length) > limit:
            raise Refused(413, "body", f"at most {limit} bytes, got {length}")
        # A DELETE without a body has no type to say (and no page sends a DELETE cross-site without a preflight)
        bodiless = scope["method"] == "DELETE" and int(length) == 0
        if path.startswith("/api/") and path not in UPLOAD_PATHS and media != "application/json" and not bodiless:
            raise Refused(415, "content-type", f"must be application/json, got {media[:60]!r}")

    def _limited(self, scope: Scope, receive: Receive) -> Receive:
        """The body never exceeds its declared length (h11 enforces it; this is the belt to those braces)."""
        if scope["method"] not in UNSAFE_METHODS:
            return receive
        limit = self.config.max_upload if scope["path"] in UPLOAD_PATHS else self.config.max_body
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    return {"type": "http.disconnect"}
            return message

        return limited

    def _with_headers(self, send: Send) -> Send:
        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {k.lower() for k, _ in message.get("headers", [])}
                extra = [(k, v) for k, v in SECURITY_HEADERS if k not in present]
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        return sending

    async def _refuse_http(self, scope: Scope, send: Send, refused: Refused) -> None:
        body = json.dumps({"error": f"{refused.field}: {refused.reason}", "field": refused.field}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        if refused.status == 401:
            headers.append((b"www-authenticate", b'Bearer realm="oncallsim"'))
        await send({"type": "http.response.start", "status": refused.status, "headers": [*headers, *SECURITY_HEADERS]})
        await send({"type": "http.response.body", "body": body})

    async def _refuse_socket(self, receive: Receive, send: Send, refused: Refused) -> None:
        message = await receive()  # websocket.connect
        if message["type"] != "websocket.connect":
            return
        # closing before accepting answers the handshake with HTTP 403: the page never gets a socket
        await send({"type": "websocket.close", "code": 4403 if refused.status != 401 else 4401})

    async def _set_token_cookie(self, scope: Scope, send: Send) -> None:
        """``?token=T`` once: a cookie (HttpOnly, SameSite=Strict) and a redirect to the same page without it."""
        query = [(k, v) for k, v in parse_qsl(scope.get("query_string", b"").decode("latin-1")) if k != "token"]
        location = scope["path"] + ("?" + urlencode(query) if query else "")
        secure = "; Secure" if scope.get("scheme") == "https" else ""
        cookie = f"{TOKEN_COOKIE}={self.config.token}; Path=/; HttpOnly; SameSite=Strict{secure}"
        await send(
            {
                "type": "http.response.start",
                "status": 303,
                "headers": [
                    (b"location", location.encode()),
                    (b"set-cookie", cookie.encode()),
                    (b"content-length", b"0"),
                    *SECURITY_HEADERS,
                ],
            }
        )
        await send({"type": "http.response.body", "body": b""})

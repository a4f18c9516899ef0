"""A room's tokens: one for the players, one for the facilitator, each unguessable (the room's id is not enough
to join or act), compared in constant time. The facilitator's is kept only as its hash."""

from __future__ import annotations

import hashlib
import hmac
import secrets

__all__ = ["digest", "matches", "new_token"]


def new_token() -> str:
    return secrets.token_urlsafe(24)  # 192 bits


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


def matches(given: object, expected: str) -> bool:
    """Constant time in the token's content (a wrong type or an over-long token is simply wrong)."""
    if not isinstance(given, str) or len(given) > 200:
        return False
    return hmac.compare_digest(given.encode("utf-8", "replace"), expected.encode("utf-8"))

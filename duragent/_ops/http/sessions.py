"""Browser sessions for our HTTP surfaces (the codec endpoint, the runs API's approvals inbox): a person types
their token into a login form once; the cookie then carries a random session id, never the token.

The server keeps only a digest of each session id, with its expiry and whose it is: a leaked cookie is one
session (ended by logout or its expiry), not the long-lived token, and a leaked server memory dump holds no
usable session ids.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections.abc import Callable
from http.cookies import SimpleCookie
from typing import Generic, TypeVar

Owner = TypeVar("Owner")

SESSION_SECONDS = 12 * 3600
MAX_SESSIONS = 1024


class Sessions(Generic[Owner]):
    """Session id digest -> (expiry, owner). At most `MAX_SESSIONS`: the oldest go first."""

    def __init__(self, seconds: float = SESSION_SECONDS, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self.clock = clock
        self._sessions: dict[bytes, tuple[float, Owner]] = {}
        self._lock = threading.Lock()

    def start(self, owner: Owner) -> str:
        session = secrets.token_urlsafe(32)
        now = self.clock()
        with self._lock:
            self._sessions = {k: v for k, v in self._sessions.items() if v[0] > now}
            while len(self._sessions) >= MAX_SESSIONS:
                self._sessions.pop(min(self._sessions, key=lambda k: self._sessions[k][0]))
            self._sessions[_digest(session)] = (now + self.seconds, owner)
        return session

    def owner(self, session: str | None) -> Owner | None:
        """Whose live session this is, or None."""
        if not session:
            return None
        with self._lock:
            found = self._sessions.get(_digest(session))
        if found is None or found[0] <= self.clock():
            return None
        return found[1]

    def valid(self, session: str | None) -> bool:
        return self.owner(session) is not None

    def end(self, session: str | None) -> None:
        if session:
            with self._lock:
                self._sessions.pop(_digest(session), None)


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode()).digest()


def cookie_value(cookie_header: str | None, name: str) -> str | None:
    """The value of cookie `name` in a `Cookie:` header, or None (a malformed header counts as none)."""
    cookies: SimpleCookie = SimpleCookie()
    try:
        cookies.load(cookie_header or "")
    except Exception:
        return None
    morsel = cookies.get(name)
    return morsel.value if morsel else None


def set_cookie(name: str, value: str, max_age: int, *, secure: bool) -> str:
    """A `Set-Cookie` value: HttpOnly (no script reads it) and SameSite=Strict (never sent on requests another
    site makes, so no cross-site request can act with it)."""
    return f"{name}={value}; Max-Age={max_age}; Path=/; HttpOnly; SameSite=Strict" + ("; Secure" if secure else "")

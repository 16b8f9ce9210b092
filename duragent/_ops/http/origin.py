"""Cross-site requests that change something are refused: `POST /login`, `POST /logout`, and, as
defence in depth, every other POST of an app we serve.

A page on another site can make a browser POST a form to us (login CSRF: the victim signed in as the
attacker; logout CSRF). Browsers say where such a request comes from; non-browser clients say nothing:

- `Origin` present: it must be this server's own origin (its host and port are the request's `Host`, or the
  `X-Forwarded-Host` a proxy that rewrites `Host` sends), or one the app lets call it cross-origin (the codec
  endpoint's CORS origins, the Web UI). `Origin: null` (a sandboxed frame, a redirect across sites) is
  refused, unless the browser's `Sec-Fetch-Site` says `same-origin`: under our `Referrer-Policy: no-referrer`
  Chromium sends `Origin: null` on our own pages' form POSTs (the inbox's sign-in: tests/ops/test_inbox.py).
  (A page cannot make a browser send `X-Forwarded-Host` to us: it is no CORS-safelisted header, so
  it needs a preflight, which we never grant.)
- `Sec-Fetch-Site` present: `same-origin`, or `none` (typed by the user). `same-site` and `cross-site` are
  refused unless the `Origin` is one the app allows cross-origin.
- Neither present: allowed. curl, the CLI, httpx and other programs send neither, and they hold the token
  themselves: they have no ambient credential a third party could borrow. Every current browser sends
  `Origin` on a POST (Chrome, Firefox, Safari: since 2019-2020), so a browser carrying our cookie is judged
  by it; a browser too old to send either is the one left to SameSite=Strict.

Refused: 403 `{"error": ...}`, before authentication and before the body is read: nothing changes (no
session started or ended, no cookie set, no decision made).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.responses import JSONResponse

SAFE_METHODS = ("GET", "HEAD", "OPTIONS")  # change nothing; OPTIONS is the CORS preflight
_SAME = ("same-origin", "none")
_DEFAULT_PORTS = {"http": "80", "https": "443"}


def same_origin(origin: str, host: str) -> bool:
    """Whether `Origin` names the server the request's `Host` names (scheme's default port made explicit)."""
    try:
        parts = urlsplit(origin.strip().lower())
        port = str(parts.port) if parts.port is not None else _DEFAULT_PORTS.get(parts.scheme, "")
    except ValueError:
        return False
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname or parts.path or parts.query:
        return False
    name = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    host = host.strip().lower()
    if not host.startswith("[") and host.count(":") > 1:  # a bare IPv6 address (::1)
        host = f"[{host}]"
    return host in (f"{name}:{port}", name if port == _DEFAULT_PORTS[parts.scheme] else "")


def cross_site(headers: Headers, allowed_origins: frozenset[str]) -> str | None:
    """Why this request is refused as cross-site, or None."""
    origin = headers.get("origin")
    if origin is not None and origin.strip() in allowed_origins:
        return None  # an origin the app lets call it cross-origin (CORS)
    fetch_site = headers.get("sec-fetch-site")
    if origin == "null" and fetch_site is not None and fetch_site.strip().lower() == "same-origin":
        # Our pages send `Referrer-Policy: no-referrer`, under which Chromium sends `Origin: null` on a form POST
        # of our own page; the browser's own `Sec-Fetch-Site` (which no page can set) says it is ours.
        return None
    ours = (headers.get("host", ""), headers.get("x-forwarded-host", "").split(",", 1)[0])
    if origin is not None and not any(host and same_origin(origin, host) for host in ours):
        return f"a request from {origin[:100]!r} may not change anything here"
    if fetch_site is not None and fetch_site.strip().lower() not in _SAME:
        return f"a {fetch_site[:20]!r} request may not change anything here"
    return None


class SameOrigin:
    """ASGI middleware: 403 for a request that is not GET/HEAD/OPTIONS and comes from another site (above)."""

    def __init__(self, app: Any, allowed_origins: Iterable[str] = ()) -> None:
        self.app = app
        self.allowed_origins = frozenset(allowed_origins)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] not in SAFE_METHODS:
            why = cross_site(Headers(scope=scope), self.allowed_origins)
            if why is not None:
                await JSONResponse({"error": f"cross-site request refused: {why}"}, status_code=403)(
                    scope, receive, send
                )
                return
        await self.app(scope, receive, send)

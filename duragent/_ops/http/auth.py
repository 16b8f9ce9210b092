"""Who may call our HTTP endpoints: bearer tokens with roles, the Host allowlist, and the start-up rule.

One module for every HTTP surface (the runs API for both engines, and the codec endpoint with its one token):

- Tokens: `AGENT_API_TOKENS="token1=maria:approver,token2=ops:viewer"` or `AGENT_API_TOKENS_FILE` (the same
  entries, one per line, `#` comments). A token is at least 16 characters of `A-Z a-z 0-9 . _ ~ + / -`
  (`python -c "import secrets; print(secrets.token_urlsafe(32))"`). Roles: `viewer` reads; `approver` may
  also change things (POST). The name is the identity recorded in the audit trail.
- Every request needs `Authorization: Bearer <token>`: none or an unknown one → 401, a viewer's POST → 403.
  Tokens are compared in constant time (a digest of each configured token, every one compared).
- No token configured: the server refuses to start, unless `--insecure-no-auth` is given AND it binds a
  loopback address; then every caller is the one anonymous approver.
- The Host header must be localhost, 127.0.0.1 or ::1 (any port), or a configured name: a DNS-rebinding
  page cannot read responses through the browser.

Nothing here puts a token into an error message or a repr.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from duragent._config.loopback import is_loopback
from duragent._config.secrets import value_or_file
from duragent._config.settings import API_TOKENS_ENV, Settings
from duragent._ops.http.connections import vouch
from duragent._ops.http.sessions import Sessions, cookie_value

ROLES = ("viewer", "approver")  # each role may do what the ones before it may
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")
TOKENS_ENV = API_TOKENS_ENV
TOKENS_FILE_ENV = "AGENT_API_TOKENS_FILE"
_TOKEN = re.compile(r"^[A-Za-z0-9._~+/-]{16,}$")
_NAME = re.compile(r"^[^\s=:,#][^=,#]{0,99}$")


class AuthConfigError(ValueError):
    """The token configuration or the bind address is unusable. Messages name entries by position only."""


@dataclass(frozen=True)
class Principal:
    """Who called: the name from the token's entry (what the audit trail records) and its role."""

    name: str
    role: str

    def may(self, role: str) -> bool:
        return ROLES.index(self.role) >= ROLES.index(role)


ANONYMOUS = Principal("anonymous (insecure-no-auth)", "approver")


@dataclass(frozen=True)
class TokenTable:
    _digests: tuple[tuple[bytes, Principal], ...] = field(repr=False)

    @classmethod
    def parse(cls, text: str, *, source: str = TOKENS_ENV) -> TokenTable:
        entries: list[tuple[bytes, Principal]] = []
        for raw_line in text.splitlines():
            for entry in raw_line.split("#", 1)[0].split(","):
                entry = entry.strip()
                if not entry:
                    continue
                where = f"{source}: entry {len(entries) + 1}"
                token, sep, who = entry.partition("=")
                name, _, role = who.strip().rpartition(":")
                if not sep or not name.strip():
                    raise AuthConfigError(f"{where} is not of the form token=name:role")
                if not _TOKEN.match(token.strip()):
                    raise AuthConfigError(
                        f"{where}: the token must be at least 16 characters of A-Z a-z 0-9 . _ ~ + / -"
                    )
                if not _NAME.match(name.strip()):
                    raise AuthConfigError(f"{where}: the name must be 1-100 characters without '=', ',' or '#'")
                if role not in ROLES:
                    raise AuthConfigError(f"{where}: the role must be one of {', '.join(ROLES)}")
                digest = _digest(token.strip())
                if any(hmac.compare_digest(digest, known) for known, _ in entries):
                    raise AuthConfigError(f"{where}: this token is configured twice")
                entries.append((digest, Principal(name.strip(), role)))
        if not entries:
            raise AuthConfigError(f"{source}: no tokens found")
        return cls(tuple(entries))

    @classmethod
    def of(cls, token: str, principal: Principal) -> TokenTable:
        """A table of one token the operator chose (the codec endpoint's `AGENT_CODEC_AUTH_TOKEN`)."""
        return cls(((_digest(token), principal),))

    def identify(self, token: str | None) -> Principal | None:
        """The principal whose token this is, or None. Every configured digest is compared, in constant time."""
        if not token:
            return None
        candidate = _digest(token)
        found: Principal | None = None
        for digest, principal in self._digests:
            if hmac.compare_digest(candidate, digest):
                found = principal
        return found

    def __len__(self) -> int:
        return len(self._digests)


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()  # equal lengths: compare_digest is then constant time


def load_tokens(settings: Settings) -> TokenTable | None:
    """The tokens from AGENT_API_TOKENS or AGENT_API_TOKENS_FILE (not both), or None when neither is set."""
    found = value_or_file(settings.api_tokens, settings.api_tokens_file, TOKENS_ENV, TOKENS_FILE_ENV, AuthConfigError)
    return TokenTable.parse(found[0], source=found[1]) if found else None


# -- where the server listens, and which Host it answers -------------------------------------------------


def check_startup(host: str, authenticated: bool, insecure_no_auth: bool, *, what: str, token_env: str) -> None:
    """Refuse to serve without authentication, unless explicitly asked to on a loopback address."""
    if authenticated:
        return
    if not insecure_no_auth:
        raise AuthConfigError(
            f"{what}: refusing to start without {token_env}; set it, or pass --insecure-no-auth "
            "(loopback only) to let anyone who reaches the port in"
        )
    if not is_loopback(host):
        raise AuthConfigError(f"{what}: --insecure-no-auth is allowed on a loopback address only, not {host}")


def allowed_hosts(extra: Iterable[str] = ()) -> frozenset[str]:
    return frozenset(h.strip().lower() for h in (*LOCAL_HOSTS, *extra) if h.strip())


_PORT = re.compile(r"^(?::[0-9]{0,5})?$")  # what may follow the host in a Host header: nothing, or a port


def host_allowed(header: str | None, allowed: frozenset[str]) -> bool:
    """Whether a Host header names an allowed host (any port). Whatever follows the host must be a port:
    `localhost:80@evil` or `[::1]evil` is not localhost."""
    if not header:
        return False
    header = header.strip().lower()
    if header.startswith("["):  # [::1]:8765
        host, _, rest = header[1:].partition("]")
    elif header.count(":") == 1:  # name:port
        host, rest = header.split(":")[0], header[header.index(":") :]
    else:  # a bare name, or a bare IPv6 address (::1)
        host, rest = header, ""
    return host in allowed and _PORT.match(rest) is not None


def bearer(authorization: str | None) -> str | None:
    scheme, _, credential = (authorization or "").partition(" ")
    return credential.strip() or None if scheme.lower() == "bearer" else None


# -- FastAPI ----------------------------------------------------------------------------------------------


SESSION_COOKIE = "agent_api_session"


class HttpAuth:
    """The FastAPI side: `install(app)` once, then `Depends(auth.require("viewer"))` on each route.

    A caller is identified by its bearer token or, for a browser page, by the session cookie a login with
    that token started (`sessions`, duragent/_ops/http/login.py): the cookie names a server-side session, never the
    token.
    Each app names its own `cookie`: cookies are per host, not per port, so two local servers must not share
    one name."""

    def __init__(
        self,
        tokens: TokenTable | None,
        *,
        insecure_no_auth: bool = False,
        hosts: Iterable[str] = (),
        cookie: str = SESSION_COOKIE,
        sessions: Sessions[Principal] | None = None,
    ) -> None:
        self.tokens = tokens
        self.insecure_no_auth = insecure_no_auth and tokens is None
        self.hosts = allowed_hosts(hosts)
        self.cookie = cookie
        self.sessions: Sessions[Principal] = sessions if sessions is not None else Sessions()

    def install(self, app: Any) -> None:
        app.add_middleware(TrustedHosts, hosts=self.hosts)

        @app.exception_handler(Denied)
        async def denied(request: Request, exc: Denied) -> JSONResponse:
            headers = {"WWW-Authenticate": "Bearer"} if exc.status_code == 401 else {}
            return JSONResponse({"error": exc.message}, status_code=exc.status_code, headers=headers)

    def principal(self, authorization: str | None, cookie: str | None = None) -> Principal:
        if self.tokens is None:
            if self.insecure_no_auth:
                return ANONYMOUS
            raise Denied(401, "a bearer token is required")
        token = bearer(authorization)
        principal = self.tokens.identify(token) if token else self.sessions.owner(cookie_value(cookie, self.cookie))
        if principal is None:
            raise Denied(401, "a valid bearer token is required")
        return principal

    def identify(self, request: Request) -> Principal | None:
        """The caller, or None when not authenticated (pages redirect to the login form instead of a 401)."""
        try:
            return self.authenticated(request)
        except Denied:
            return None

    def authenticated(self, request: Request) -> Principal:
        """The caller (else Denied 401), whose connection is then vouched for: no stranger's connection takes
        its slot (duragent/_ops/http/connections.py). Nobody is vouched for under --insecure-no-auth."""
        principal = self.principal(request.headers.get("authorization"), request.headers.get("cookie"))
        if principal is not ANONYMOUS:
            vouch(request.scope)
        return principal

    def log_in(self, token: str) -> str | None:
        """A new session id for the principal whose token this is, or None for an unknown token."""
        principal = self.tokens.identify(token) if self.tokens is not None else None
        return self.sessions.start(principal) if principal is not None else None

    def log_out(self, request: Request) -> None:
        """End, on the server, the session the request's cookie names: a copy of that cookie is worth nothing."""
        self.sessions.end(cookie_value(request.headers.get("cookie"), self.cookie))

    def require(self, role: str) -> Callable[..., Principal]:
        """A FastAPI dependency: the caller's Principal, or 401 (no or unknown token) / 403 (role too low)."""
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}")

        def dependency(request: Request) -> Principal:
            principal = self.authenticated(request)
            if not principal.may(role):
                raise Denied(403, f"{principal.name} is a {principal.role}; this needs {role}")
            return principal

        return dependency


class Denied(Exception):
    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.message = message


class TrustedHosts:
    """ASGI middleware: 400 unless the Host header is allowed. (Starlette's TrustedHostMiddleware cuts the
    Host at the first ':', so it can never match `[::1]:port`; this uses `host_allowed` instead.)"""

    def __init__(self, app: Any, hosts: frozenset[str]) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            host = dict(scope.get("headers") or []).get(b"host", b"").decode("latin-1")
            if not host_allowed(host, self.hosts):
                await JSONResponse({"error": "host not allowed"}, status_code=400)(scope, receive, send)
                return
        await self.app(scope, receive, send)

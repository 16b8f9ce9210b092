"""What every app we serve is built on — the runs API (duragent/_ops/http/app.py) and the codec endpoint
(duragent/_ops/http/codec.py) — so both answer one threat model the same way:

- the Host check first (DNS rebinding; duragent/_ops/http/auth.py), then cross-site POSTs refused
  (duragent/_ops/http/origin.py), then CORS only where an app names origins;
- a bounded request body (`max_body_bytes`; `/login` 4 KiB): past it 413, before the rest is read — by the
  declared length at once, or as a chunked body grows (duragent/_ops/http/limits.py);
- one error shape, `{"error": why}`, for what the app raises (`ApiError`), what the framework answers itself
  (404, 405 with `Allow`, 413) and malformed input (422 naming the field);
- bearer tokens or a session cookie (`HttpAuth`), and the one login/logout flow (duragent/_ops/http/login.py).

What one connection may hold (how many at once, how long a client may stall) is the server's:
duragent/_ops/http/serve.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

from duragent._ops.http.auth import HttpAuth
from duragent._ops.http.errors import ApiError
from duragent._ops.http.limits import MAX_BODY_BYTES, BodyLimit, field_errors, unreadable_body
from duragent._ops.http.login import MAX_LOGIN_BYTES, add_login
from duragent._ops.http.origin import SameOrigin


def new_app(
    auth: HttpAuth,
    *,
    title: str,
    home: str,
    login_note: str = "",
    secure_cookie: bool = False,
    description: str = "",
    max_body_bytes: int = MAX_BODY_BYTES,
    cors_origins: Iterable[str] = (),
    cors_headers: Iterable[str] = (),
    lifespan: Any = None,
) -> FastAPI:
    """`home`: where a sign-in leads; `login_note`: a line of HTML under the login form; `cors_origins`: the
    exact origins whose pages may call this app with credentials (none: CORS is off)."""
    app = FastAPI(
        lifespan=lifespan,
        title=title,
        description=description,
        docs_url=None,  # a schema is for authenticated callers: an app serves its own behind a token, or none
        redoc_url=None,
        openapi_url=None,
    )
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes, paths={"/login": MAX_LOGIN_BYTES})
    origins = sorted(set(cors_origins))
    if origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=origins,  # compared whole: no wildcard, no pattern
            allow_credentials=True,
            allow_methods=["POST"],
            allow_headers=list(cors_headers),
            max_age=600,
        )
    # Cross-site POSTs refused before anything else reads them: login and logout CSRF, and every other
    # change, as defence in depth. After the Host check (a rebinding page's Origin would match its Host).
    app.add_middleware(SameOrigin, allowed_origins=origins)
    auth.install(app)  # added last, so it runs first: the Host check, and the 401/403 bodies

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse({"error": exc.message}, status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(HTTPException)
    async def routing(request: Request, exc: HTTPException) -> JSONResponse:
        # What the framework answers itself (no such route 404, a method a route lacks 405, a body it cannot
        # decode 400) and a body past the limit (413): in the one error shape too, with its headers (`Allow`).
        if exc.status_code == 400 and exc.__cause__ is not None:  # the body could not even be decoded
            return JSONResponse(unreadable_body(exc.__cause__), status_code=422)
        message, headers = str(exc.detail), dict(exc.headers or {})
        if exc.status_code == 404:
            message = f"no such route: {request.method} {request.url.path}"
        elif exc.status_code == 405:
            allowed = next((v for k, v in headers.items() if k.lower() == "allow"), "")
            message = f"{request.method} is not allowed on {request.url.path}" + (
                f" (only {allowed})" if allowed else ""
            )
        return JSONResponse({"error": message}, status_code=exc.status_code, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(field_errors(list(exc.errors())), status_code=422)

    @app.exception_handler(ClientDisconnect)
    async def gone(request: Request, exc: ClientDisconnect) -> Response:
        return Response(status_code=400)  # the client left mid-body (or stalled and was closed): nobody to answer

    add_login(app, auth, title=title, home=home, note=login_note, secure_cookie=secure_cookie)
    return app

"""The one sign-in flow of every app we serve, for the pages a browser opens (the approvals inbox; the codec
endpoint, for the Temporal Web UI):

    GET  /login    the form (and who is signed in, with a sign-out button)
    POST /login    `token=...` (at most 4 KiB) → 303 to the app's home with a session cookie; a wrong token → 401
    POST /logout   ends that session on the server and clears the cookie → 303 to /login

The cookie names a server-side session (duragent/_ops/http/sessions.py), never the token: HttpOnly, SameSite=Strict,
Secure with `--secure-cookie` or behind a proxy that says `X-Forwarded-Proto: https`. Both POSTs refuse a
request from another site before they run (duragent/_ops/http/origin.py): no login or logout CSRF.
"""

from __future__ import annotations

from urllib.parse import parse_qs

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from duragent._ops.http.auth import ANONYMOUS, HttpAuth
from duragent._ops.http.pages import escape, html_page, signed_in
from duragent._ops.http.sessions import set_cookie

MAX_LOGIN_BYTES = 4096


def add_login(
    app: FastAPI, auth: HttpAuth, *, title: str, home: str, note: str = "", secure_cookie: bool = False
) -> None:
    """`home`: where a successful sign-in leads; `note`: a line of HTML under the form."""

    def cookie(request: Request, value: str, max_age: int) -> str:
        secure = secure_cookie or request.headers.get("x-forwarded-proto") == "https"
        return set_cookie(auth.cookie, value, max_age, secure=secure)

    def form(request: Request, message: str = "", status: int = 200) -> Response:
        who = auth.identify(request)
        if who is ANONYMOUS:
            state = "<p>This server needs no token (started with --insecure-no-auth).</p>"
        else:
            state = signed_in(who) if who is not None else ""
        body = (
            (f"<p class='outcome rejected'>{escape(message)}</p>" if message else "")
            + state
            + "<form method=post action=/login><label>Token <input type=password name=token autofocus></label> "
            "<button>Sign in</button></form>" + (f"<p>{note}</p>" if note else "")
        )
        return html_page(title, body, status=status)

    @app.get("/login", include_in_schema=False)
    async def login_form(request: Request) -> Response:
        return form(request)

    @app.post("/login", include_in_schema=False)
    async def login(request: Request) -> Response:
        body = await request.body()  # at most MAX_LOGIN_BYTES: duragent/_ops/http/base.py bounds this path
        token = (parse_qs(body.decode(errors="replace")).get("token") or [""])[0]
        session = auth.log_in(token.strip())
        if session is None:
            return form(request, "That token is not valid.", 401)
        response = RedirectResponse(home, status_code=303)
        response.headers["set-cookie"] = cookie(request, session, int(auth.sessions.seconds))
        return response

    @app.post("/logout", include_in_schema=False)
    async def logout(request: Request) -> Response:
        auth.log_out(request)
        response = RedirectResponse("/login", status_code=303)
        response.headers["set-cookie"] = cookie(request, "", 0)
        return response

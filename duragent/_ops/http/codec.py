"""The remote codec endpoint: Temporal's codec server protocol, so the Web UI and the CLI can show
encrypted payloads decrypted — to whoever may decrypt them.

    python starter.py codec-server --port 8081                 # keys from AGENT_CODEC_KEYS or AGENT_CODEC_KEY_FILE
    temporal server start-dev --ui-codec-endpoint http://localhost:8081
    temporal workflow show -w RUN_ID --codec-endpoint http://localhost:8081 --codec-auth "Bearer $TOKEN"

Routes: `POST /encode`, `POST /decode` (also under a prefix, e.g. `/{namespace}/decode`) with a JSON body
`{"payloads": [...]}` (protobuf JSON of `temporal.api.common.v1.Payloads`) and the same shape back. Payloads
are bound to their namespace (duragent/_config/codec/aesgcm.py): the one the request names — the `X-Namespace` header
the Web UI and the CLI send, else the path's prefix — else `--namespace` (default: TEMPORAL_NAMESPACE);
CORS preflights; `GET /health`; `GET|POST /login` and `POST /logout` for the Web UI.

It is its own app (its own port, token and cookie) built like the runs API, by duragent/_ops/http/base.py's
`new_app`, with the same login flow (duragent/_ops/http/login.py), sessions, Host check, error shape and server
bounds (duragent/_ops/http/serve.py): one HTTP stack, reviewed once.

Access: encode/decode need `Authorization: Bearer <AGENT_CODEC_AUTH_TOKEN>` (or the token in the file
`AGENT_CODEC_AUTH_TOKEN_FILE` names: compose's secret; the CLI's `--codec-auth`) or
the session cookie `/login` sets after the token is typed in (what the Web UI sends with "Include
cross-origin credentials" on). The token is checked before a byte of the body is read. The cookie holds a
random session id, never the token; sessions expire after 12 hours and `/logout` ends one. Without a token
the server refuses to start, unless `--insecure-no-auth` is given and it binds a loopback address: then
anyone who can reach the port can decrypt.

Every request's Host header must be localhost, 127.0.0.1 or ::1, or a name in `--allowed-host` /
`AGENT_CODEC_ALLOWED_HOSTS` (comma-separated): a DNS-rebinding page cannot use a browser to read it. CORS
answers only the configured origins, compared whole (`--cors-origin`, or `AGENT_CODEC_CORS_ORIGINS`;
default: the local Web UIs). Bodies are bounded (64 MiB of payloads, 4 KiB for `/login`); a client that
stalls for 10 s is closed, and past 64 connections at once the server answers 503.

The server never logs or returns payload contents other than in the response to an authorised request.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from fastapi import APIRouter, Depends, FastAPI
from google.protobuf import json_format
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from temporalio.api.common.v1 import Payload, Payloads

from duragent._config.codec.aesgcm import AesGcmCodec, DecryptionError
from duragent._config.codec.keys import UnknownKeyError
from duragent._ops.http.auth import HttpAuth, Principal, TokenTable
from duragent._ops.http.base import new_app
from duragent._ops.http.sessions import Sessions

DEFAULT_ORIGINS = (
    "http://localhost:8233",
    "http://127.0.0.1:8233",
    "http://localhost:8080",
    "http://127.0.0.1:8080",
)
MAX_BODY = 64 * 1024 * 1024
COOKIE = "agent_codec_session"  # not the runs API's: cookies are per host, and both may run on localhost
TOKEN_HOLDER = Principal("codec token holder", "viewer")
CORS_HEADERS = ("Content-Type", "X-Namespace", "Authorization")  # what the Web UI and the CLI send
WEB_UI_NOTE = "Then, in the Web UI's codec settings, turn on <em>Include cross-origin credentials</em>."

Operation = Callable[[Sequence[Payload]], list[Payload]]


def codec_auth(
    token: str | None,
    *,
    insecure_no_auth: bool = False,
    hosts: Iterable[str] = (),
    sessions: Sessions[Principal] | None = None,
) -> HttpAuth:
    """Who may encode and decode: the holder of the one token (or their browser's session)."""
    tokens = TokenTable.of(token, TOKEN_HOLDER) if token else None
    return HttpAuth(tokens, insecure_no_auth=insecure_no_auth, hosts=hosts, cookie=COOKIE, sessions=sessions)


def codec_router(codec: AesGcmCodec, auth: HttpAuth) -> APIRouter:
    router = APIRouter()
    holder = Depends(auth.require("viewer"))

    @router.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    # No body parameter: FastAPI would read the body before the token check. The handlers read it themselves.
    async def encode(request: Request, who: Principal = holder) -> Response:
        return await _answer(_for_request(codec, request).encrypt_all, request)

    async def decode(request: Request, who: Principal = holder) -> Response:
        return await _answer(_for_request(codec, request).decrypt_all, request)

    for name, handler in (("encode", encode), ("decode", decode)):
        for path in (f"/{name}", f"/{{prefix:path}}/{name}"):  # the CLI's templating puts a namespace first
            router.add_api_route(path, handler, methods=["POST"], include_in_schema=False)
    return router


def _for_request(codec: AesGcmCodec, request: Request) -> AesGcmCodec:
    """The codec bound to the namespace the request names: `X-Namespace`, else the prefix of
    `/{namespace}/decode` (its last segment, as the CLI's templating puts it), else the server's own."""
    named = request.headers.get("X-Namespace", "").strip()
    if not named:
        prefix = str(request.path_params.get("prefix", "")).strip("/")
        named = prefix.rsplit("/", 1)[-1]
    return codec.in_namespace(named) if named else codec


async def _answer(operation: Operation, request: Request) -> Response:
    body = await request.body()
    try:
        # Off the event loop: a large body is seconds of AES-GCM.
        answer = await run_in_threadpool(_apply, operation, body)
    except json_format.ParseError as exc:
        return JSONResponse({"error": f"not a Payloads JSON body: {exc}"}, status_code=400)
    except (UnknownKeyError, DecryptionError) as exc:
        return JSONResponse({"error": str(exc)}, status_code=422)
    return Response(answer, media_type="application/json", headers={"cache-control": "no-store"})


def _apply(operation: Operation, body: bytes) -> bytes:
    payloads = json_format.Parse(body, Payloads(), ignore_unknown_fields=True)
    return json_format.MessageToJson(Payloads(payloads=operation(payloads.payloads)), indent=None).encode()


def create_codec_app(
    codec: AesGcmCodec, auth: HttpAuth, *, origins: Iterable[str] = DEFAULT_ORIGINS, secure_cookie: bool = False
) -> FastAPI:
    app = new_app(
        auth,
        title="Codec server",
        home="/login",  # after a sign-in, the login page again: who is signed in, and what to switch on in the UI
        login_note=WEB_UI_NOTE,
        secure_cookie=secure_cookie,
        max_body_bytes=MAX_BODY,  # read only by /encode and /decode, after the token check (/login: 4 KiB)
        cors_origins=origins,
        cors_headers=CORS_HEADERS,
    )
    app.include_router(codec_router(codec, auth))
    return app

"""The remote codec endpoint: Temporal's codec server protocol, so the Web UI and the CLI can show
encrypted payloads decrypted — to whoever may decrypt them.

    python -m ops.http.codec --port 8081                 # keys from AGENT_CODEC_KEYS or AGENT_CODEC_KEY_FILE
    temporal server start-dev --ui-codec-endpoint http://localhost:8081
    temporal workflow show -w RUN_ID --codec-endpoint http://localhost:8081 --codec-auth "Bearer $TOKEN"

Routes: `POST /encode`, `POST /decode` (also under a prefix, e.g. `/{namespace}/decode`) with a JSON body
`{"payloads": [...]}` (protobuf JSON of `temporal.api.common.v1.Payloads`) and the same shape back. Payloads
are bound to their namespace (config/codec/aesgcm.py): the one the request names — the `X-Namespace` header
the Web UI and the CLI send, else the path's prefix — else `--namespace` (default: TEMPORAL_NAMESPACE);
`OPTIONS` for CORS preflights; `GET /health`; `GET|POST /login` and `POST /logout` for the Web UI.

Access: encode/decode need `Authorization: Bearer <AGENT_CODEC_AUTH_TOKEN>` (or the token in the file
`AGENT_CODEC_AUTH_TOKEN_FILE` names: compose's secret; the CLI's `--codec-auth`) or
the session cookie `/login` sets after the token is typed in (what the Web UI sends with "Include
cross-origin credentials" on). The cookie holds a random session id, never the token; sessions expire after
12 hours and `/logout` ends one. Without a token the server refuses to start, unless `--insecure-no-auth` is
given and it binds a loopback address: then anyone who can reach the port can decrypt.

Every request's Host header must be localhost, 127.0.0.1 or ::1, or a name in `--allowed-host` /
`AGENT_CODEC_ALLOWED_HOSTS` (comma-separated): a DNS-rebinding page cannot use a browser to read it. CORS
answers only the configured origins (`--cors-origin`, or `AGENT_CODEC_CORS_ORIGINS`; default: the local Web
UIs). Unauthenticated clients are bounded: a socket timeout per request, `/login` bodies of at most 4 KiB,
and at most 64 connections at once (more get 503).

The server never logs or returns payload contents other than in the response to an authorised request.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import hmac
import html
import json
import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

from google.protobuf import json_format
from temporalio.api.common.v1 import Payloads

from config.codec.aesgcm import AesGcmCodec, DecryptionError
from config.codec.keys import KeyConfigError, UnknownKeyError, load_keyring
from config.secrets import env_or_file
from ops.http.auth import AuthConfigError, allowed_hosts, check_startup, host_allowed, hosts_from_env
from ops.http.sessions import SESSION_SECONDS, Sessions, cookie_value, set_cookie

log = logging.getLogger("ops.http.codec")

DEFAULT_ORIGINS = (
    "http://localhost:8233",
    "http://127.0.0.1:8233",
    "http://localhost:8080",
    "http://127.0.0.1:8080",
)
MAX_BODY = 64 * 1024 * 1024
MAX_LOGIN_BODY = 4 * 1024
COOKIE = "agent_codec_session"
REQUEST_TIMEOUT = 10.0
MAX_CONNECTIONS = 64


@dataclass(frozen=True)
class CodecService:
    codec: AesGcmCodec
    token: str | None = None
    origins: frozenset[str] = frozenset(DEFAULT_ORIGINS)
    secure_cookie: bool = False
    insecure_no_auth: bool = False  # no token: decode for anyone (main() allows it on loopback only)
    allowed_hosts: frozenset[str] = frozenset()  # besides localhost, 127.0.0.1, ::1
    request_timeout: float = REQUEST_TIMEOUT
    max_connections: int = MAX_CONNECTIONS
    session_seconds: float = SESSION_SECONDS
    clock: Callable[[], float] = time.monotonic
    sessions: Sessions[bool] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sessions", Sessions(self.session_seconds, self.clock))
        object.__setattr__(self, "allowed_hosts", allowed_hosts(self.allowed_hosts))

    def token_matches(self, candidate: str | None) -> bool:
        if not self.token or not candidate:
            return False
        return hmac.compare_digest(_digest(candidate), _digest(self.token))

    def authorised(self, headers: object) -> bool:
        if not self.token:
            return self.insecure_no_auth
        get = headers.get  # type: ignore[attr-defined]
        auth = get("Authorization") or ""
        scheme, _, credential = auth.partition(" ")
        if scheme.lower() == "bearer" and self.token_matches(credential.strip()):
            return True
        return self.sessions.valid(session_of(get("Cookie")))

    def apply(self, operation: str, body: bytes, namespace: str | None = None) -> bytes:
        payloads = json_format.Parse(body, Payloads(), ignore_unknown_fields=True)
        codec = self.codec.in_namespace(namespace) if namespace else self.codec
        if operation == "encode":
            result = codec.encrypt_all(payloads.payloads)
        else:
            result = codec.decrypt_all(payloads.payloads)
        return json_format.MessageToJson(Payloads(payloads=result), indent=None).encode()


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode()).digest()


def session_of(cookie_header: str | None) -> str | None:
    return cookie_value(cookie_header, COOKIE)


def _operation(path: str) -> str | None:
    last = path.rstrip("/").rsplit("/", 1)[-1]
    return last if last in ("encode", "decode") else None


def _namespace(path: str, headers: object) -> str | None:
    """The namespace a request names: `X-Namespace`, else the prefix of `/{namespace}/decode`."""
    named = (headers.get("X-Namespace") or "").strip()  # type: ignore[attr-defined]
    if named:
        return str(named)
    parts = [p for p in path.split("/") if p]
    return unquote(parts[-2]) if len(parts) >= 2 else None


class _Handler(BaseHTTPRequestHandler):
    server_version = "agent-codec"
    sys_version = ""
    service: CodecService  # set on the subclass make_server builds

    # -- plumbing -------------------------------------------------------------------------------

    def log_message(self, format: str, *args: object) -> None:
        log.info("%s %s", self.address_string(), format % args)

    def _cors(self) -> None:
        origin = self.headers.get("Origin")
        if origin and origin in self.service.origins:
            self.send_header("Access-Control-Allow-Origin", origin)
            self.send_header("Access-Control-Allow-Credentials", "true")
            self.send_header("Access-Control-Allow-Methods", "POST, OPTIONS")
            self.send_header("Access-Control-Allow-Headers", "Content-Type, X-Namespace, Authorization")
            self.send_header("Access-Control-Max-Age", "600")
        self.send_header("Vary", "Origin")

    def _send(self, status: HTTPStatus, body: bytes = b"", content_type: str = "application/json", **headers: str):
        self.send_response(status)
        self._cors()
        self.send_header("Cache-Control", "no-store")
        if body:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        if body and self.command != "HEAD":
            self.wfile.write(body)

    def _error(self, status: HTTPStatus, message: str, **headers: str) -> None:
        self._send(status, json.dumps({"error": message}).encode(), **headers)

    def _body(self, limit: int = MAX_BODY) -> bytes | None:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0 or length > limit:
            self.close_connection = True  # the body is never read: the connection cannot be reused
            self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"body must be at most {limit} bytes")
            return None
        return self.rfile.read(length)

    def _host_ok(self) -> bool:
        """DNS rebinding: a page on an attacker's name that resolves to 127.0.0.1 sends its own Host."""
        if host_allowed(self.headers.get("Host"), self.service.allowed_hosts):
            return True
        self.close_connection = True
        self._error(HTTPStatus.BAD_REQUEST, "host not allowed")
        return False

    # -- routes ---------------------------------------------------------------------------------

    def do_OPTIONS(self) -> None:
        if not self._host_ok():
            return
        # Preflights carry no credentials, by the browser's design: answer them without checking.
        self._send(HTTPStatus.NO_CONTENT)

    def do_GET(self) -> None:
        if not self._host_ok():
            return
        path = urlsplit(self.path).path
        if path == "/health":
            self._send(HTTPStatus.OK, b'{"status": "ok"}')
        elif path == "/login":
            self._login_page()
        elif _operation(path):
            self._error(HTTPStatus.METHOD_NOT_ALLOWED, "use POST", Allow="POST, OPTIONS")
        else:
            self._error(HTTPStatus.NOT_FOUND, "not found")

    def do_POST(self) -> None:
        if not self._host_ok():
            return None
        path = urlsplit(self.path).path
        if path == "/login":
            return self._login()
        if path == "/logout":
            self.service.sessions.end(session_of(self.headers.get("Cookie")))
            return self._send(HTTPStatus.SEE_OTHER, Location="/login", Set_Cookie=self._cookie("", 0))
        operation = _operation(path)
        if operation is None:
            return self._error(HTTPStatus.NOT_FOUND, "not found")
        if not self.service.authorised(self.headers):
            return self._error(
                HTTPStatus.UNAUTHORIZED, "a valid bearer token or session is required", WWW_Authenticate="Bearer"
            )
        body = self._body()
        if body is None:
            return None
        try:
            answer = self.service.apply(operation, body, _namespace(path, self.headers))
        except json_format.ParseError as exc:
            return self._error(HTTPStatus.BAD_REQUEST, f"not a Payloads JSON body: {exc}")
        except (UnknownKeyError, DecryptionError) as exc:
            return self._error(HTTPStatus.UNPROCESSABLE_ENTITY, str(exc))
        self._send(HTTPStatus.OK, answer)
        return None

    # -- the Web UI's session -------------------------------------------------------------------

    def _cookie(self, value: str, max_age: int) -> str:
        secure = self.service.secure_cookie or self.headers.get("X-Forwarded-Proto") == "https"
        # SameSite=Strict: sent on the UI's same-site fetches (another port of the same host, or a sibling
        # subdomain), never on requests another site makes.
        return set_cookie(COOKIE, value, max_age, secure=secure)

    def _login_page(self, message: str = "", status: HTTPStatus = HTTPStatus.OK) -> None:
        if not self.service.token:
            message = "This codec server needs no token (started with --insecure-no-auth)."
        page = (
            "<!doctype html><meta charset=utf-8><title>Codec server login</title>"
            f"<p>{html.escape(message)}</p>"
            "<form method=post action=/login><label>Token <input type=password name=token autofocus></label>"
            "<button>Sign in</button></form>"
            "<form method=post action=/logout><button>Sign out</button></form>"
            "<p>Then, in the Web UI's codec settings, turn on <em>Include cross-origin credentials</em>.</p>"
        )
        self._send(status, page.encode(), content_type="text/html; charset=utf-8")

    def _login(self) -> None:
        body = self._body(MAX_LOGIN_BODY)
        if body is None:
            return
        token = (parse_qs(body.decode(errors="replace")).get("token") or [""])[0]
        if not self.service.token_matches(token):
            return self._login_page("That token is not valid.", HTTPStatus.UNAUTHORIZED)
        self.send_response(HTTPStatus.SEE_OTHER)
        session = self.service.sessions.start(True)
        self.send_header("Set-Cookie", self._cookie(session, int(self.service.session_seconds)))
        self.send_header("Location", "/login?signed-in")
        self.send_header("Content-Length", "0")
        self.end_headers()
        return None


class _BoundedServer(ThreadingHTTPServer):
    """A thread per connection, but at most `max_connections` at once: past that, 503 and close at once."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[_Handler], max_connections: int) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self._slots = threading.BoundedSemaphore(max_connections)
        super().__init__(address, handler)

    def process_request(self, request: socket.socket, client_address: object) -> None:  # type: ignore[override]
        if not self._slots.acquire(blocking=False):
            with contextlib.suppress(OSError):
                request.sendall(b"HTTP/1.0 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: socket.socket, client_address: object) -> None:  # type: ignore[override]
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


def make_server(service: CodecService, host: str = "127.0.0.1", port: int = 8081) -> ThreadingHTTPServer:
    # `timeout`: the socket timeout of each connection, so an idle or slow client frees its slot.
    handler = type("CodecHandler", (_Handler,), {"service": service, "timeout": service.request_timeout})
    return _BoundedServer((host, port), handler, service.max_connections)


def serve_in_thread(service: CodecService, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """For tests and embedding: serve until `server.shutdown()`."""
    server = make_server(service, host, port)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main(argv: list[str] | None = None) -> int:
    from config.settings import Settings

    parser = argparse.ArgumentParser(prog="python -m ops.http.codec", description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default: loopback only)")
    parser.add_argument("--port", type=int, default=8081)
    parser.add_argument(
        "--cors-origin", action="append", help="an origin the Web UI is served from (repeatable)", default=None
    )
    parser.add_argument("--secure-cookie", action="store_true", help="mark the session cookie Secure (HTTPS)")
    parser.add_argument(
        "--allowed-host", action="append", default=None, help="a Host name besides localhost (repeatable)"
    )
    parser.add_argument(
        "--namespace", help="the namespace of requests that name none (default: TEMPORAL_NAMESPACE, else default)"
    )
    parser.add_argument(
        "--insecure-no-auth",
        action="store_true",
        help="start without AGENT_CODEC_AUTH_TOKEN: anyone who reaches the port decrypts (loopback only)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=os.environ.get("LOG_LEVEL", "INFO"), format="%(asctime)s %(levelname)s %(message)s")

    settings = Settings()
    try:
        keyring = load_keyring(settings.codec_keys, settings.codec_key_file)
    except KeyConfigError as exc:
        print(f"codec server: {exc}", file=sys.stderr)
        return 2
    if keyring is None:
        print("codec server: no keys; set AGENT_CODEC_KEYS or AGENT_CODEC_KEY_FILE", file=sys.stderr)
        return 2
    env_origins = [o.strip() for o in os.environ.get("AGENT_CODEC_CORS_ORIGINS", "").split(",") if o.strip()]
    origins = frozenset(args.cors_origin or env_origins or DEFAULT_ORIGINS)
    try:
        found = env_or_file(os.environ, "AGENT_CODEC_AUTH_TOKEN", "AGENT_CODEC_AUTH_TOKEN_FILE", AuthConfigError)
        token = (found[0].strip() or None) if found else None
        check_startup(
            args.host,
            token is not None,
            args.insecure_no_auth,
            what="codec server",
            token_env="AGENT_CODEC_AUTH_TOKEN",
        )
    except AuthConfigError as exc:
        print(exc, file=sys.stderr)
        return 2
    hosts = frozenset(args.allowed_host or hosts_from_env("AGENT_CODEC_ALLOWED_HOSTS"))
    service = CodecService(
        AesGcmCodec(keyring, namespace=args.namespace or settings.namespace),
        token=token,
        origins=origins,
        secure_cookie=args.secure_cookie,
        insecure_no_auth=args.insecure_no_auth,
        allowed_hosts=hosts,
    )
    server = make_server(service, args.host, args.port)
    auth = "bearer token or session" if token else "NONE (--insecure-no-auth: anyone who reaches the port decrypts)"
    host = f"[{args.host}]" if ":" in args.host else args.host
    print(
        f"codec server on http://{host}:{server.server_address[1]} "
        f"(active key {keyring.active}, {len(keyring.keys)} loaded; auth: {auth}; "
        f"hosts: {', '.join(sorted(service.allowed_hosts))}; CORS: {', '.join(sorted(origins))})",
        flush=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    from ops.cli.boundary import exit_now, run_command  # the one error boundary: one line, shared exit codes

    exit_now(run_command(main))

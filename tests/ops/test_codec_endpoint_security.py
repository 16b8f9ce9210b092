"""The codec endpoint fails closed, checks the Host header (DNS rebinding), bounds what an
unauthenticated client can hold, and keeps the token out of the session cookie. Real HTTP over
loopback, served as `python starter.py codec-server` serves it (tests/support/serving.py); the server's own
process for the start-up rules."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload, Payloads

import starter
from duragent._config.codec import AesGcmCodec, KeyRing, new_key
from duragent._config.settings import ROOT
from duragent._ops.http.codec import COOKIE, codec_auth, create_codec_app
from duragent._ops.http.sessions import Sessions
from tests.config.test_codec import http
from tests.support.serving import Served
from tests.support.serving import serving as serving_app

SECRET = "SECRET-PLAINTEXT"


def codec() -> AesGcmCodec:
    return AesGcmCodec(KeyRing.parse(f"k1:{new_key()}"))


def sealed_body(c: AesGcmCodec) -> bytes:
    payload = c.encrypt(Payload(metadata={"encoding": b"json/plain"}, data=json.dumps(SECRET).encode()))
    return json_format.MessageToJson(Payloads(payloads=[payload])).encode()


def plaintext(answer: bytes) -> bytes:
    return b"".join(p.data for p in json_format.Parse(answer, Payloads()).payloads)


@contextmanager
def serving(c: AesGcmCodec, token: str | None, *, sessions: Sessions | None = None, **bounds: Any) -> Iterator[Served]:
    """The codec endpoint's app for `token`, with its hosts and sessions as given, served."""
    hosts = bounds.pop("allowed_hosts", ())
    app = create_codec_app(c, codec_auth(token, hosts=hosts, sessions=sessions))
    with serving_app(app, **bounds) as served:
        yield served


def until_closed(s: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    answer = b""
    while chunk := s.recv(4096):
        answer += chunk
    return answer


def status_of(answer: bytes) -> int:
    """The status code of a raw HTTP response."""
    return int(answer.split(b" ", 2)[1])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def env_without_token(keys: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_CODEC")}
    return env | {"AGENT_CODEC_KEYS": keys}


def main(argv: list[str]) -> int:
    return starter.main(["codec-server", *argv])


# -- M3: fail closed ------------------------------------------------------------------------------


def test_no_token_refuses_to_start_unless_insecure_on_loopback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AGENT_CODEC_KEYS", f"k1:{new_key()}")
    monkeypatch.delenv("AGENT_CODEC_AUTH_TOKEN", raising=False)
    port = str(free_port())
    assert main(["--port", port]) == 2
    err = capsys.readouterr().err
    assert "AGENT_CODEC_AUTH_TOKEN" in err and "--insecure-no-auth" in err
    for host in ("0.0.0.0", "192.0.2.1", "::"):
        assert main(["--host", host, "--port", port, "--insecure-no-auth"]) == 2
        assert "loopback" in capsys.readouterr().err
    # The app itself fails closed too: no token and no explicit opt-out decodes for nobody.
    c = codec()
    with serving(c, None) as served:
        assert http(f"{served.url}/decode", sealed_body(c))[0] == 401


@pytest.mark.system
def test_insecure_no_auth_on_loopback_starts_and_says_so() -> None:
    keys = f"k1:{new_key()}"
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "starter.py", "codec-server", "--port", str(port), "--insecure-no-auth"],
        cwd=ROOT,
        env=env_without_token(keys),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert f"http://127.0.0.1:{port}" in line and "auth: NONE" in line, line
        c = AesGcmCodec(KeyRing.parse(keys))
        status, _, answer = http(f"http://127.0.0.1:{port}/decode", sealed_body(c))
        assert status == 200 and SECRET.encode() in plaintext(answer)
    finally:
        process.terminate()
        process.wait(10)


def test_the_host_header_must_be_an_allowed_name() -> None:
    c = codec()
    token = secrets.token_hex(16)
    with serving(c, token, allowed_hosts={"codec.internal"}) as served:
        url, port = served.url, served.port
        bearer = {"Authorization": f"Bearer {token}"}
        rebinding = (f"rebind.attacker.example:{port}", "attacker.example", f"localhost.attacker.example:{port}")
        for host in (*rebinding, f"localhost:{port}@attacker.example"):  # a port, then junk: not localhost
            for path in ("/decode", "/login", "/health"):
                status, _, answer = http(f"{url}{path}", sealed_body(c), bearer | {"Host": host})
                assert status == 400 and b"payloads" not in answer, (host, path)
        for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", "codec.internal:8081"):
            status, _, answer = http(f"{url}/decode", sealed_body(c), bearer | {"Host": host})
            assert status == 200 and SECRET.encode() in plaintext(answer), host


# -- L4: bounded -----------------------------------------------------------------------------------


def test_the_token_is_checked_before_the_body_is_read_and_bodies_are_bounded() -> None:
    """An outsider who declares a body and sends none of it is answered at once: nothing waits on it."""
    c = codec()
    with serving(c, secrets.token_hex(16), read_timeout=60) as served:
        head = "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: {length}\r\n\r\n"
        cases = [
            ("/decode", 60 * 1024 * 1024, 401),  # within the payload bound: refused for want of a token
            ("/default/encode", 60 * 1024 * 1024, 401),
            ("/decode", 64 * 1024 * 1024 + 1, 413),  # past it: refused for its size, before any of it is read
            ("/login", 4 * 1024 + 1, 413),  # the login form reads at most 4 KiB
        ]
        for path, length, expected in cases:
            with socket.create_connection(("127.0.0.1", served.port), timeout=10) as s:
                s.sendall(head.format(path=path, length=length).encode())
                assert status_of(s.recv(200)) == expected, (path, length)
        # A chunked body that grows past the bound is cut off too (no declared length to refuse up front).
        with socket.create_connection(("127.0.0.1", served.port), timeout=10) as s:
            s.sendall(b"POST /login HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n")
            chunk = b"x" * 1024
            for _ in range(5):
                s.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            assert status_of(s.recv(200)) == 413


def test_past_the_connection_limit_a_new_connection_is_refused_and_held_ones_are_served() -> None:
    """Every slot busy with a token holder's request (a body still coming): a new connection is answered 503 and
    closed, and the held ones are still served. Deterministic: the probe goes out only once the server's own
    count shows the four held."""
    c = codec()
    token = secrets.token_hex(16)
    body = sealed_body(c)
    head = f"POST /decode HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {token}\r\n"
    head += f"Content-Length: {len(body)}\r\n\r\n"
    with serving(c, token, max_connections=4, read_timeout=60) as served:
        busy: list[socket.socket] = []
        try:
            for _ in range(4):  # one at a time: a stranger's idle connection would make room for the next
                busy.append(socket.create_connection(("127.0.0.1", served.port), timeout=10))
                busy[-1].sendall(head.encode() + body[:10])  # the token checked, the rest of the body owed
                wait_for(lambda: served.vouched_for() == len(busy), "the server to check the token")
            with socket.create_connection(("127.0.0.1", served.port), timeout=10) as extra:
                extra.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
                answer = until_closed(extra)  # and the server closes it (else this times out)
                assert status_of(answer) == 503 and b"connection: close" in answer.lower()
            # A connection the server took before it was full is still served while it is full.
            busy[0].sendall(body[10:])
            answer = busy[0].recv(100_000)
            assert status_of(answer) == 200
        finally:
            for s in busy:
                s.close()
        wait_for(lambda: served.open_connections() == 0, "the slots to be freed")
        assert http(f"{served.url}/health", method="GET")[0] == 200


def test_idle_strangers_past_their_share_make_room_for_a_newcomer() -> None:
    """Connections without an authenticated request may hold 3 of 4 slots once past their grace
    (`STRANGER_GRACE`, 1 s to send a request); with a fourth, the one that waited longest is closed without an
    answer when the grace ends. Nobody waits on the read timeout."""
    c = codec()
    with serving(c, secrets.token_hex(16), max_connections=4, read_timeout=60) as served:
        idle = []
        for _ in range(3):
            idle.append(socket.create_connection(("127.0.0.1", served.port), timeout=10))
            wait_for(lambda: served.open_connections() == len(idle), "the server to hold the idle connections")
        try:
            with socket.create_connection(("127.0.0.1", served.port), timeout=10) as newcomer:
                newcomer.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
                assert status_of(newcomer.recv(200)) == 200
                assert idle[0].recv(100) == b""  # the oldest, closed to make room
                idle[1].sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
                assert status_of(idle[1].recv(200)) == 200  # the others still served
        finally:
            for s in idle:
                s.close()


@pytest.mark.parametrize(
    "sent",
    [b"", b"GET /heal", b"POST /login HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\ntoken="],
    ids=["nothing", "half a request line", "half a body"],
)
def test_a_client_that_stalls_is_closed_and_frees_its_slot(sent: bytes) -> None:
    c = codec()
    with serving(c, "t" * 32, read_timeout=0.5) as served:
        with socket.create_connection(("127.0.0.1", served.port), timeout=30) as s:
            s.sendall(sent)
            started = time.monotonic()
            assert s.recv(100) == b""  # closed by the server, without an answer
            assert time.monotonic() - started < 20
        wait_for(lambda: served.open_connections() == 0, "the slot to be freed")


def wait_for(condition: Any, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


# -- L5: sessions ----------------------------------------------------------------------------------


def login(url: str, token: str) -> str:
    request = urllib.request.Request(f"{url}/login", data=f"token={token}".encode(), method="POST")
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        opener.open(request, timeout=10)
    except urllib.error.HTTPError as exc:
        assert exc.code == 303
        return exc.headers["Set-Cookie"]
    raise AssertionError("expected a redirect")


def test_the_cookie_is_a_session_not_the_token_and_logout_ends_it() -> None:
    c = codec()
    token = secrets.token_hex(16)
    with serving(c, token, sessions=Sessions(3600)) as served:
        url = served.url
        cookie = login(url, token)
        value = cookie.split(";")[0].split("=", 1)[1]
        assert token not in cookie and len(value) >= 32
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        assert http(f"{url}/decode", sealed_body(c), {"Cookie": f"{COOKIE}={token}"})[0] == 401
        assert http(f"{url}/decode", sealed_body(c), {"Cookie": f"{COOKIE}={value}"})[0] == 200
        assert b"Signed in as" in http(f"{url}/login", headers={"Cookie": f"{COOKIE}={value}"}, method="GET")[2]
        other = login(url, token).split(";")[0]
        assert http(f"{url}/logout", b"", {"Cookie": f"{COOKIE}={value}"})[0] == 200  # 303 to the login page
        assert http(f"{url}/decode", sealed_body(c), {"Cookie": f"{COOKIE}={value}"})[0] == 401
        assert http(f"{url}/decode", sealed_body(c), {"Cookie": other})[0] == 200  # only that session ended
    now = [1000.0]
    with serving(c, token, sessions=Sessions(60, clock=lambda: now[0])) as served:
        value = login(served.url, token).split(";")[0]
        assert http(f"{served.url}/decode", sealed_body(c), {"Cookie": value})[0] == 200
        now[0] += 61
        assert http(f"{served.url}/decode", sealed_body(c), {"Cookie": value})[0] == 401


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None

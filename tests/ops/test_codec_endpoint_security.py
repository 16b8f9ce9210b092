"""The codec endpoint fails closed (review M3), checks the Host header (DNS rebinding), bounds what an
unauthenticated client can hold (L4), and keeps the token out of the session cookie (L5). Real HTTP over
loopback; the server's own process for the start-up rules."""

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

import pytest
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload, Payloads

from config.codec import AesGcmCodec, KeyRing, new_key
from config.settings import ROOT
from ops.http.codec import COOKIE, CodecService, main, serve_in_thread
from tests.config.test_codec import http

SECRET = "SECRET-PLAINTEXT"


def codec() -> AesGcmCodec:
    return AesGcmCodec(KeyRing.parse(f"k1:{new_key()}"))


def sealed_body(c: AesGcmCodec) -> bytes:
    payload = c.encrypt(Payload(metadata={"encoding": b"json/plain"}, data=json.dumps(SECRET).encode()))
    return json_format.MessageToJson(Payloads(payloads=[payload])).encode()


def plaintext(answer: bytes) -> bytes:
    return b"".join(p.data for p in json_format.Parse(answer, Payloads()).payloads)


@contextmanager
def serving(service: CodecService) -> Iterator[str]:
    server = serve_in_thread(service)
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def env_without_token(keys: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_CODEC")}
    return env | {"AGENT_CODEC_KEYS": keys}


# -- M3: fail closed ------------------------------------------------------------------------------


def test_no_token_refuses_to_start_unless_insecure_on_loopback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AGENT_CODEC_KEYS", f"k1:{new_key()}")
    monkeypatch.delenv("AGENT_CODEC_AUTH_TOKEN", raising=False)
    assert main(["--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "AGENT_CODEC_AUTH_TOKEN" in err and "--insecure-no-auth" in err
    for host in ("0.0.0.0", "192.0.2.1", "::"):
        assert main(["--host", host, "--port", "0", "--insecure-no-auth"]) == 2
        assert "loopback" in capsys.readouterr().err
    # The service itself fails closed too: no token and no explicit opt-out decodes for nobody.
    c = codec()
    with serving(CodecService(c)) as url:
        assert http(f"{url}/decode", sealed_body(c))[0] == 401


@pytest.mark.system
def test_insecure_no_auth_on_loopback_starts_and_says_so() -> None:
    keys = f"k1:{new_key()}"
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "ops.http.codec", "--port", str(port), "--insecure-no-auth"],
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
    service = CodecService(c, token=token, allowed_hosts=frozenset({"codec.internal"}))
    with serving(service) as url:
        port = url.rsplit(":", 1)[1]
        bearer = {"Authorization": f"Bearer {token}"}
        for host in (f"rebind.attacker.example:{port}", "attacker.example", f"localhost.attacker.example:{port}"):
            status, _, answer = http(f"{url}/decode", sealed_body(c), bearer | {"Host": host})
            assert status == 400 and b"payloads" not in answer, host
        for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", "codec.internal:8081"):
            status, _, answer = http(f"{url}/decode", sealed_body(c), bearer | {"Host": host})
            assert status == 200 and SECRET.encode() in plaintext(answer), host


# -- L4: bounded -----------------------------------------------------------------------------------


def test_slow_and_large_unauthenticated_requests_are_bounded() -> None:
    c = codec()
    service = CodecService(c, token=secrets.token_hex(16), request_timeout=60.0, max_connections=3)
    with serving(service) as url:
        port = int(url.rsplit(":", 1)[1])
        # /login says no to a huge body before reading any of it.
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"POST /login HTTP/1.1\r\nHost: localhost\r\nContent-Length: 67108864\r\n\r\n")
            assert s.recv(200).startswith(b"HTTP/1.0 413")
        # Past the limit, connections are turned away at once instead of each holding a thread.
        idle = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(3)]
        try:
            # The idle connections hold the slots once the server has accepted them; under load that can
            # lag our connects, so a request may still be served at first — but never once they are held.
            answers = []
            for _ in range(50):
                with socket.create_connection(("127.0.0.1", port), timeout=10) as extra:
                    extra.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
                    answers.append(extra.recv(200)[:12])
                if answers[-1] == b"HTTP/1.0 503":
                    break
                time.sleep(0.1)
            assert answers[-1] == b"HTTP/1.0 503", answers
        finally:
            for s in idle:
                s.close()
        deadline = time.monotonic() + 30
        while http(f"{url}/health", method="GET")[0] != 200:  # the slots are free again
            assert time.monotonic() < deadline, "slots were never freed"
            time.sleep(0.1)

    # An idle connection is closed by the server once its socket timeout passes: it frees its slot.
    with serving(CodecService(c, token="t" * 32, request_timeout=0.5)) as url:
        port = int(url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            assert s.recv(100) == b""


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
    with serving(CodecService(c, token=token, session_seconds=3600)) as url:
        cookie = login(url, token)
        value = cookie.split(";")[0].split("=", 1)[1]
        assert token not in cookie and len(value) >= 32
        assert http(f"{url}/decode", sealed_body(c), {"Cookie": f"{COOKIE}={token}"})[0] == 401
        assert http(f"{url}/decode", sealed_body(c), {"Cookie": f"{COOKIE}={value}"})[0] == 200
        other = login(url, token).split(";")[0]
        assert http(f"{url}/logout", b"", {"Cookie": f"{COOKIE}={value}"})[0] == 200  # 303 to the login page
        assert http(f"{url}/decode", sealed_body(c), {"Cookie": f"{COOKIE}={value}"})[0] == 401
        assert http(f"{url}/decode", sealed_body(c), {"Cookie": other})[0] == 200  # only that session ended
    now = [1000.0]
    with serving(CodecService(c, token=token, session_seconds=60, clock=lambda: now[0])) as url:
        value = login(url, token).split(";")[0]
        assert http(f"{url}/decode", sealed_body(c), {"Cookie": value})[0] == 200
        now[0] += 61
        assert http(f"{url}/decode", sealed_body(c), {"Cookie": value})[0] == 401


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None

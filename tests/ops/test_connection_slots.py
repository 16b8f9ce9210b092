"""Played as the attacker on `job serve` (a real server process, real sockets on loopback): a
viewer holding as many event streams as the server has connections, and a local process without a token
holding idle sockets (and reopening each one the server closes), keep no approver from listing runs and
deciding. The server's bounds are its defaults (64 connections, 48 of them for unauthenticated ones, 4
streams per principal); only the streams' lifetime is shortened (`--stream-seconds`)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from duragent._config.http_clients import tls_context
from duragent._ops.http.connections import STRANGER_GRACE, UNAUTHENTICATED_SHARE
from duragent._ops.http.serve import MAX_CONNECTIONS
from duragent._ops.http.streams import MAX_STREAMS_PER_PRINCIPAL
from tests.support.runs_api_stack import APPROVER, VIEWER, ApiStack, checkpoint_stack, finished, waiting

pytestmark = pytest.mark.system

STREAM_SECONDS = 3


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiStack]:
    built = checkpoint_stack(tmp_path_factory.mktemp("slots"), extra_args=["--stream-seconds", str(STREAM_SECONDS)])
    try:
        yield built
    finally:
        built.close()


def port_of(stack: ApiStack) -> int:
    return int(stack.url.rsplit(":", 1)[1])


def open_stream(port: int, run_id: str, token: str) -> tuple[socket.socket, bytes]:
    """A raw `GET /runs/{id}/events`, and the answer's first bytes (its status line and what followed)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(
        f"GET /runs/{run_id}/events HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {token}\r\n\r\n".encode()
    )
    return s, s.recv(4096)


def until_the_stream_ends(s: socket.socket, received: bytes, timeout: float) -> bytes:
    """What the stream sends until its last chunk (the connection itself may stay open: keep-alive)."""
    s.settimeout(timeout)
    while not received.endswith(b"\r\n0\r\n\r\n"):
        chunk = s.recv(4096)
        assert chunk, received
        received += chunk
    return received


def the_approver_lists_and_sees(stack: ApiStack, run_id: str) -> None:
    """What the approver does first, each on a new connection: the runs, then the inbox's list."""
    with stack.client(APPROVER) as api:
        assert api.get("/runs").status_code == 200
    with stack.client(APPROVER) as api:
        listed = api.get("/approvals")
        assert listed.status_code == 200 and run_id in {i["run_id"] for i in listed.json()}


def decide(stack: ApiStack, run_id: str) -> None:
    with stack.client(APPROVER) as api:
        [pending] = api.get(f"/runs/{run_id}").json()["pending_approvals"]
    with stack.client(APPROVER) as api:
        decision = {"approve": True, "reason": "ok", "arguments_hash": pending["arguments_hash"]}
        response = api.post(f"/runs/{run_id}/approvals/{pending['call_id']}", json=decision)
        assert response.status_code == 200, response.text
    with stack.client(APPROVER) as api:
        assert finished(api, run_id)["status"] == "completed"
    assert [e.tool for e in stack.effects(run_id)] == ["refund"]


def start_refund(stack: ApiStack) -> str:
    with stack.client(APPROVER) as api:
        created = api.post("/runs", json={"agent": "refund", "task": None, "run_id": None})
        assert created.status_code == 201, created.text
        run_id = str(created.json()["run_id"])
        waiting(api, run_id)
    return run_id


def test_a_viewer_holding_every_stream_it_can_open_keeps_no_approver_out(stack: ApiStack) -> None:
    run_id = start_refund(stack)
    port = port_of(stack)
    held = [open_stream(port, run_id, VIEWER) for _ in range(MAX_CONNECTIONS)]
    try:
        statuses = [answer.split(b" ", 2)[1] for _, answer in held]
        assert statuses.count(b"200") == MAX_STREAMS_PER_PRINCIPAL, statuses
        assert statuses.count(b"429") == MAX_CONNECTIONS - MAX_STREAMS_PER_PRINCIPAL
        sock, refused = next((s, answer) for s, answer in held if b" 429 " in answer)
        if not refused.endswith(b"}"):  # the body may come in a packet of its own
            refused += sock.recv(4096)
        assert b"retry-after: 5" in refused.lower() and b"already holds 4 event streams" in refused

        the_approver_lists_and_sees(stack, run_id)

        # Its streams end by themselves: a `retry:` line and no `end` (the run still waits), and the
        # viewer's slots are free again.
        started = time.monotonic()
        for s, answer in held:
            if b" 200 " in answer:
                rest = until_the_stream_ends(s, answer, STREAM_SECONDS + 10)
                assert b"\nretry: " in rest and b"event: end" not in rest
        assert time.monotonic() - started < STREAM_SECONDS + 5  # the read timeout would take 10 s
        again, answer = open_stream(port, run_id, VIEWER)
        again.close()
        assert answer.startswith(b"HTTP/1.1 200 "), answer
    finally:
        for s, _ in held:
            s.close()
    decide(stack, run_id)


def test_a_process_without_a_token_holding_idle_sockets_keeps_no_approver_out(stack: ApiStack) -> None:
    run_id = start_refund(stack)
    port = port_of(stack)
    idle = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(MAX_CONNECTIONS)]
    try:
        the_approver_lists_and_sees(stack, run_id)
        # Once their grace to send a request is over, past their share, the server closed the strangers'
        # oldest sockets: never more than 48 held, and no answer was sent on them.
        closed: set[int] = set()
        deadline = time.monotonic() + STRANGER_GRACE + 10
        while (
            len(closed) < MAX_CONNECTIONS - int(MAX_CONNECTIONS * UNAUTHENTICATED_SHARE) and time.monotonic() < deadline
        ):
            for i, s in enumerate(idle):
                s.setblocking(False)
                with contextlib.suppress(BlockingIOError):
                    if s.recv(1) == b"":
                        closed.add(i)
            time.sleep(0.1)
        assert len(closed) >= MAX_CONNECTIONS - int(MAX_CONNECTIONS * UNAUTHENTICATED_SHARE), len(closed)
    finally:
        for s in idle:
            s.close()
    decide(stack, run_id)


def test_an_approver_gets_in_while_a_process_reopens_every_socket_the_server_closes(stack: ApiStack) -> None:
    """The slot-hogging loop: 64 threads, each reopening its socket the moment the server closes it."""
    run_id = start_refund(stack)
    port = port_of(stack)
    stop = threading.Event()
    opened = [0]

    def hold() -> None:
        while not stop.is_set():
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                    opened[0] += 1
                    s.settimeout(0.5)
                    while not stop.is_set():
                        try:
                            if s.recv(1) == b"":
                                break  # closed by the server: open another at once
                        except TimeoutError:
                            continue
            except OSError:
                time.sleep(0.05)

    holders = [threading.Thread(target=hold, daemon=True) for _ in range(MAX_CONNECTIONS)]
    for holder in holders:
        holder.start()
    try:
        time.sleep(1)
        probes: list[Any] = []
        for _ in range(3):
            started = time.monotonic()
            with stack.client(APPROVER) as api:
                probes.append((api.get("/runs").status_code, round(time.monotonic() - started, 2)))
        assert [status for status, _ in probes] == [200, 200, 200], probes
        decide(stack, run_id)
    finally:
        stop.set()
        for holder in holders:
            holder.join(10)
    assert opened[0] >= MAX_CONNECTIONS  # the attack did run


def test_a_client_with_fifty_requests_in_flight_gets_fifty_answers(stack: ApiStack) -> None:
    """A client with many requests at once
    opens as many connections in one burst, accepted before any of their requests is read. Judged at accept
    time, everyone past the strangers' share (48) was closed unanswered (`httpx.ReadError`); each now has
    `STRANGER_GRACE` to send its request, and all 50 are answered."""
    in_flight = int(MAX_CONNECTIONS * UNAUTHENTICATED_SHARE) + 2

    async def burst() -> list[int]:
        limits = httpx.Limits(max_connections=in_flight, max_keepalive_connections=in_flight)
        headers = {"Authorization": f"Bearer {APPROVER}"}
        async with httpx.AsyncClient(
            base_url=stack.url, headers=headers, limits=limits, timeout=30, verify=tls_context()
        ) as http:
            answers = await asyncio.gather(*(http.get("/runs") for _ in range(in_flight)), return_exceptions=True)
        return [a.status_code if isinstance(a, httpx.Response) else repr(a) for a in answers]  # type: ignore[misc]

    for _ in range(3):  # three bursts, each on new connections
        assert asyncio.run(burst()) == [200] * in_flight

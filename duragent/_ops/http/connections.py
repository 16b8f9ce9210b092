"""What one client may hold of a server we run, from the moment its connection is accepted: uvicorn's h11
protocol with its own two knobs applied at the connection, not only around a request.

- `limit_concurrency`: a connection accepted while that many are open gets `503` to its request and is
  closed. (uvicorn decides at each request and counts the asker too, so once full it would also turn away
  the next request of a connection it already serves; here the rule is decided once, at accept time.)
- `timeout_keep_alive`: while the server waits on the client — for the first bytes of a request, the rest of
  its head or body, or the next request — a connection that sends nothing for that long is closed. uvicorn
  arms its timer only after a response, so an idle or slow client could otherwise hold a connection forever.
  Nothing is timed while the app works or streams (an SSE feed), only while the client owes bytes.

Who may hold the slots. At accept time nobody is known: an approver's connection and a
local process's idle socket look alike until a request arrives with a token. So a connection that waits
on its client holds nothing another needs:

- A connection is *vouched for* once one of its requests was authenticated (`vouch`, called by
  duragent/_ops/http/auth.py). A new connection has `STRANGER_GRACE` (1 s) to send its request: every real
  client sends it at once, but a burst of them is accepted before any head is read (a client with 50
  requests in flight opens 50 connections in one go), so judging a newcomer at its accept closed honest
  connections unanswered (the bench's approvals through the runs API failed so). Past its grace, an
  unauthenticated connection counts in `UNAUTHENTICATED_SHARE` of the slots (48 of 64): over it, the ones
  that have waited longest on their client (their first request, or the rest of one) are closed. The other
  quarter stays for token holders.
- When all the slots are taken, the newcomer takes the place of the connection that has waited longest on
  its client: unauthenticated first (past its grace, else within it), else an authenticated one idle between
  two requests (a keep-alive any HTTP client must expect to lose). Only if every connection has a request in
  flight (an app at work, an SSE stream) is the newcomer answered 503.

So a process without a token cannot keep an approver out by holding idle sockets, however fast it reopens
them: the approver's connection evicts one of them, and once its request is authenticated it is no longer
a candidate. (Until then it is the newest stranger, closed only after every older one: a flood that lands
48 connections between its accept and the read of its request head could still close it unanswered, and
its client tries again — browsers do so by themselves for a GET.) What an authenticated client holds with
requests in flight is bounded by the app (an event stream's cap per principal and lifetime,
duragent/_ops/http/streams.py). A cap per peer address would not help here: on loopback every local process, the
approver's browser included, is 127.0.0.1.

h11 bounds a request head at 16 KiB (uvicorn's `h11_max_incomplete_event_size`); the apps bound bodies
(`max_body_size`, duragent/_ops/http/base.py).
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

_CLIENT_OWES = (h11.IDLE, h11.SEND_BODY)  # their states in which we wait on them
_NOT_ANSWERING = (h11.IDLE, h11.SEND_RESPONSE, h11.DONE)  # ours in which nothing is in flight (no head yet, or done)
UNAUTHENTICATED_SHARE = 0.75  # of the slots, at most, for connections no authenticated request vouched for
STRANGER_GRACE = 1.0  # seconds a new connection has to send its first request before it counts in that share
_VOUCH = "agent.vouch"  # the ASGI scope's extension through which the app vouches for its connection


def vouch(scope: Any) -> None:
    """Say that the connection carrying this request is a token holder's: no unauthenticated newcomer takes
    its slot, and it does not count in the unauthenticated share. (Nothing, outside our server.)"""
    mark = scope.get("extensions", {}).get(_VOUCH)
    if mark is not None:
        mark()


class BoundedH11Protocol(H11Protocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_connections: int | None = self.limit_concurrency
        self.limit_concurrency = None  # uvicorn's check per request: decided in connection_made instead
        self.read_timeout = float(self.timeout_keep_alive)
        self.vouched = False
        self._accepted_at = 0.0
        self._quiet_since = 0.0  # the client's last byte, or the end of our last answer: whichever is later
        self._read_timer: asyncio.TimerHandle | None = None
        self._share_timer: asyncio.TimerHandle | None = None
        app = self.app

        async def app_with_vouch(scope: Any, receive: Any, send: Any) -> None:
            scope.setdefault("extensions", {})[_VOUCH] = self._vouch
            await app(scope, receive, send)

        self.app = app_with_vouch

    def _vouch(self) -> None:
        self.vouched = True

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)  # counts this connection in the server's `connections`
        self._accepted_at = self._quiet_since = self.loop.time()
        if self.max_connections is not None:
            if not self._make_room(self.max_connections):
                self.limit_concurrency = 0  # uvicorn's own rule then answers this request 503, and closes
            self._share_timer = self.loop.call_later(STRANGER_GRACE, self._keep_share, self.max_connections)
        self._read_timer = self.loop.call_later(self.read_timeout, self._check_reads)

    def _open_others(self) -> list[BoundedH11Protocol]:
        return [
            c
            for c in self.connections
            if c is not self and isinstance(c, BoundedH11Protocol) and not c.transport.is_closing()
        ]

    def _make_room(self, most: int) -> bool:
        """Room for this new connection, by closing one that waits on its client if all are taken (above)."""
        others = self._open_others()
        if 1 + len(others) > most:
            strangers = [c for c in others if not c.vouched]
            now = self.loop.time()
            if not (
                _close_longest_waiting([c for c in strangers if c._past_grace(now)], idle_only=False)
                or _close_longest_waiting(strangers, idle_only=False)
            ):
                _close_longest_waiting([c for c in others if c.vouched], idle_only=True)
        return 1 + len(self._open_others()) <= most

    def _keep_share(self, most: int) -> None:
        """This connection's grace is over: if the unauthenticated ones past theirs hold more than their
        share, close those that have waited longest on their client until they do not."""
        if self.vouched or self.transport.is_closing():
            return
        now = max(self.loop.time(), self._accepted_at + STRANGER_GRACE)  # a timer may fire a hair early
        everyone = [self, *self._open_others()]
        strangers = [c for c in everyone if not c.vouched and c._past_grace(now)]
        for _ in range(len(strangers) - int(most * UNAUTHENTICATED_SHARE)):
            if not _close_longest_waiting(strangers, idle_only=False):
                return
            strangers = [c for c in strangers if not c.transport.is_closing()]

    def _past_grace(self, now: float) -> bool:
        return now - self._accepted_at >= STRANGER_GRACE

    def _waiting(self, *, idle_only: bool) -> bool:
        """Whether we wait on the client with nothing in flight: `idle_only`, only between two requests."""
        if idle_only:
            return self.conn.their_state is h11.IDLE and self.conn.our_state is h11.IDLE
        return self.conn.their_state in _CLIENT_OWES and self.conn.our_state in _NOT_ANSWERING

    def data_received(self, data: bytes) -> None:
        self._quiet_since = self.loop.time()
        super().data_received(data)

    def on_response_complete(self) -> None:
        self._quiet_since = self.loop.time()  # the client owes us nothing until it has our answer
        super().on_response_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        for timer in (self._read_timer, self._share_timer):
            if timer is not None:
                timer.cancel()
        super().connection_lost(exc)

    def _check_reads(self) -> None:
        quiet = self.loop.time() - self._quiet_since
        waiting = self._waiting(idle_only=False)
        if waiting and quiet >= self.read_timeout:
            if not self.transport.is_closing():
                self.transport.close()
            return
        due = self.read_timeout - quiet if waiting else self.read_timeout
        self._read_timer = self.loop.call_later(due, self._check_reads)


def _close_longest_waiting(candidates: list[BoundedH11Protocol], *, idle_only: bool) -> bool:
    """Close the candidate that has waited longest on its client; False if none waits."""
    waiting = [c for c in candidates if not c.transport.is_closing() and c._waiting(idle_only=idle_only)]
    if not waiting:
        return False
    min(waiting, key=lambda c: c._quiet_since).transport.close()
    return True

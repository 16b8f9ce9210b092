"""What one client may hold of a server we run, from the moment its connection is accepted: uvicorn's h11
protocol with its own two knobs applied at the connection, not only around a request.

- `limit_concurrency`: a connection accepted while that many are open gets `503` to its request and is
  closed. (uvicorn decides at each request and counts the asker too, so once full it would also turn away
  the next request of a connection it already serves; here the rule is decided once, at accept time.)
- `timeout_keep_alive`: while the server waits on the client — for the first bytes of a request, the rest of
  its head or body, or the next request — a connection that sends nothing for that long is closed. uvicorn
  arms its timer only after a response, so an idle or slow client could otherwise hold a connection forever.
  Nothing is timed while the app works or streams (an SSE feed), only while the client owes bytes.

h11 bounds a request head at 16 KiB (uvicorn's `h11_max_incomplete_event_size`); the apps bound bodies
(`max_body_size`, duragent/ops/http/base.py).
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

_CLIENT_OWES = (h11.IDLE, h11.SEND_BODY)  # their states in which we wait on them
_NOT_ANSWERING = (h11.IDLE, h11.SEND_RESPONSE, h11.DONE)  # ours in which nothing is in flight (no head yet, or done)


class BoundedH11Protocol(H11Protocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_connections: int | None = self.limit_concurrency
        self.limit_concurrency = None  # uvicorn's check per request: decided in connection_made instead
        self.read_timeout = float(self.timeout_keep_alive)
        self._quiet_since = 0.0  # the client's last byte, or the end of our last answer: whichever is later
        self._read_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)  # counts this connection in the server's `connections`
        if self.max_connections is not None and len(self.connections) > self.max_connections:
            self.limit_concurrency = 0  # uvicorn's own rule then answers this connection's request 503, and closes
        self._quiet_since = self.loop.time()
        self._read_timer = self.loop.call_later(self.read_timeout, self._check_reads)

    def data_received(self, data: bytes) -> None:
        self._quiet_since = self.loop.time()
        super().data_received(data)

    def on_response_complete(self) -> None:
        self._quiet_since = self.loop.time()  # the client owes us nothing until it has our answer
        super().on_response_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._read_timer is not None:
            self._read_timer.cancel()
        super().connection_lost(exc)

    def _check_reads(self) -> None:
        quiet = self.loop.time() - self._quiet_since
        waiting = self.conn.their_state in _CLIENT_OWES and self.conn.our_state in _NOT_ANSWERING
        if waiting and quiet >= self.read_timeout:
            if not self.transport.is_closing():
                self.transport.close()
            return
        due = self.read_timeout - quiet if waiting else self.read_timeout
        self._read_timer = self.loop.call_later(due, self._check_reads)

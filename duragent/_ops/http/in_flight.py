"""What one token identity may hold of the runs API's requests in flight (security review 4, U6).

A request in flight holds its connection, and a connection with a request in flight is never closed for a
newcomer (duragent/_ops/http/connections.py): if one caller kept all of the server's connections busy — 64
ordinary `GET /runs/{id}` of a run no worker answers, each re-sent as it returns — every newcomer, approvers
included, would get 503. So, before the app sees a request:

- each viewer holds at most `REQUESTS_PER_VIEWER` requests in flight, and all viewers together at most
  `VIEWERS_IN_FLIGHT`: the rest of the connections stay for approvers — the people who unblock runs;
- each approver holds at most `REQUESTS_PER_APPROVER` (a program approving many runs at once is an approver),
  so one approver cannot take every slot from the others either.

A request over its cap is answered 429 with `Retry-After` at once: its connection is then idle, and so can be
closed for a newcomer. Event streams (`…/events`) are counted by their own cap (duragent/_ops/http/streams.py),
requests no token vouches for by the connections' rules; both pass through here uncounted.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from typing import Any

from starlette.requests import Request

from duragent._ops.http.auth import Denied, HttpAuth, Principal

REQUESTS_PER_VIEWER = 8
VIEWERS_IN_FLIGHT = 32  # of the server's 64 connections (duragent/_ops/http/serve.py)
REQUESTS_PER_APPROVER = 56
RETRY_AFTER_SECONDS = 2


class RequestSlots:
    def __init__(
        self,
        per_viewer: int = REQUESTS_PER_VIEWER,
        viewers: int = VIEWERS_IN_FLIGHT,
        per_approver: int = REQUESTS_PER_APPROVER,
    ) -> None:
        self.per_viewer, self.viewers, self.per_approver = per_viewer, viewers, per_approver
        self._held: Counter[str] = Counter()
        self._viewers = 0
        self._lock = threading.Lock()

    def take(self, who: Principal) -> str | None:
        """Take a slot for `who`; None, or why there is none."""
        approver = who.may("approver")
        with self._lock:
            if approver and self._held[who.name] >= self.per_approver:
                return f"{who.name} already has {self.per_approver} requests in flight"
            if not approver and self._held[who.name] >= self.per_viewer:
                return f"{who.name} already has {self.per_viewer} requests in flight"
            if not approver and self._viewers >= self.viewers:
                return f"viewers have {self.viewers} requests in flight: the rest are kept for approvers"
            self._held[who.name] += 1
            self._viewers += 0 if approver else 1
        return None

    def give_back(self, who: Principal) -> None:
        with self._lock:
            self._held[who.name] -= 1
            if self._held[who.name] <= 0:
                del self._held[who.name]
            self._viewers -= 0 if who.may("approver") else 1

    def held(self, who: Principal) -> int:
        with self._lock:
            return self._held[who.name]


class InFlightCaps:
    """ASGI middleware: each request of a token identity takes one of its slots for as long as it is in flight."""

    def __init__(self, app: Any, auth: HttpAuth, slots: RequestSlots | None = None) -> None:
        self.app = app
        self.auth = auth
        self.slots = slots or RequestSlots()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        who = self._who(scope) if scope["type"] == "http" and not scope["path"].endswith("/events") else None
        if who is None:
            await self.app(scope, receive, send)
            return
        if (why := self.slots.take(who)) is not None:
            await _too_many(send, why)
            return
        try:
            await self.app(scope, receive, send)
        finally:
            self.slots.give_back(who)

    def _who(self, scope: Any) -> Principal | None:
        request = Request(scope)
        try:
            return self.auth.principal(request.headers.get("authorization"), request.headers.get("cookie"))
        except Denied:
            return None  # the app answers 401 at once


async def _too_many(send: Any, why: str) -> None:
    body = json.dumps({"error": f"{why}; try again shortly"}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"retry-after", str(RETRY_AFTER_SECONDS).encode()),
    ]
    await send({"type": "http.response.start", "status": 429, "headers": headers})
    await send({"type": "http.response.body", "body": body})

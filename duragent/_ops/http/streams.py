"""What one principal may hold of the runs API's event streams (`GET /runs/{id}/events`).

A stream holds a connection for as long as its run lasts, and the server has 64 (duragent/_ops/http/serve.py). So:

- at most `MAX_STREAMS_PER_PRINCIPAL` open at once per token identity: the next one is answered 429 with
  `Retry-After`, and nothing is held for it. (A browser opens one per run it follows; a dashboard a few.)
- each stream ends after `STREAM_SECONDS` (`--stream-seconds`): it closes without an `end` event, after a
  `retry:` hint, and the client opens it again — a browser's EventSource does so by itself; a new stream
  starts with the run's current progress, so nothing is missed but repeated frames. Nobody keeps a slot
  for good, so a cap lowered by the operator, or a token revoked, takes effect within that time.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import AsyncIterator, Callable
from typing import Any

from starlette.responses import StreamingResponse

from duragent._ops.http.auth import Principal
from duragent._ops.http.errors import AtCapacity

MAX_STREAMS_PER_PRINCIPAL = 4
STREAM_SECONDS = 300.0
RECONNECT_MS = 1000  # what the `retry:` line tells an EventSource to wait before it opens the stream again


class StreamSlots:
    """How many streams each principal holds; `take` one before streaming, the response gives it back."""

    def __init__(self, per_principal: int = MAX_STREAMS_PER_PRINCIPAL) -> None:
        self.per_principal = per_principal
        self._held: Counter[str] = Counter()
        self._lock = threading.Lock()

    def take(self, who: Principal) -> Callable[[], None]:
        """A slot for `who` (AtCapacity, 429, if they hold them all), and the one-shot call that gives it back."""
        with self._lock:
            if self._held[who.name] >= self.per_principal:
                raise AtCapacity(
                    f"{who.name} already holds {self.per_principal} event streams: close one, or poll GET /runs/{{id}}",
                    retry_after=5,
                )
            self._held[who.name] += 1
        given_back = False

        def give_back() -> None:
            nonlocal given_back
            with self._lock:
                if not given_back:
                    given_back = True
                    self._held[who.name] -= 1
                    if self._held[who.name] <= 0:
                        del self._held[who.name]

        return give_back

    def held(self, who: Principal) -> int:
        with self._lock:
            return self._held[who.name]


class SlotStream(StreamingResponse):
    """A streaming response that gives its slot back however it ends: the stream's end, the client leaving,
    or the response never starting (a generator never iterated would run no `finally`)."""

    def __init__(self, content: AsyncIterator[str], give_back: Callable[[], None], **kwargs: Any) -> None:
        super().__init__(content, **kwargs)
        self.give_back = give_back

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.give_back()

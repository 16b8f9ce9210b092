"""Server-sent events: the engine's events as `event:`/`data:` frames, with a comment line as keep-alive
whenever nothing was said for a while (proxies keep the connection; clients ignore comments)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from duragent._ops.http.engine import StreamEvent

KEEPALIVE = ": keep-alive\n\n"


def frame(name: str, data: dict[str, Any], id: int | str | None = None) -> str:
    head = f"id: {id}\n" if id is not None else ""
    return f"{head}event: {name}\ndata: {json.dumps(data, sort_keys=True)}\n\n"


async def with_keepalives(
    events: AsyncIterator[StreamEvent],
    keepalive_seconds: float,
    lifetime: float | None = None,
    reconnect_ms: int = 1000,
) -> AsyncIterator[str]:
    """Each event as a frame, a keep-alive after `keepalive_seconds` of silence; ends after the `end` event,
    or after `lifetime` seconds with a `retry:` line (the client reconnects; duragent/_ops/http/streams.py)."""
    iterator = aiter(events)
    pending: asyncio.Future[StreamEvent] = asyncio.ensure_future(anext(iterator))
    loop = asyncio.get_running_loop()
    ends_at = None if lifetime is None else loop.time() + lifetime
    try:
        while True:
            left = None if ends_at is None else ends_at - loop.time()
            if left is not None and left <= 0:
                yield f"retry: {reconnect_ms}\n\n"  # no `end`: the run goes on, and so may the client
                return
            done, _ = await asyncio.wait(
                {pending}, timeout=keepalive_seconds if left is None else min(keepalive_seconds, left)
            )
            if not done:
                if left is None or left > keepalive_seconds:
                    yield KEEPALIVE
                continue
            try:
                event = pending.result()
            except StopAsyncIteration:
                return
            name, data = event[0], event[1]
            yield frame(name, data, event[2] if len(event) > 2 else None)
            if name == "end":
                return
            pending = asyncio.ensure_future(anext(iterator))
    finally:
        pending.cancel()
        with contextlib.suppress(BaseException):
            await pending
        aclose = getattr(iterator, "aclose", None)
        if aclose is not None:
            with contextlib.suppress(BaseException):
                await aclose()

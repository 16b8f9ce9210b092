"""Server-sent events: the engine's events as `event:`/`data:` frames, with a comment line as keep-alive
whenever nothing was said for a while (proxies keep the connection; clients ignore comments)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from duragent.ops.http.engine import StreamEvent

KEEPALIVE = ": keep-alive\n\n"


def frame(name: str, data: dict[str, Any]) -> str:
    return f"event: {name}\ndata: {json.dumps(data, sort_keys=True)}\n\n"


async def with_keepalives(events: AsyncIterator[StreamEvent], keepalive_seconds: float) -> AsyncIterator[str]:
    """Each event as a frame, a keep-alive after `keepalive_seconds` of silence; ends after the `end` event."""
    iterator = aiter(events)
    pending: asyncio.Future[StreamEvent] = asyncio.ensure_future(anext(iterator))
    try:
        while True:
            done, _ = await asyncio.wait({pending}, timeout=keepalive_seconds)
            if not done:
                yield KEEPALIVE
                continue
            try:
                name, data = pending.result()
            except StopAsyncIteration:
                return
            yield frame(name, data)
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

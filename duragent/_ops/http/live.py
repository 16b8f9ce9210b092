"""A run's event stream under Temporal: its progress (duragent/_ops/http/feeds.py) and its live events (the
run's Workflow Stream: the model's text as it is written, tool calls, approvals, the answer; agentic/live.py),
in one server-sent event stream.

Live events are sent with their offset as the SSE `id`, so a client that reconnects with `Last-Event-ID`
(a browser's EventSource does by itself) gets the events after it, nothing missed and nothing repeated;
`progress` frames carry no id (a reconnected stream starts with the current progress). The `end` frame comes
last, once the live stream has been read to its end.

A run started by a worker without a live stream (an older build) has only the progress: its live half ends
at once, saying so in the log.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from temporalio.client import Client

from duragent._live import live_events
from duragent._ops.http.engine import StreamEvent, unknown_end

log = logging.getLogger(__name__)

_DONE = object()
PROGRESS_GRACE_SECONDS = 5.0
# Once the live events are all read the run has ended (or is ending: its last event comes just before it closes),
# so its result is a moment away; a result that does not come ends the stream with the reason, not a hang.
END_SECONDS = 30.0


async def merged(
    progress: AsyncIterator[StreamEvent],
    client: Client,
    run_id: str,
    after: int | None,
    end_of: Callable[[str], Awaitable[dict[str, Any]]],
) -> AsyncIterator[StreamEvent]:
    """The run's progress frames and its live events as they come; `end` once the live events are all read
    (the run has ended then: `end_of` says how), or — a run without them — when the progress says so."""
    queue: asyncio.Queue[Any] = asyncio.Queue()
    live_read = False

    async def follow_progress() -> None:
        try:
            async for event in progress:
                await queue.put(event)
        finally:
            await queue.put(_DONE)

    async def follow_live() -> None:
        nonlocal live_read
        try:
            async for offset, event in live_events(client, run_id, after):
                await queue.put((event.type, event.model_dump(mode="json", exclude={"type"}), offset))
            live_read = True
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # an older worker's run has no live stream: its progress still shows
            log.info("run %s: no live events (%s: %s)", run_id, type(exc).__name__, exc)
        finally:
            await queue.put(_DONE)

    tasks = [asyncio.create_task(follow_progress()), asyncio.create_task(follow_live())]
    end: StreamEvent | None = None
    running = len(tasks)
    try:
        while running:
            try:
                # Once every live event is out the run has ended; its progress follower may still be catching up
                # on the last steps (each is a frame a watcher counts): a short grace, not an open-ended wait.
                item = await (asyncio.wait_for(queue.get(), PROGRESS_GRACE_SECONDS) if live_read else queue.get())
            except TimeoutError:
                break
            if item is _DONE:
                running -= 1
            elif item[0] == "end":
                end = item  # held until the live events are all out
            else:
                yield item
        if live_read:
            end = ("end", await _ending(end_of, run_id))
        if end is not None:
            yield end
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task


async def _ending(end_of: Callable[[str], Awaitable[dict[str, Any]]], run_id: str) -> dict[str, Any]:
    try:
        return await asyncio.wait_for(end_of(run_id), END_SECONDS)
    except Exception as exc:  # the stream must end with a reason rather than hang or break off
        error = f"{type(exc).__name__}: {exc}"
        if isinstance(exc, TimeoutError):
            error = f"no result within {END_SECONDS:.0f} s"
        log.warning("run %s: its end is unknown (%s)", run_id, error)
        return unknown_end(run_id, error)

"""A run's live events, read from outside: the run's Workflow Stream subscribed to from an offset, through
continue-as-new, until the run has ended and its last event is read (`agentic.live` says what they mean)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta

from temporalio.client import Client
from temporalio.contrib.workflow_streams import WorkflowStreamClient

from agentic.live import LIVE_TOPIC, LiveEvent

# How soon a subscriber that has read everything asks again: each ask is an update, two events in the run's
# history when it answers, so not much sooner than the activity's batches come (duragent/_activities/live.py).
POLL_COOLDOWN = timedelta(milliseconds=100)


async def live_events(
    client: Client, run_id: str, after: int | None = None, *, poll_cooldown: timedelta = POLL_COOLDOWN
) -> AsyncIterator[tuple[int, LiveEvent]]:
    """`(offset, event)` of run `run_id` in order, from the one after offset `after` (None: from the first);
    ends once the run has ended and every event is read. A subscriber that reconnects with the last offset it
    read misses nothing and repeats nothing (unless it fell more than a handover's worth behind:
    duragent/_workflows/live.py)."""
    stream = WorkflowStreamClient.create(client, run_id)
    start = 0 if after is None else after + 1
    items = stream.subscribe([LIVE_TOPIC], start, result_type=LiveEvent, poll_cooldown=poll_cooldown)  # type: ignore[arg-type]
    async for item in items:
        yield item.offset, item.data

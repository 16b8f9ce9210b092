"""A run's live events, read from outside: the run's Workflow Stream read from an offset, through
continue-as-new, until the run has ended and its last event is read (`agentic.live` says what they mean).

The stream is read with its own query (`temporalio.contrib.workflow_streams`' poll query, which answers at
once with what the log holds after an offset) each time the run's history grows — long-polled
(`GetWorkflowExecutionHistory(wait_new_event=True)`, as the progress feeds do: duragent/_ops/http/feeds.py).
Every live event follows a history event: a batch of deltas is a signal, and what the workflow publishes comes
with the workflow task that publishes it. So a subscriber adds nothing to the run's history, however long it
waits or however often it reconnects — unlike the stream client's own subscription, whose every poll is an
update: recorded (its acceptance and completion), and left in flight when the subscriber goes away (a browser
reconnecting every few minutes through a day's approval wait would leave hundreds, past the server's limit
of updates in flight per workflow).
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from datetime import timedelta

from temporalio.api.common.v1 import Payload, WorkflowExecution
from temporalio.api.enums.v1 import EventType
from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryRequest
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.contrib.workflow_streams import PollInput, PollResult
from temporalio.service import RPCError, RPCStatusCode

from agentic.live import LIVE_TOPIC, Finished, LiveEvent

POLL_QUERY = "__temporal_workflow_stream_poll"  # the stream's read-only poll (its query, not its update)
RETRY_SECONDS = 1.0  # after a query no worker answered, or a server that went away for a moment
# A query whose task is lost (a worker that stopped polling the queue it was routed to) is never answered: without
# a deadline the reader would wait for ever, and its watcher with it.
QUERY_TIMEOUT = timedelta(seconds=10)
REST_TRIES = 5  # the closed run's last events: asked again this many times before the reader gives up, saying so
# Where the history long poll does not wake a subscriber (a server without it), it asks again after IDLE_FIRST,
# the wait doubling up to IDLE_MAX while nothing comes: an idle subscriber costs a query every 2 s at most.
IDLE_FIRST = 0.05
IDLE_MAX = 2.0

_CLOSED = {
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
}


async def live_events(client: Client, run_id: str, after: int | None = None) -> AsyncIterator[tuple[int, LiveEvent]]:
    """`(offset, event)` of run `run_id` in order, from the one after offset `after` (None: from the first);
    ends once the run has ended and every event is read. A subscriber that reconnects with the last offset it
    read misses nothing and repeats nothing (unless it fell more than a handover's worth behind:
    duragent/_workflows/live.py). RPCError NOT_FOUND for a run that does not exist."""
    offset = 0 if after is None else after + 1
    converter = client.data_converter.payload_converter
    execution, token = "", b""  # "": the chain's latest run; a continue-as-new switches to its successor
    growing: asyncio.Future[tuple[str, str, bytes]] | None = None
    long_polls = True  # the server wakes a history long poll when the run's history grows
    idle = IDLE_FIRST
    try:
        while True:
            result = await _read(client, run_id, execution, offset)
            ended = False
            for item in result.items:
                event: LiveEvent = converter.from_payload(Payload.FromString(base64.b64decode(item.data)), LiveEvent)  # type: ignore[arg-type]
                yield item.offset, event
                ended = ended or isinstance(event, Finished)
            offset = max(offset, result.next_offset)
            if result.more_ready:
                continue
            if ended:  # the run's last event: what is left is read from the closed run
                async for rest in _rest(client, run_id, execution, offset):
                    yield rest
                return
            if result.items:
                idle = IDLE_FIRST
            # Nothing more now: ask again when the run's history grows — or, where the server does not long-poll
            # (the time-skipping test server), after a wait that doubles while nothing comes.
            if growing is None and long_polls:
                growing = asyncio.ensure_future(_grown(client, run_id, execution, token))
            if growing is None:
                await asyncio.sleep(idle)
                done: set[object] = set()
            else:
                done, _ = await asyncio.wait({growing}, timeout=idle)  # type: ignore[assignment]
            if growing is not None and growing in done:
                closed, execution, token = growing.result()
                growing = None
                long_polls = closed != "unsupported"
                idle = IDLE_FIRST if long_polls else idle
                if closed == "ended":
                    async for rest in _rest(client, run_id, execution, offset):
                        yield rest
                    return
            else:
                idle = min(idle * 2, IDLE_MAX)
                if idle == IDLE_MAX and await _closed(client, run_id):  # ended without its last event (terminated)
                    async for rest in _rest(client, run_id, execution, offset):
                        yield rest
                    return
    finally:
        if growing is not None:
            growing.cancel()


async def _poll(client: Client, run_id: str, execution: str, offset: int) -> PollResult:
    handle = client.get_workflow_handle(run_id, run_id=execution or None)
    result: PollResult = await handle.query(
        POLL_QUERY,
        PollInput(topics=[LIVE_TOPIC], from_offset=offset),
        result_type=PollResult,
        rpc_timeout=QUERY_TIMEOUT,
    )
    return result


async def _read(client: Client, run_id: str, execution: str, offset: int) -> PollResult:
    try:
        return await _poll(client, run_id, execution, offset)
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            raise
        await asyncio.sleep(RETRY_SECONDS)  # no worker answered now: ask again in a moment
        return PollResult(next_offset=offset)


async def _closed(client: Client, run_id: str) -> bool:
    try:
        status = (await client.get_workflow_handle(run_id).describe()).status
    except RPCError:
        return False
    return status is not None and status not in (
        WorkflowExecutionStatus.RUNNING,
        WorkflowExecutionStatus.CONTINUED_AS_NEW,
    )


async def _grown(client: Client, run_id: str, execution: str, token: bytes) -> tuple[str, str, bytes]:
    """Long-polls the run's history past `token`: ("", run, token) when it grew; ("ended", run, token) when the
    run closed; a continue-as-new moves to the new run (its stream carries on from the same offsets);
    ("unsupported", ...) from a server that answers a long poll with nothing at once (the time-skipping one)."""
    while True:
        try:
            response = await client.workflow_service.get_workflow_execution_history(
                GetWorkflowExecutionHistoryRequest(
                    namespace=client.namespace,
                    execution=WorkflowExecution(workflow_id=run_id, run_id=execution),
                    next_page_token=token,
                    wait_new_event=True,
                ),
                retry=True,
            )
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                raise
            await asyncio.sleep(RETRY_SECONDS)
            continue
        closed = next((e for e in response.history.events if e.event_type in _CLOSED), None)
        if closed is not None and closed.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
            return "", closed.workflow_execution_continued_as_new_event_attributes.new_execution_run_id, b""
        if closed is not None:
            return "ended", execution, b""
        if not response.history.events and not response.next_page_token:
            return "unsupported", execution, token
        if response.history.events:
            return "", execution, response.next_page_token or token
        token = response.next_page_token


async def _rest(client: Client, run_id: str, execution: str, offset: int) -> AsyncIterator[tuple[int, LiveEvent]]:
    """What the closed run's stream holds after `offset` (asked of the closed run itself: a worker replays it)."""
    converter = client.data_converter.payload_converter
    failures = 0
    while True:
        try:
            result = await _poll(client, run_id, execution, offset)
        except RPCError as exc:
            failures += 1
            if exc.status == RPCStatusCode.NOT_FOUND or failures == REST_TRIES:
                raise
            await asyncio.sleep(RETRY_SECONDS)
            continue
        for item in result.items:
            payload = Payload.FromString(base64.b64decode(item.data))
            yield item.offset, converter.from_payload(payload, LiveEvent)  # type: ignore[arg-type]
        offset = max(offset, result.next_offset)
        if not result.more_ready:
            return

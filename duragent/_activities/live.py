"""A model call's deltas, from the model's thread to the run's live stream (a Temporal Workflow Stream), in
batches: what the people watching see while the reply is written.

Each batch is one signal to the workflow — a history event, where one event per token would make a 500-token
answer 500 events. So deltas are coalesced: consecutive text into one `text_delta`, a call's argument pieces
into one `tool_call_arguments`; the first delta goes out at once (the time to first token is what a person
feels), then a batch every `LIVE_BATCH_SECONDS`, the wait growing by half with each batch up to
`LIVE_BATCH_MAX_SECONDS` (a reader keeps up with a few words at a time at first, and with a paragraph a while
later: a 500-token answer written in 5 s is 7 batches, not 20), or sooner once `LIVE_BATCH_CHARS` wait. While
a signal is on its way the next batch gathers, so a slow server makes batches bigger, not more.

The stream is for watching: a failure to publish is logged and never fails the model call. A retried call
(attempt 2 and on: its worker died mid-stream, or the call failed) first says `step_restarted`, so a client
drops the partial text of the attempt before.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from datetime import timedelta
from types import TracebackType

from temporalio import activity
from temporalio.contrib.workflow_streams import WorkflowStreamClient

from agentic.live import LIVE_TOPIC, LiveEvent, StepRestarted, TextDelta, ToolCallArguments, ToolCallStarted
from agentic.loop import call_uid
from agentic.models.base import ModelDelta

log = logging.getLogger(__name__)

LIVE_BATCH_SECONDS = 0.25
LIVE_BATCH_MAX_SECONDS = 2.0
LIVE_BATCH_CHARS = 4000
# How long the end of a call waits for its last batch to reach the workflow (then it is dropped: the reply,
# stored once, is the record, and `step_finished` carries its text).
LIVE_FLUSH_SECONDS = 10.0


class LiveDeltas:
    """`on_delta` for a model call of `step` (called on the model's thread); an async context manager around
    the call that sends the batches and, on exit, the last one."""

    def __init__(
        self,
        step: int,
        *,
        batch_seconds: float = LIVE_BATCH_SECONDS,
        batch_chars: int = LIVE_BATCH_CHARS,
        client: WorkflowStreamClient | None = None,
    ) -> None:
        info = activity.info()
        self.step, self.attempt = step, info.attempt
        self.batch_seconds, self.batch_chars = batch_seconds, batch_chars
        self._wait = 0.0  # before the next batch: none for the first delta, then batch_seconds, growing
        self.client = client or WorkflowStreamClient.from_within_activity(
            batch_interval=timedelta(seconds=batch_seconds), max_retry_duration=timedelta(seconds=LIVE_FLUSH_SECONDS)
        )
        self.topic = self.client.topic(LIVE_TOPIC)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self._pending: list[LiveEvent] = []
        self._chars = 0
        self._sent_at = -float("inf")
        self._calls: set[int] = set()  # positions whose call has been announced
        self._ticker: asyncio.Task[None] | None = None
        self._flushes: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> LiveDeltas:
        self._loop = asyncio.get_running_loop()
        if self.attempt > 1:
            self._send([StepRestarted(step=self.step, attempt=self.attempt)])
        self._ticker = asyncio.create_task(self._tick())
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
        self._send(self._take())
        try:
            # Every batch delivered before the reply is: watchers see the text before the step's end.
            await asyncio.wait_for(self._delivered(), LIVE_FLUSH_SECONDS)
        except Exception as failure:  # the stream is for watching: the reply is stored whatever happens here
            log.warning("step %s: live deltas not delivered: %s", self.step, failure)

    async def _delivered(self) -> None:
        await asyncio.gather(*self._flushes, return_exceptions=True)
        await self.client.flush()

    def __call__(self, delta: ModelDelta) -> None:
        """On the model's thread: add the delta; send the batch if it is due."""
        now = time.monotonic()
        with self._lock:
            self._add(delta)
            due = now - self._sent_at >= self._wait or self._chars >= self.batch_chars
            batch = self._take_locked(now) if due else []
        if batch and self._loop is not None:
            self._loop.call_soon_threadsafe(self._send, batch)

    def _add(self, delta: ModelDelta) -> None:
        last = self._pending[-1] if self._pending else None
        if delta.kind == "text":
            if not delta.text:
                return
            if isinstance(last, TextDelta):
                self._pending[-1] = last.model_copy(update={"text": last.text + delta.text})
            else:
                self._pending.append(TextDelta(step=self.step, text=delta.text, attempt=self.attempt))
            self._chars += len(delta.text)
            return
        call_id = call_uid(self.step, delta.position)
        if delta.position not in self._calls and delta.name:
            self._calls.add(delta.position)
            self._pending.append(
                ToolCallStarted(step=self.step, call_id=call_id, name=delta.name, attempt=self.attempt)
            )
            last = None
        if not delta.arguments:
            return
        if isinstance(last, ToolCallArguments) and last.call_id == call_id:
            self._pending[-1] = last.model_copy(update={"delta": last.delta + delta.arguments})
        else:
            self._pending.append(
                ToolCallArguments(step=self.step, call_id=call_id, delta=delta.arguments, attempt=self.attempt)
            )
        self._chars += len(delta.arguments)

    def _take(self) -> list[LiveEvent]:
        with self._lock:
            return self._take_locked(time.monotonic())

    def _take_locked(self, now: float) -> list[LiveEvent]:
        batch, self._pending, self._chars = self._pending, [], 0
        if batch:
            self._sent_at = now
            self._wait = min(max(self._wait * 1.5, self.batch_seconds), LIVE_BATCH_MAX_SECONDS)
        return batch

    def _send(self, batch: list[LiveEvent]) -> None:
        """On the event loop: the batch to the stream client, which signals it at once (or right after the
        signal on its way)."""
        if not batch:
            return
        for event in batch:
            self.topic.publish(event)
        # The client's own flush, awaited by nobody but the exit: one signal at a time (its lock), and never
        # cancelled half-way (the stream client's background flusher would be, at its exit).
        flush = asyncio.ensure_future(self.client.flush())
        self._flushes.add(flush)
        flush.add_done_callback(self._flushed)

    def _flushed(self, flush: asyncio.Task[None]) -> None:
        self._flushes.discard(flush)
        if not flush.cancelled() and flush.exception() is not None:
            log.warning("step %s: a batch of live deltas was not delivered: %s", self.step, flush.exception())

    async def _tick(self) -> None:
        """What a stalled model left waiting goes out when its batch is due."""
        while True:
            await asyncio.sleep(self.batch_seconds / 2)
            with self._lock:
                due = time.monotonic() - self._sent_at >= self._wait
                batch = self._take_locked(time.monotonic()) if due else []
            self._send(batch)

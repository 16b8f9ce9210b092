"""Progress of Temporal runs without polling storms: one follower per run, fanned out to every stream of it.

A follower long-polls the run's event history (`GetWorkflowExecutionHistory` with `wait_new_event`): the
server answers the moment an event is appended, or after its long-poll interval (20 s on the dev server)
with nothing. Every action is an activity, so the events say when a step is scheduled (with its label, the
activity's summary) and when it finishes, in order — no step is skipped however fast they come. Only when
a workflow task ends with no activity in flight (an approval wait, the end) does the follower ask the
workflow itself (the `progress` query) for its label and estimate. A stream joining late gets the current
state first (the history so far is read at once, and only its end is news).

An idle run (a 24 h approval wait) costs 3 long polls a minute per run, whatever the number of streams, and
adds nothing to its history: long polls and queries are never recorded. (A long-poll *update* would add
an accepted and a completed event plus a workflow task for each poll; queries every 200 ms would be 300
calls a minute per stream.) `python -m bench http-progress` measures it (docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType
from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryRequest
from temporalio.service import RPCError, RPCStatusCode

from duragent._client import AgentClient, RunHandle
from duragent._errors import TemporalUnavailable, WorkerUnavailable
from duragent._ops.http.engine import StreamEvent, unknown_end
from duragent._ops.http.history import RUN_CLOSED, StepLog
from duragent._workflows.inputs import Progress

RETRY_SECONDS = 1.0


@dataclass
class FeedStats:
    """What the followers asked the server, for the benchmark (and for anyone curious)."""

    history_polls: int = 0
    queries: int = 0
    followers_started: int = 0


class Feeds:
    """One follower per run with at least one stream; it stops when the last stream goes."""

    def __init__(self, agents: AgentClient, end_of: Callable[[str], Awaitable[dict[str, Any]]]) -> None:
        self.agents = agents
        self.end_of = end_of  # the `end` event's data of a closed run
        self.stats = FeedStats()
        self._followers: dict[str, Follower] = {}

    async def stream(self, run_id: str) -> AsyncIterator[StreamEvent]:
        follower = self._followers.get(run_id)
        if follower is None or follower.task.done():
            follower = self._followers[run_id] = Follower(self, run_id)
            self.stats.followers_started += 1
        queue = follower.join()
        try:
            while True:
                event = await queue.get()
                yield event
                if event[0] == "end":
                    return
        finally:
            follower.leave(queue)
            if not follower.queues and self._followers.get(run_id) is follower:
                del self._followers[run_id]
                await follower.stop()

    async def close(self) -> None:
        for follower in list(self._followers.values()):
            await follower.stop()
        self._followers.clear()


class Follower:
    def __init__(self, feeds: Feeds, run_id: str) -> None:
        self.feeds = feeds
        self.run_id = run_id
        self.queues: set[asyncio.Queue[StreamEvent]] = set()
        self.progress: dict[str, Any] | None = None
        self.ended: dict[str, Any] | None = None
        self.task = asyncio.create_task(self._follow(), name=f"follow {run_id}")

    def join(self) -> asyncio.Queue[StreamEvent]:
        queue: asyncio.Queue[StreamEvent] = asyncio.Queue()
        if self.progress is not None:  # a late stream starts from the current state
            queue.put_nowait(("progress", self.progress))
        if self.ended is not None:
            queue.put_nowait(("end", self.ended))
        self.queues.add(queue)
        return queue

    def leave(self, queue: asyncio.Queue[StreamEvent]) -> None:
        self.queues.discard(queue)

    async def stop(self) -> None:
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self.task

    def _publish(self, name: str, data: dict[str, Any]) -> None:
        if name == "progress":
            if data == self.progress:
                return
            self.progress = data
        else:
            self.ended = data
        for queue in self.queues:
            queue.put_nowait((name, data))

    async def _follow(self) -> None:
        try:
            await self._follow_history()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the stream must end with a reason rather than hang
            self._publish("end", unknown_end(self.run_id, f"{type(exc).__name__}: {exc}"))

    async def _follow_history(self) -> None:
        agents, stats = self.feeds.agents, self.feeds.stats
        client = agents.client
        log = StepLog(client.data_converter)
        handle = agents.handle(self.run_id)
        run, token = "", b""  # "" = the latest run of the chain; a continue-as-new switches to its successor
        total: int | None = None
        label = "starting"
        while True:
            try:
                response = await client.workflow_service.get_workflow_execution_history(
                    GetWorkflowExecutionHistoryRequest(
                        namespace=client.namespace,
                        execution=WorkflowExecution(workflow_id=self.run_id, run_id=run),
                        next_page_token=token,
                        wait_new_event=True,
                    ),
                    retry=True,
                )
            except RPCError as exc:
                if exc.status == RPCStatusCode.NOT_FOUND:
                    raise
                await asyncio.sleep(RETRY_SECONDS)  # the server went away for a moment: keep following
                continue
            stats.history_polls += 1
            closed = None
            catching_up = not token  # the history so far: its final state is news, its steps are not
            task_ended = catching_up
            for event in response.history.events:
                if await log.add(event):
                    running = log.in_flight
                    label = running.label if running is not None else label
                    if not catching_up:
                        self._show(log.done, total, label)
                if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
                    task_ended = True
                if event.event_type in RUN_CLOSED:
                    closed = event
            if closed is not None and closed.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
                run, token = closed.workflow_execution_continued_as_new_event_attributes.new_execution_run_id, b""
                continue
            if closed is not None:
                end = await self.feeds.end_of(self.run_id)
                finished = "finished" if end["status"] == "completed" else end["status"]
                self._show(log.done, log.done, f"{finished}: {end['stop']}" if end.get("stop") else finished)
                self._publish("end", end)
                return
            if catching_up and closed is None:
                self._show(log.done, total, label)
            if task_ended and (log.in_flight is None or total is None):
                progress = await self._query(handle)
                stats.queries += 1
                if progress is not None:
                    total = progress.total
                    label = label if log.in_flight is not None else progress.label
                    self._show(log.done, total, label)
            token = response.next_page_token

    def _show(self, done: int, total: int | None, label: str) -> None:
        self._publish("progress", {"step": done, "total": max(total, done) if total else None, "label": label})

    async def _query(self, handle: RunHandle) -> Progress | None:
        try:
            return await handle.live()
        except (WorkerUnavailable, TemporalUnavailable):
            return None  # no worker (or server) answered now: the events still tell the steps

"""What a worker does first when it starts: release the runs that are stepping from any worker's sticky queue.

A worker keeps the runs it served in its cache, and the server sends each run's next workflow task to that
worker's own (sticky) queue. When the worker is SIGKILLed, the server cannot tell: the next workflow task of each
of its runs waits on the dead worker's queue for the sticky timeout (`duragent._config.settings.STICKY_TIMEOUT`, 5 s)
before any other worker may take it — the largest part of a run's recovery after a crash (docs/benchmarks.md,
Recovery: 9.6 s → under 5 s). A worker that starts (a supervisor restarting the killed one, say)
therefore first asks the server to forget the sticky queue of every run on its task queue that is stepping
(`ResetStickyTaskQueue`); their next workflow tasks go to the shared queue, where it takes them at once.

Then, while it serves, the runs that wait for a person — an approval, a conversation's next message — are
released too: the next decision or message to reach one after a restart was answered only once its workflow task
had waited out the dead worker's sticky queue (5,074 ms measured after a restart; 297 ms median with this release,
`python -m bench conversations`), a visible stall in a chat.

The price: one visibility list and one request per stepping or waiting run, once per worker start; and the runs
of other workers still alive lose their cache entry once, so their next workflow task replays their history on
whichever worker takes it (a waiting run's, when its decision or message comes).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager

from temporalio import worker as temporal_worker
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import ResetStickyTaskQueueRequest
from temporalio.client import Client, WorkflowHistory
from temporalio.service import RPCError, RPCStatusCode

log = logging.getLogger(__name__)

# Runs whose status says they are taking steps: their next workflow task comes within seconds. Runs without
# our search attributes (started with `search_attributes=False`; the webhook notifier) have no status: they
# are released too.
STEPPING = ("running", "compensating")
# Runs waiting for a person: a decision, a conversation's next message (open), its queued messages (closing).
WAITING = ("awaiting_approval", "open", "closing")
IN_FLIGHT = 16  # reset requests at once: a restart with many stepping runs does not flood the server
# The worker starts polling once its runs are released, or after this long at most (then the rest is released
# while it serves): the first runs are released before any of their workflow tasks can be put back on a dead
# queue, and many stepping runs (or a slow server) never hold a worker's start up for long.
RELEASE_FIRST = 2.0


def stepping_runs(task_queue: str, version: str | None = None) -> str:
    """The visibility query for the open runs on `task_queue` that may be stepping; with `version`
    (`deployment:build_id`), only those of that build."""
    return _open_runs(task_queue, version, STEPPING, unlabelled=True)


def waiting_runs(task_queue: str, version: str | None = None) -> str:
    """The visibility query for the open runs on `task_queue` that wait for a person (released second)."""
    return _open_runs(task_queue, version, WAITING, unlabelled=False)


def _open_runs(task_queue: str, version: str | None, statuses: tuple[str, ...], *, unlabelled: bool) -> str:
    for name in (task_queue, version or ""):
        if "'" in name or "\\" in name:
            raise ValueError(f"not a task queue or build visibility can filter on: {name!r}")
    named = "AgentStatus IN (" + ", ".join(f"'{status}'" for status in statuses) + ")"
    query = f"TaskQueue = '{task_queue}' AND ExecutionStatus = 'Running'"
    query += f" AND ({named} OR AgentStatus IS NULL)" if unlabelled else f" AND {named}"
    return query + (f" AND TemporalWorkerDeploymentVersion = '{version}'" if version else "")


def own_build(worker: temporal_worker.Worker) -> str | None:
    """The build a versioned worker serves (`deployment:build_id`), None for an unversioned worker. A versioned
    worker releases only its own build's runs: a new build's worker, started next to the old build's live
    workers during a deploy, must not reset the sticky queues of their runs — a pinned run's next workflow task
    then reached the new build's worker (seen on the dev server, 1.32), which cannot replay it."""
    deployment = worker.config().get("deployment_config")
    if deployment is None or not deployment.use_worker_versioning:
        return None
    return f"{deployment.version.deployment_name}:{deployment.version.build_id}"


async def release_sticky_runs(
    client: Client, task_queue: str, version: str | None = None, *, waiting: bool = False
) -> int:
    """Reset the sticky queue of every open run on `task_queue` (of build `version`, when given) that may be
    stepping (`waiting`: that waits for a person instead); how many were reset."""
    gate = asyncio.Semaphore(IN_FLIGHT)

    async def release(workflow_id: str, run_id: str) -> bool:
        async with gate:
            try:
                await client.workflow_service.reset_sticky_task_queue(
                    ResetStickyTaskQueueRequest(
                        namespace=client.namespace, execution=WorkflowExecution(workflow_id=workflow_id, run_id=run_id)
                    )
                )
            except RPCError as exc:
                if exc.status == RPCStatusCode.NOT_FOUND:
                    return False  # it closed since it was listed
                raise
            return True

    pending: set[asyncio.Task[bool]] = set()
    released = 0
    query = waiting_runs(task_queue, version) if waiting else stepping_runs(task_queue, version)
    async for execution in client.list_workflows(query):
        if len(pending) >= IN_FLIGHT * 4:  # keep the listing ahead of the resets, but not the whole list in memory
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            released += sum(task.result() for task in done)
        pending.add(asyncio.create_task(release(execution.id, execution.run_id or "")))
    released += sum(await asyncio.gather(*pending))
    return released


class ReleaseStickyRuns(temporal_worker.Plugin):
    """A worker plugin (`duragent.build_worker` adds it): as the worker starts, release the stepping runs on
    its task queue from their sticky queues — for up to `RELEASE_FIRST` seconds before it polls, so that a
    workflow task of theirs is not put back on a dead queue meanwhile, and then while it serves. A server without
    visibility (the time-skipping test server) or a failed request only costs the speed-up, logged."""

    def configure_worker(self, config: temporal_worker.WorkerConfig) -> temporal_worker.WorkerConfig:
        return config

    async def run_worker(
        self, worker: temporal_worker.Worker, next: Callable[[temporal_worker.Worker], Awaitable[None]]
    ) -> None:
        releasing = asyncio.create_task(self._release(worker.client, worker.task_queue, own_build(worker)))
        await asyncio.wait({releasing}, timeout=RELEASE_FIRST)
        try:
            await next(worker)
        finally:
            releasing.cancel()

    async def _release(self, client: Client, task_queue: str, version: str | None) -> None:
        for waiting, which in (False, "stepping"), (True, "waiting"):  # the urgent ones first
            started = time.monotonic()
            try:
                released = await release_sticky_runs(client, task_queue, version, waiting=waiting)
            except RPCError as exc:
                log.info("could not release %s runs from sticky queues on %s: %s", which, task_queue, exc.message)
                return
            if released:
                took = time.monotonic() - started
                log.info(
                    "released %d %s runs on %s from their sticky queues in %.1f s", released, which, task_queue, took
                )

    def configure_replayer(self, config: temporal_worker.ReplayerConfig) -> temporal_worker.ReplayerConfig:
        return config

    def run_replayer(
        self,
        replayer: temporal_worker.Replayer,
        histories: AsyncIterator[WorkflowHistory],
        next: Callable[
            [temporal_worker.Replayer, AsyncIterator[WorkflowHistory]],
            AbstractAsyncContextManager[AsyncIterator[temporal_worker.WorkflowReplayResult]],
        ],
    ) -> AbstractAsyncContextManager[AsyncIterator[temporal_worker.WorkflowReplayResult]]:
        return next(replayer, histories)

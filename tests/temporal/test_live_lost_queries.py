"""A reader of a run's live events whose queries are never answered gives up, saying so, instead of waiting for
ever (duragent/_live.py): each stream query has a deadline, and the closed run's last events are asked for a
bounded number of times.

On the real dev server, a run completes on our worker, which then stops; a poller of the attacker's kind takes
every workflow task on the agents' queue and never answers it — what a worker that took the query and died
leaves behind. Without the deadline the reader would wait until the server gives up on the query (never, for a
reader without one); without the bound, it would ask again for ever."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from datetime import timedelta

import pytest
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import PollWorkflowTaskQueueRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from duragent import _live
from duragent._activities.inputs import AgentResult
from duragent._live import live_events
from duragent._workflows.agent import AgentWorkflow
from duragent._workflows.inputs import AgentInput
from tests.conftest import new_worker
from tests.support.live_agents import AGENTS

pytestmark = pytest.mark.system


async def _drop_workflow_tasks(client: Client, task_queue: str, taken: list[str]) -> None:
    """Takes every workflow task on `task_queue` and answers none (a query's task counts by its query type)."""
    while True:
        try:
            response = await client.workflow_service.poll_workflow_task_queue(
                PollWorkflowTaskQueueRequest(
                    namespace=client.namespace, task_queue=TaskQueue(name=task_queue), identity="takes-and-drops"
                ),
                timeout=timedelta(seconds=5),
            )
        except RPCError as exc:
            if "Timeout expired" in str(exc):
                continue  # an empty long poll, ended by its own deadline: poll again
            raise
        if response.HasField("query"):
            taken.append(response.query.query_type)


async def test_a_reader_whose_queries_are_lost_gives_up_after_its_bounded_tries(
    dev_env, ledger, task_queue, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(_live, "QUERY_TIMEOUT", timedelta(seconds=1))
    monkeypatch.setattr(_live, "RETRY_SECONDS", 0.05)
    client = dev_env.client
    run_id = f"lost-{uuid.uuid4().hex[:10]}"
    async with new_worker(client, task_queue, ledger, agents=AGENTS):
        handle = await client.start_workflow(
            AgentWorkflow.run,
            AgentInput(agent="live-writer", stream=True),
            id=run_id,
            task_queue=task_queue,
            result_type=AgentResult,
        )
        assert (await handle.result()).status == "completed"
    taken: list[str] = []
    dropper = asyncio.ensure_future(_drop_workflow_tasks(client, task_queue, taken))
    try:
        with pytest.raises(RPCError) as raised:
            # Bounded: one query before the run is seen closed, then REST_TRIES of its last events, 1 s each.
            await asyncio.wait_for(_read_all(client, run_id), timeout=60)
    finally:
        dropper.cancel()
        with contextlib.suppress(asyncio.CancelledError, RPCError):
            await dropper
    # The reader's own deadline ended each query, and it stopped after its tries (the first reads, before the
    # run was seen closed, are asked again with no bound: a running run's reader waits for its next events).
    assert "Timeout expired" in str(raised.value) and raised.value.status != RPCStatusCode.NOT_FOUND
    assert taken.count(_live.POLL_QUERY) >= _live.REST_TRIES


async def _read_all(client: Client, run_id: str) -> list[object]:
    return [item async for item in live_events(client, run_id)]

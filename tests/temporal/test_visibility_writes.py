"""What a run writes to show itself (issue 20): `AgentClient` starts a run with the search attributes its
first publish would write, so that publish writes nothing, and such a run writes no empty approvals memo (a
missing one reads as none) — two history events (and two visibility writes) fewer per run — while what
visibility shows stays the same. A run started without them (a raw start, an older client) still publishes
them itself."""

from __future__ import annotations

import uuid

from temporalio.api.enums.v1 import EventType

from agentic import Stop
from durable_agents.client import AgentClient
from tests.conftest import agent_named, new_worker
from workflows import search_attributes as sa
from workflows.agent import AgentWorkflow
from workflows.inputs import AgentInput

UPSERT = EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES
MEMO = EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED


async def test_a_run_started_by_the_client_writes_only_what_changes(skipping_env, ledger, task_queue):
    agent = agent_named("t-rows")
    async with new_worker(skipping_env.client, task_queue, ledger):
        run = await AgentClient(skipping_env.client, task_queue=task_queue).start(agent)
        result = await run.result()
        history = await run.workflow.fetch_history()
        description = await run.describe()
    assert result.stop is Stop.ANSWERED
    kinds = [e.event_type for e in history.events]
    assert MEMO not in kinds  # it never waited for an approval: no memo written
    # One upsert: the end (status, stop, and the step count at the end); none at the start.
    assert kinds.count(UPSERT) == 1
    shown = description.typed_search_attributes
    assert shown.get(sa.AGENT_STATUS) == "completed" and shown.get(sa.AGENT_STOP) == "answered"
    assert shown.get(sa.AGENT_NAME) == "t-rows" and shown.get(sa.AGENT_STEP) == result.usage.steps
    assert await description.memo_value("pending_approvals", default=[]) == []  # as every reader reads it


async def test_a_run_started_without_them_publishes_them_itself(skipping_env, ledger, task_queue):
    async with new_worker(skipping_env.client, task_queue, ledger):
        handle = await skipping_env.client.start_workflow(
            AgentWorkflow.run, AgentInput(agent="t-rows"), id=f"raw-{uuid.uuid4().hex[:10]}", task_queue=task_queue
        )
        result = await handle.result()
        history = await handle.fetch_history()
        description = await handle.describe()
    kinds = [e.event_type for e in history.events]
    assert kinds.count(UPSERT) == 2 and kinds.count(MEMO) == 1  # the start's, then the end's; the memo once
    shown = description.typed_search_attributes
    assert shown.get(sa.AGENT_STATUS) == "completed" and shown.get(sa.AGENT_STEP) == result.usage.steps


async def test_a_run_started_without_search_attributes_writes_none(skipping_env, ledger, task_queue):
    """`search_attributes=False`: the price list's switch (docs/benchmarks.md) — no upsert, no memo, nothing to
    filter on; the run itself is unchanged, and its progress is still answered by the query."""
    agent = agent_named("t-rows")
    async with new_worker(skipping_env.client, task_queue, ledger):
        run = await AgentClient(skipping_env.client, task_queue=task_queue).start(agent, search_attributes=False)
        result = await run.result()
        history = await run.workflow.fetch_history()
        description = await run.describe()
    assert result.stop is Stop.ANSWERED and result.usage.steps >= 3
    kinds = [e.event_type for e in history.events]
    assert UPSERT not in kinds and MEMO not in kinds
    assert description.typed_search_attributes.get(sa.AGENT_STATUS) is None

"""Retention of conversations: a conversation's turns (each a run whose transcript continues the one before it)
are kept while the conversation is open or not yet due, then pruned together with every store row they own."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
import pytest_asyncio
from temporalio.client import Client

from duragent._ops.retention.policy import Policy
from duragent._ops.retention.temporal import prune
from duragent._workflows.turns import turn_run_id
from tests.conftest import TEST_AGENTS, eventually
from tests.ops.test_prune import fresh_namespace, prune_env, serving, stack_on  # noqa: F401 (prune_env: a fixture)
from tests.support.conversation_agents import CHAT

pytestmark = pytest.mark.system


@pytest_asyncio.fixture
async def namespace_client(prune_env) -> Client:  # noqa: F811
    return await fresh_namespace(prune_env)


async def close_times(client: Client, ids: list[str]) -> dict[str, datetime]:
    found: dict[str, datetime] = {}
    for workflow_id in ids:
        async for execution in client.list_workflows(f'WorkflowId = "{workflow_id}" AND ExecutionStatus != "Running"'):
            if execution.close_time is not None and execution.status.name != "CONTINUED_AS_NEW":
                found[workflow_id] = execution.close_time
    return found


async def test_a_conversations_turns_are_pruned_together_once_the_conversation_is_due(
    namespace_client, backend, task_queue, tmp_path
):
    client = namespace_client
    stack = stack_on(backend, client, task_queue, tmp_path)
    conversation_id = f"conv-{uuid.uuid4().hex[:8]}"
    turns = [turn_run_id(conversation_id, n) for n in (1, 2, 3)]
    async with serving(stack, task_queue, agents=[*TEST_AGENTS, CHAT]):
        conv = stack.agents.conversation(CHAT, conversation_id)
        for text in ("hello", "row r-1", "bye"):
            await conv.send(text)
        open_pass = await stack.prune(31)
        assert not set(turns) & set(open_pass.archived)
        assert {s.run_id: s.why for s in open_pass.skipped}[
            turns[0]
        ] == f"its conversation {conversation_id} is still open"
        await conv.close()
    everything = [*turns, conversation_id]
    closed: dict[str, datetime] = {}

    async def all_closed() -> bool:
        closed.update(await close_times(client, everything))
        return set(everything) <= set(closed)

    await eventually(all_closed, what="the turns and the conversation in visibility as closed")
    # As of a moment when the first turn is due but the conversation (closed last) is not yet.
    between = closed[turns[0]] + (closed[conversation_id] - closed[turns[0]]) / 2 + timedelta(days=30)
    early = await prune(client, stack.stores, stack.archive_dir, between, Policy(), dry_run=False)
    assert turns[0] not in early.archived
    assert {s.run_id: s.why for s in early.skipped}[turns[0]].startswith(f"its conversation {conversation_id} is kept")
    assert {turn for turn in turns if turn in stack.owners()} == set(turns)  # every turn's rows still there

    due = await prune(
        client, stack.stores, stack.archive_dir, datetime.now(UTC) + timedelta(days=31), Policy(), dry_run=False
    )
    assert set(turns) <= set(due.archived), due.as_dict()
    assert not set(turns) & stack.owners()  # their transcript rows released
    assert stack.stores.ledger.effects(turns[1]) == []  # and the effect rows purged

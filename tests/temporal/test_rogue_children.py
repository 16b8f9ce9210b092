"""A delegated run's or a turn's result that an activity reads for the workflow (`attach_delegate`, `attach_turn`:
a parent reset past its child's start, a conversation that handed over mid-turn) is taken only under the agents'
workers' seal. The server's parent link says who started the run, not who answered it: a stranger's worker polling
the agents' queue can take the run's tasks and complete it with what it likes. Played here with the stranger's own
`AgentWorkflow` completing the run at once (tests/support/forged_children.py)."""

from __future__ import annotations

import os
import uuid
from typing import Any

import pytest
from temporalio.common import WorkflowIDReusePolicy
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment
from temporalio.worker import Worker

from agentic import ToolStatus
from duragent._activities.turns import AttachTurnInput, TurnActivities
from duragent._client import AgentClient
from duragent._config.worker_keys import WorkerKeys
from duragent._workflows.agent import AgentWorkflow
from duragent._workflows.inputs import AgentInput
from tests.conftest import TEST_AGENTS, new_worker
from tests.support import delegation_agents
from tests.support.earlier_parent import EarlierParent
from tests.support.forged_children import FORGED, ForgedAgent, ForgedConversation

KEYS = WorkerKeys((os.urandom(32),))
AGENTS = [*TEST_AGENTS, *delegation_agents.agents]


async def _desk_attaching_to(env: Any, task_queue: str, ledger: Any, child_queue: str, *workflows: Any) -> Any:
    """A desk run under an id whose earlier run started its child (call 2.1) on `child_queue`: it attaches."""
    root = f"attach-{uuid.uuid4().hex[:8]}"
    earlier = AgentInput(agent="d-accounts", task="Refund 2500 to acme.")
    async with (
        new_worker(env.client, task_queue, ledger, agents=AGENTS, worker_keys=KEYS),
        Worker(env.client, task_queue=f"{task_queue}-earlier", workflows=list(workflows)),
    ):
        await env.client.execute_workflow(
            EarlierParent.run, args=[f"{root}~2.1", child_queue, earlier], id=root, task_queue=f"{task_queue}-earlier"
        )
        await env.client.start_workflow(
            AgentWorkflow.run,
            AgentInput(agent="d-desk"),
            id=root,
            task_queue=task_queue,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,  # a reset parent's next run, in effect
        )
        return await AgentClient(env.client, task_queue=task_queue).handle(root).result()


async def test_a_delegated_run_its_parent_started_and_the_agents_answered_is_attached_under_keys(
    skipping_env, ledger, task_queue
):
    result = await _desk_attaching_to(skipping_env, task_queue, ledger, task_queue, EarlierParent)
    assert result.output == "Desk: Accounts: Clerk: posted E-1."


async def test_a_delegated_run_a_stranger_answered_is_not_taken_as_the_answer(skipping_env, ledger, task_queue):
    # The child runs where the stranger's own AgentWorkflow answers it (the queue of the earlier run's worker).
    result = await _desk_attaching_to(
        skipping_env, task_queue, ledger, f"{task_queue}-earlier", EarlierParent, ForgedAgent
    )
    told = result.records[1]
    assert told.status is ToolStatus.ERROR and "StrangerAnswer" in told.content, told
    assert "the agents' workers did not make (it carries no seal)" in told.content
    assert FORGED not in str(result.output) and FORGED not in told.content


async def test_a_turn_a_stranger_answered_is_not_taken_as_the_turns_answer(skipping_env, task_queue):
    conversation = f"chat-{uuid.uuid4().hex[:8]}"
    turn = f"{conversation}~turn-1"
    async with Worker(skipping_env.client, task_queue=task_queue, workflows=[ForgedConversation, ForgedAgent]):
        await skipping_env.client.execute_workflow(
            ForgedConversation.run, args=[turn, task_queue], id=conversation, task_queue=task_queue
        )
    env = ActivityEnvironment(client=skipping_env.client)
    env.payload_converter = pydantic_data_converter.payload_converter
    env.info = env.info.__class__(**{**env.info.__dict__, "workflow_type": "ConversationWorkflow"})
    env.info = env.info.__class__(**{**env.info.__dict__, "workflow_id": conversation})
    # Without keys nothing is sealed and the parent link is the whole check: the stranger's answer passes.
    unchecked = await env.run(TurnActivities().attach_turn, AttachTurnInput(run_id=turn))
    assert unchecked.output == FORGED
    with pytest.raises(ApplicationError, match=r"did not make \(it carries no seal\)") as refused:
        await env.run(TurnActivities(KEYS).attach_turn, AttachTurnInput(run_id=turn))
    assert refused.value.type == "StrangerAnswer" and refused.value.non_retryable

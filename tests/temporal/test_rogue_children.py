"""A delegated run's or a turn's result that an activity reads for the workflow (`attach_delegate`, `attach_turn`:
a parent reset past its child's start, a conversation that handed over mid-turn) is taken only under the agents'
workers' seal. The server's parent link says who started the run, not who answered it: a stranger's worker polling
the agents' queue can take the run's tasks and complete it with what it likes. Played here with the stranger's own
`AgentWorkflow` completing the run at once (tests/support/forged_children.py).

And what a stranger hands a run as it starts it: a conversation's continuation (`carry`) or a turn's transcript
(`history_ref`) is taken only from a start the agents' workers sealed."""

from __future__ import annotations

import asyncio
import os
import uuid
from typing import Any

import pytest
from temporalio.client import WorkflowFailureError
from temporalio.common import WorkflowIDReusePolicy
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment
from temporalio.worker import Worker

from agentic import ToolStatus
from duragent._activities.inputs import TranscriptPart
from duragent._activities.turns import AttachTurnInput, TurnActivities
from duragent._client import AgentClient
from duragent._config.worker_keys import WorkerKeys
from duragent._workflows.agent import AgentWorkflow
from duragent._workflows.conversation_inputs import ConversationCarry
from duragent._workflows.inputs import AgentInput
from duragent._workflows.turns import turn_run_id
from tests.conftest import TEST_AGENTS, new_worker
from tests.support import delegation_agents
from tests.support.conversation_agents import CHAT
from tests.support.earlier_parent import EarlierParent
from tests.support.forged_children import FORGED, ForgedAgent, ForgedConversation, StrangerContinues, StrangerTurns

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


# -- what a stranger hands a run at its start -------------------------------------------------------------------


async def test_a_conversation_continuation_a_stranger_wrote_is_refused_at_its_first_task(
    skipping_env, ledger, task_queue
):
    """Continuing as new into our conversation type is open to anyone's workflow: the conversation's own check
    (a `carry` only on a continuation) passes. The carry would name the transcript every later turn reads and what
    the conversation has consumed; without the agents' workers' seal on the continuation it is refused."""
    chat = f"chat-{uuid.uuid4().hex[:8]}"
    carry = ConversationCarry(turns=3, answered=3, transcript=TranscriptPart(head="someone-elses-transcript"))
    async with (
        new_worker(skipping_env.client, task_queue, ledger, agents=AGENTS, worker_keys=KEYS),
        Worker(skipping_env.client, task_queue=f"{task_queue}-stranger", workflows=[StrangerContinues]),
    ):
        handle = await skipping_env.client.start_workflow(
            StrangerContinues.run, args=[task_queue, carry], id=chat, task_queue=f"{task_queue}-stranger"
        )
        with pytest.raises(WorkflowFailureError) as failed:
            await asyncio.wait_for(handle.result(), 60)
    assert "its `carry` was not handed over by the agents' workers (no valid seal)" in str(failed.value.cause)
    history = await handle.fetch_history()  # the last run's: it ran no activity, started no turn
    assert [e for e in history.events if e.HasField("activity_task_scheduled_event_attributes")] == []
    assert [e for e in history.events if e.HasField("start_child_workflow_execution_initiated_event_attributes")] == []


async def test_a_turn_a_stranger_starts_from_a_conversations_transcript_is_refused(skipping_env, ledger, task_queue):
    """The turn's origin check asks that its parent be the conversation its id names; a stranger's parent under an
    id of its own passes that. Without the agents' workers' seal on the start, the run never reads the transcript."""
    parent = f"chat-{uuid.uuid4().hex[:8]}"
    child = AgentInput(agent="trip", task="Repeat what they said.", history_ref=TranscriptPart(head="their-transcript"))
    async with (
        new_worker(skipping_env.client, task_queue, ledger, agents=AGENTS, worker_keys=KEYS),
        Worker(skipping_env.client, task_queue=f"{task_queue}-stranger", workflows=[StrangerTurns]),
    ):
        told = await skipping_env.client.execute_workflow(
            StrangerTurns.run, args=[task_queue, child], id=parent, task_queue=f"{task_queue}-stranger"
        )
        turn = skipping_env.client.get_workflow_handle(f"{parent}~turn-1")
        history = await turn.fetch_history()
    assert f"run {parent} started it from a conversation's transcript without the agents' workers' seal" in told
    assert [e for e in history.events if e.HasField("activity_task_scheduled_event_attributes")] == []


async def test_without_keys_a_run_of_a_strangers_own_reads_no_other_runs_transcript(skipping_env, ledger, task_queue):
    """No keys, so the start is not sealed and the stranger's parent passes the turn's origin check: the transcript
    store's own record of whose rows a head is (its owners) still keeps the victim's transcript from its model."""
    agents = AgentClient(skipping_env.client, task_queue=task_queue)
    victim, stranger = f"conv-{uuid.uuid4().hex[:8]}", f"chat-{uuid.uuid4().hex[:8]}"
    async with (
        new_worker(skipping_env.client, task_queue, ledger, agents=[*AGENTS, CHAT]),
        Worker(skipping_env.client, task_queue=f"{task_queue}-stranger", workflows=[StrangerTurns]),
    ):
        await agents.conversation(CHAT, victim).send("my card is 4111 1111 1111 1111")
        head = (await agents.handle(turn_run_id(victim, 1)).result()).transcript_ref
        assert head is not None  # read from the victim's history, which frontend access reads
        child = AgentInput(agent=CHAT.name, task="Repeat what they said.", history_ref=TranscriptPart(head=head))
        await skipping_env.client.execute_workflow(
            StrangerTurns.run, args=[task_queue, child], id=stranger, task_queue=f"{task_queue}-stranger"
        )
        history = await skipping_env.client.get_workflow_handle(turn_run_id(stranger, 1)).fetch_history()
    failures = [
        e.activity_task_failed_event_attributes.failure.message
        for e in history.events
        if e.HasField("activity_task_failed_event_attributes")
    ]
    assert any("written here only for runs other than" in f for f in failures), failures
    completed = [e for e in history.events if e.HasField("activity_task_completed_event_attributes")]
    assert all(
        b"4111" not in p.data for e in completed for p in e.activity_task_completed_event_attributes.result.payloads
    )

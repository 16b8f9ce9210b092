"""A forged `carry` (the refund agent's spec without approver keys, a refund queued,
a book that says it was approved) must never be taken as a continuation. The guard looked only at
`continued_run_id`, which the server also sets on a cron run, a retry, and the run a workflow of someone
else's continues as new into `AgentWorkflow` on the agents' queue. Each route is played here as
carry_cron.py played it (a plain Temporal client, no keys), with the worker requiring signed decisions and
without: nothing is refunded, and the run that was handed the forged carry fails saying why."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from datetime import timedelta

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHistory,
    WorkflowUpdateFailedError,
)
from temporalio.common import RetryPolicy
from temporalio.worker import Worker

from agentic import Registry
from agentic.approvals import Decision
from agentic.delegation import Delegation
from agentic.signing import ApproverKey, parse_public_keys
from duragent._activities.inputs import ContinueAsNewPolicy, EngineOptions
from duragent._client import AgentClient
from duragent._errors import UnknownRun
from duragent._workflows.agent import AgentWorkflow
from duragent._workflows.inputs import AgentInput
from duragent.replay import LOCAL_ACTIVITY_MARKER
from tests.conftest import eventually, new_worker
from tests.support.agents_for_tests import PAY_SEQUENCE
from tests.support.outsider import ForeignHandover, ForeignParent, ImpostorHandover, forged_continuation

MARIA = ApproverKey.generate("maria")
KEYS = parse_public_keys(MARIA.public_entry())


async def failure_of_the_run_after(client: Client, workflow_id: str, first: str) -> str:
    """How the run the server started after run `first` of `workflow_id` ended: its failure message, or
    `completed: ...` when it did what it was handed."""
    found: dict[str, str] = {}

    async def closed() -> bool:
        history = await client.get_workflow_handle(workflow_id, run_id=first).fetch_history()
        following = _next_run(history)
        if not following:
            return False
        for event in (await client.get_workflow_handle(workflow_id, run_id=following).fetch_history()).events:
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
                found["why"] = event.workflow_execution_failed_event_attributes.failure.message
            elif event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
                found["why"] = "completed: it acted on the forged carry"
        return bool(found)

    await eventually(closed, timeout=60, what="the run after the first one to end")
    return found["why"]


def _next_run(history: WorkflowHistory) -> str:
    last = history.events[-1]
    for field in (
        "workflow_execution_failed_event_attributes",
        "workflow_execution_timed_out_event_attributes",
        "workflow_execution_completed_event_attributes",
        "workflow_execution_continued_as_new_event_attributes",
    ):
        if last.HasField(field):
            return getattr(last, field).new_execution_run_id
    return ""


@pytest.mark.parametrize("keys", [KEYS, {}], ids=["signed-decisions", "no-keys"])
async def test_a_cron_run_is_never_handed_a_forged_carry(dev_env, ledger, task_queue, keys) -> None:
    """On the dev server (the time-skipping one cannot start cron runs), every two seconds."""
    run_id = f"sec-cron-{uuid.uuid4().hex[:8]}"
    client = dev_env.client
    async with new_worker(client, task_queue, ledger, approver_keys=keys):
        handle = await client.start_workflow(
            "AgentWorkflow",
            forged_continuation(run_id, "ATTACKER-9999"),
            id=run_id,
            task_queue=task_queue,
            cron_schedule="@every 2s",
        )
        try:
            # The first run is rejected (no predecessor); the next one is the cron's.
            why = await failure_of_the_run_after(client, run_id, handle.result_run_id or "")
            first = await client.get_workflow_handle(run_id, run_id=handle.result_run_id).fetch_history()
            cron_run = await client.get_workflow_handle(run_id, run_id=_next_run(first)).fetch_history()
        finally:
            await handle.terminate(reason="the test is over")
    assert ledger.effects(run_id) == []
    # Refused in its first workflow task, from what the server says of how it started: the worker was never
    # asked to describe the agent (or to check the predecessor), so no local activity marker is in its history.
    markers = [e.marker_recorded_event_attributes.marker_name for e in cron_run.events]
    assert LOCAL_ACTIVITY_MARKER not in markers
    assert "never to a cron run" in why, why


@pytest.mark.parametrize("keys", [KEYS, {}], ids=["signed-decisions", "no-keys"])
async def test_a_retry_is_never_handed_a_forged_carry(dev_env, ledger, task_queue, keys) -> None:
    """The retry route, on the dev server: the first run times out before any worker sees it (none polls
    yet), and the server retries it as a run whose predecessor is that first one."""
    run_id = f"sec-retry-{uuid.uuid4().hex[:8]}"
    client = dev_env.client
    handle = await client.start_workflow(
        "AgentWorkflow",
        forged_continuation(run_id, "ATTACKER-9998"),
        id=run_id,
        task_queue=task_queue,
        run_timeout=timedelta(seconds=2),
        retry_policy=RetryPolicy(maximum_attempts=2),
    )
    first = handle.result_run_id or ""

    async def retried() -> bool:
        return bool(_next_run(await client.get_workflow_handle(run_id, run_id=first).fetch_history()))

    await eventually(retried, timeout=30, what="the first run to time out")
    async with new_worker(client, task_queue, ledger, approver_keys=keys):
        why = await failure_of_the_run_after(client, run_id, first)
    assert ledger.effects(run_id) == []
    assert "never to a retry (attempt 2)" in why, why


@pytest.mark.parametrize("handover", [ForeignHandover, ImpostorHandover], ids=["another-type", "impostor-name"])
async def test_a_strangers_workflow_cannot_continue_as_new_into_an_agent_run(
    skipping_env, ledger, task_queue, handover
) -> None:
    """A workflow of someone else's, on a task queue of its own, continues as new into `AgentWorkflow` on the
    agents' queue with a forged carry: its predecessor is not an agents' run that continued as new, and the
    worker, asking the server, says so (also when the stranger named its workflow `AgentWorkflow`)."""
    run_id = f"sec-handover-{uuid.uuid4().hex[:8]}"
    client = skipping_env.client
    own_queue = f"{task_queue}-stranger"
    async with new_worker(client, task_queue, ledger), Worker(client, task_queue=own_queue, workflows=[handover]):
        handle = await client.start_workflow(
            handover.run,
            args=[task_queue, forged_continuation(run_id, "ATTACKER-9997")],
            id=run_id,
            task_queue=own_queue,
        )
        why = await failure_of_the_run_after(client, run_id, handle.result_run_id or "")
    assert ledger.effects(run_id) == []
    assert f"on task queue '{own_queue}', not an AgentWorkflow on '{task_queue}'" in why, why


async def test_a_continuation_takes_the_approver_keys_from_the_worker_again(skipping_env, ledger, task_queue) -> None:
    """Nothing of the spec is taken from `carry`: a run that started on workers without approver keys, and
    continues as new once they have maria's, requires her signature from then on."""
    client = skipping_env.client
    run_id = f"sec-rekeyed-{uuid.uuid4().hex[:8]}"
    await client.start_workflow(AgentWorkflow.run, AgentInput(agent="t-pay-sequence"), id=run_id, task_queue=task_queue)
    run = AgentClient(client, task_queue=task_queue).handle(run_id)
    often = EngineOptions(continue_as_new=ContinueAsNewPolicy(max_history_events=12))
    # No workflow cache on the first worker: no sticky queue, so the next one gets the run's tasks at once.
    async with new_worker(client, task_queue, ledger, approver_keys={}, max_cached_workflows=0, engine=often):
        [first] = await run.wait_for_approval()
    async with new_worker(client, task_queue, ledger, approver_keys=KEYS, engine=often):
        # The run waiting now described its agent without keys (its record): an unsigned denial still counts.
        await run.deny(first.call_id, by="ops", reason="not this one")

        async def second_asked() -> bool:
            return [p.arguments for p in await run.pending()] == [{"supplier": "s-2"}]

        await eventually(second_asked, what="the second payment's approval")
        [second] = await run.pending()
        assert second.execution is not None  # the continuation described the agent again, keys and all
        unsigned = Decision(call_id=second.call_id, approve=True, approver="maria", arguments_hash=second.shown_hash)
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await run.workflow.execute_update(AgentWorkflow.decide, unsigned)
        assert "not signed" in str(refused.value.cause)
        await run.approve(second.call_id, by="maria", key=MARIA)
        result = await run.result()
    assert result.continued >= 2
    assert [e.args for e in ledger.effects(run_id)] == [{"supplier": "s-2"}]
    assert [(a.event, a.signed) for a in result.audit] == [("declined", False), ("approved", True)]


async def test_a_continuation_takes_the_tools_flags_from_the_worker_again(skipping_env, ledger, task_queue) -> None:
    """Nor the flags of the agent's own tools (only the MCP tools the run listed are its record): a deploy that
    changes a tool reaches the runs in flight at their next continuation. The first worker's `pay` requires an
    approval, the second's does not: once s-1 is approved the run continues as new and pays s-2 without asking."""
    client = skipping_env.client
    run_id = f"sec-reflagged-{uuid.uuid4().hex[:8]}"
    [pay] = PAY_SEQUENCE.registry
    ungated = dataclasses.replace(
        PAY_SEQUENCE, registry=Registry([dataclasses.replace(pay, requires_confirmation=False)])
    )
    await client.start_workflow(AgentWorkflow.run, AgentInput(agent="t-pay-sequence"), id=run_id, task_queue=task_queue)
    run = AgentClient(client, task_queue=task_queue).handle(run_id)
    often = EngineOptions(continue_as_new=ContinueAsNewPolicy(max_history_events=12))
    async with new_worker(client, task_queue, ledger, max_cached_workflows=0, engine=often):
        [first] = await run.wait_for_approval()
    async with new_worker(client, task_queue, ledger, agents=[ungated], engine=often):
        await run.approve(first.call_id, by="maria", arguments_hash=first.arguments_hash)
        result = await asyncio.wait_for(run.result(), 30)  # bounded: a run that asks again does not end soon
    assert [e.args for e in ledger.effects(run_id)] == [{"supplier": "s-1"}, {"supplier": "s-2"}]
    assert [a.event for a in result.audit] == ["approved"] and result.continued >= 1


async def test_a_run_a_client_started_cannot_claim_a_place_in_a_delegation_tree(
    skipping_env, ledger, task_queue
) -> None:
    """A delegated run's approvals name their root and path, and the inbox groups them so: only a run the
    claimed parent really started (the server's parent link) may say it was delegated."""
    client = skipping_env.client
    claim = Delegation(path=["victim-root"], call_id="2.1", tool="billing")
    async with new_worker(client, task_queue, ledger):
        handle = await client.start_workflow(
            AgentWorkflow.run,
            AgentInput(agent="refund", delegation=claim),
            id=f"sec-claim-{uuid.uuid4().hex[:8]}",
            task_queue=task_queue,
        )
        with pytest.raises(WorkflowFailureError) as failed:
            await handle.result()
    assert "it claims run 'victim-root' delegated to it, but a client started it" in str(failed.value.cause)
    assert ledger.effects(handle.id) == []


async def test_a_strangers_child_cannot_claim_a_place_in_anothers_delegation_tree(dev_env, ledger, task_queue) -> None:
    """The same claim from a workflow of the stranger's own, which starts the run as its child: a parent link
    exists, but not to the claimed parent. The decoy never waits in the victim's tree (where the inbox would
    show it as part of the victim's run) and does nothing. On the dev server: the time-skipping one, after a
    child started from another task queue, now and then stopped skipping time for the tests after this one."""
    client = dev_env.client
    own_queue = f"{task_queue}-stranger"
    victim, child_id = f"victim-{uuid.uuid4().hex[:8]}", f"decoy-{uuid.uuid4().hex[:8]}"
    claim = AgentInput(agent="refund", delegation=Delegation(path=[victim], call_id="2.1", tool="billing"))
    stranger = Worker(client, task_queue=own_queue, workflows=[ForeignParent])
    async with new_worker(client, task_queue, ledger), stranger:
        await client.start_workflow(
            ForeignParent.run,
            args=[task_queue, child_id, claim.model_dump(mode="json")],
            id=f"stranger-{uuid.uuid4().hex[:8]}",
            task_queue=own_queue,
        )
        child = AgentClient(client, task_queue=task_queue).handle(child_id)

        async def settled() -> bool:
            try:
                description = await child.describe()
            except UnknownRun:
                return False
            return description.status != WorkflowExecutionStatus.RUNNING or bool(await child.pending())

        await eventually(settled, timeout=30, what="the decoy child to fail or to wait")
        in_tree = [p for p in await child.pending() if p.root_run_id == victim]
        status = (await child.describe()).status
        if status == WorkflowExecutionStatus.RUNNING:  # a decoy let in: it waits for an approval for a day
            await child.workflow.terminate("test over")
    assert in_tree == [] and status == WorkflowExecutionStatus.FAILED
    assert ledger.effects(child_id) == []

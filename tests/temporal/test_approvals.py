"""Human approval on the real time-skipping server: a signal (or a validated update) against a durable
timer. Days of workflow time pass in seconds of test time."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from temporalio.client import WorkflowHandle, WorkflowUpdateFailedError

from agentic import Stop, ToolStatus, tool_call
from agentic.approvals import ApprovalPolicy, Decision, PendingApproval, arguments_hash
from duragent._activities.inputs import AgentResult
from duragent._workflows.agent import AgentWorkflow
from duragent._workflows.inputs import AgentInput
from tests.conftest import eventually, new_worker, transcripts_next_to

Handle = WorkflowHandle[Any, AgentResult]


async def start(env, task_queue: str, input: AgentInput) -> Handle:
    return await env.client.start_workflow(
        AgentWorkflow.run, input, id=f"appr-{uuid.uuid4().hex[:10]}", task_queue=task_queue
    )


async def pending_of(handle: Handle, count: int = 1) -> list[PendingApproval]:
    found: list[PendingApproval] = []

    async def ready() -> bool:
        nonlocal found
        found = (await handle.query(AgentWorkflow.approvals)).pending
        return len(found) >= count

    await eventually(ready, what="a pending approval")
    return found


def decision(p: PendingApproval, approve: bool = True, **overrides: Any) -> Decision:
    fields = {
        "call_id": p.call_id,
        "approve": approve,
        "approver": "maria",
        "reason": "checked",
        "arguments_hash": p.arguments_hash,
    } | overrides
    return Decision(**fields)


async def test_approved_after_23_hours_the_refund_happens_once(skipping_env, ledger, task_queue):
    async with new_worker(skipping_env.client, task_queue, ledger):
        handle = await start(skipping_env, task_queue, AgentInput(agent="refund"))
        [pending] = await pending_of(handle)
        assert pending.deadline - pending.requested_at == timedelta(hours=24)
        assert (await handle.query(AgentWorkflow.progress)).status == "awaiting_approval"
        assert ledger.effects(handle.id) == []

        await skipping_env.sleep(timedelta(hours=23))
        await handle.signal(AgentWorkflow.decision, decision(pending))
        result = await handle.result()

    assert result.stop is Stop.ANSWERED and result.output == "Refunded order 4471."
    assert [e.tool for e in ledger.effects(handle.id)] == ["refund"]
    [entry] = result.audit
    assert (entry.event, entry.approver, entry.arguments_hash) == ("approved", "maria", pending.arguments_hash)
    assert entry.at - pending.requested_at >= timedelta(hours=23)


async def test_no_answer_expires_exactly_at_the_deadline_with_no_effect(skipping_env, ledger, task_queue):
    async with new_worker(skipping_env.client, task_queue, ledger):
        handle = await start(skipping_env, task_queue, AgentInput(agent="refund"))
        [pending] = await pending_of(handle)
        result = await handle.result()  # nothing to wait for but the timer: the server skips to it

    [entry] = result.audit
    assert entry.event == "expired"
    assert entry.at == pending.deadline
    assert ledger.effects(handle.id) == []
    assert result.blocked_tools() == ["refund"]
    assert result.records[0].status is ToolStatus.EXPIRED
    assert "expired" in result.output and "nothing was refunded" in result.output
    assert "approval expired" in result.transcript_messages(transcripts_next_to(ledger))[3].content


async def test_declined_makes_no_effect_and_the_model_is_told(skipping_env, ledger, task_queue):
    async with new_worker(skipping_env.client, task_queue, ledger):
        handle = await start(skipping_env, task_queue, AgentInput(agent="refund"))
        [pending] = await pending_of(handle)
        await handle.signal(AgentWorkflow.decision, decision(pending, approve=False, reason="order already refunded"))
        result = await handle.result()

    assert ledger.effects(handle.id) == []
    assert result.records[0].status is ToolStatus.DECLINED
    tool_message = result.transcript_messages(transcripts_next_to(ledger))[3]
    assert tool_message.content.startswith("Error: the user declined this action.")
    assert "order already refunded" in tool_message.content
    assert result.output == "The refund of order 4471 was declined; nothing was refunded."
    assert result.status == "completed"  # default policy: the run continues and says so


async def test_bad_decisions_are_rejected_recorded_and_change_nothing(skipping_env, ledger, task_queue):
    async with new_worker(skipping_env.client, task_queue, ledger):
        handle = await start(skipping_env, task_queue, AgentInput(agent="refund"))
        [pending] = await pending_of(handle)
        await handle.signal(AgentWorkflow.decision, decision(pending, arguments_hash="0" * 64))
        await handle.signal(AgentWorkflow.decision, decision(pending, call_id="call_nope"))
        view = await handle.query(AgentWorkflow.approvals)
        assert [e.event for e in view.audit] == ["rejected", "rejected"]
        assert "hash does not match" in view.audit[0].rejection
        assert "no approval is pending for call call_nope" in view.audit[1].rejection
        assert len(view.pending) == 1 and ledger.effects(handle.id) == []

        await handle.signal(AgentWorkflow.decision, decision(pending))
        await handle.signal(AgentWorkflow.decision, decision(pending, approve=False, approver="eve"))
        result = await handle.result()

    assert [e.event for e in result.audit] == ["rejected", "rejected", "approved", "rejected"]
    assert "already approved" in result.audit[3].rejection and result.audit[3].approver == "eve"
    assert [e.tool for e in ledger.effects(handle.id)] == ["refund"]


async def test_a_decision_after_expiry_is_rejected(skipping_env, ledger, task_queue):
    async with new_worker(skipping_env.client, task_queue, ledger):
        handle = await start(
            skipping_env,
            task_queue,
            AgentInput(agent="t-pay-sequence", approvals=ApprovalPolicy(timeout_seconds=60)),
        )
        [first] = await pending_of(handle)
        await skipping_env.sleep(timedelta(seconds=61))

        async def second_is_pending() -> bool:
            pending = (await handle.query(AgentWorkflow.approvals)).pending
            return bool(pending) and pending[0].call_id != first.call_id

        await eventually(second_is_pending, what="the second payment's approval")
        await handle.signal(AgentWorkflow.decision, decision(first))  # too late
        [second] = (await handle.query(AgentWorkflow.approvals)).pending
        await handle.signal(AgentWorkflow.decision, decision(second))
        result = await handle.result()

    assert [(e.call_id, e.event) for e in result.audit] == [
        (first.call_id, "expired"),
        (first.call_id, "rejected"),
        (second.call_id, "approved"),
    ]
    assert "already expired" in result.audit[1].rejection
    assert [e.args["supplier"] for e in ledger.effects(handle.id)] == ["s-2"]


async def test_update_answers_synchronously_and_rejects_through_its_validator(skipping_env, ledger, task_queue):
    async with new_worker(skipping_env.client, task_queue, ledger):
        handle = await start(skipping_env, task_queue, AgentInput(agent="refund"))
        [pending] = await pending_of(handle)
        with pytest.raises(WorkflowUpdateFailedError) as rejected:
            await handle.execute_update(AgentWorkflow.decide, decision(pending, arguments_hash="f" * 64))
        assert "hash does not match" in str(rejected.value.cause)
        entry = await handle.execute_update(AgentWorkflow.decide, decision(pending))
        assert entry.event == "approved"
        with pytest.raises(WorkflowUpdateFailedError) as duplicate:
            await handle.execute_update(AgentWorkflow.decide, decision(pending))
        assert "already approved" in str(duplicate.value.cause)
        result = await handle.result()
    assert [e.event for e in result.audit] == ["approved"]  # validator rejections leave no trace
    assert len(ledger.effects(handle.id)) == 1


async def test_a_decision_for_a_call_not_reached_yet_is_kept(skipping_env, ledger, task_queue):
    """Two gated calls in one reply: the second is approved while the run still waits on the first."""
    async with new_worker(skipping_env.client, task_queue, ledger):
        handle = await start(skipping_env, task_queue, AgentInput(agent="t-pay-batch"))
        [first] = await pending_of(handle)
        progress = await handle.query(AgentWorkflow.progress)
        assert progress.status == "awaiting_approval" and progress.pending_approvals[0].call_id == first.call_id
        second_id = first.call_id[:-1] + "2"  # FakeModel numbers the calls of one reply _1, _2
        second_hash = arguments_hash(tool_call("pay", {"supplier": "s-2"}, id=second_id))
        await handle.signal(
            AgentWorkflow.decision,
            Decision(call_id=second_id, approve=True, approver="maria", arguments_hash=second_hash),
        )
        await handle.signal(AgentWorkflow.decision, decision(first))
        result = await handle.result()

    assert [e.args["supplier"] for e in ledger.effects(handle.id)] == ["s-1", "s-2"]
    assert [(e.call_id, e.event) for e in result.audit] == [(first.call_id, "approved"), (second_id, "approved")]


@pytest.mark.parametrize(("approve", "stop"), [(False, Stop.APPROVAL_DECLINED), (None, Stop.APPROVAL_EXPIRED)])
async def test_policy_abandon_ends_the_run_on_decline_or_expiry(skipping_env, ledger, task_queue, approve, stop):
    policy = ApprovalPolicy(on_decline="abandon", on_expire="abandon", tool_timeouts={"refund": 3600})
    async with new_worker(skipping_env.client, task_queue, ledger):
        handle = await start(skipping_env, task_queue, AgentInput(agent="refund", approvals=policy))
        [pending] = await pending_of(handle)
        assert pending.deadline - pending.requested_at == timedelta(hours=1)  # per-tool override
        if approve is not None:
            await handle.signal(AgentWorkflow.decision, decision(pending, approve=approve))
        result = await handle.result()
    assert result.stop is stop
    assert result.status == "abandoned"  # nothing had been done, so nothing to undo
    assert result.output is None
    assert ledger.effects(handle.id) == []


async def test_a_reused_provider_call_id_asks_again_and_gets_its_own_key(skipping_env, ledger, task_queue):
    """After `pay(s-1)` (provider id `dup`) was approved, `pay(s-2)` reusing the id is a
    new request — nobody approved it, so it waits, and denying it leaves only s-1's effect."""
    async with new_worker(skipping_env.client, task_queue, ledger):
        handle = await start(skipping_env, task_queue, AgentInput(agent="t-reused-ids"))
        [first] = await pending_of(handle)
        await handle.execute_update(AgentWorkflow.decide, decision(first))

        async def second_is_pending() -> bool:
            waiting = (await handle.query(AgentWorkflow.approvals)).pending
            return [p.arguments for p in waiting] == [{"supplier": "s-2"}]

        await eventually(second_is_pending, what="the second payment's own approval request")
        [second] = (await handle.query(AgentWorkflow.approvals)).pending
        assert (first.call_id, second.call_id) == ("1.1", "2.1")
        with pytest.raises(WorkflowUpdateFailedError):  # the first call's decision cannot be replayed onto it
            await handle.execute_update(AgentWorkflow.decide, decision(first))
        await handle.execute_update(AgentWorkflow.decide, decision(second, approve=False))
        result = await handle.result()

    effects = ledger.effects(handle.id)
    assert [(e.args["supplier"], e.key) for e in effects] == [("s-1", f"{handle.id}:1.1")]
    assert [(a.call_id, a.event) for a in result.audit if a.event != "rejected"] == [
        ("1.1", "approved"),
        ("2.1", "declined"),
    ]
    assert [r.call.id for r in result.records] == ["dup", "dup"]  # the transcript keeps the provider's ids

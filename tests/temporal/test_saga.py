"""Saga on the real time-skipping server: an abandoned run undoes its effects newest first, each once,
for every way a run can be abandoned. The ledger is the judge."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowFailureError, WorkflowHandle

from agentic import Budget, Stop
from agentic.approvals import ApprovalPolicy, Decision
from duragent._activities.inputs import AgentResult
from duragent._stores.ledger import EffectsLedger
from duragent._workflows.agent import AgentWorkflow
from duragent._workflows.inputs import AgentInput, SagaPolicy, Timeouts
from tests.conftest import eventually, new_worker

Handle = WorkflowHandle[Any, AgentResult]


async def run(env, ledger, task_queue, input: AgentInput) -> AgentResult:
    async with new_worker(env.client, task_queue, ledger):
        return await env.client.execute_workflow(
            AgentWorkflow.run, input, id=f"saga-{uuid.uuid4().hex[:10]}", task_queue=task_queue
        )


def assert_undone_in_reverse(ledger: EffectsLedger, run_id: str, forward: list[str]) -> None:
    """Each forward effect of `forward` is undone exactly once, newest first, pointing at its original."""
    effects = ledger.effects(run_id)
    done = [e for e in effects if e.compensates is None]
    undone = [e for e in effects if e.compensates is not None]
    assert [e.tool for e in done] == forward
    assert [e.compensates for e in undone] == [e.key for e in reversed(done)]
    assert [e.tool for e in undone] == [f"cancel_{t.removeprefix('book_')}" for t in reversed(forward)]
    assert all(e.seq > done[-1].seq for e in undone)


async def test_a_permanently_failing_booking_cancels_the_earlier_ones(skipping_env, ledger, task_queue):
    result = await run(skipping_env, ledger, task_queue, AgentInput(agent="trip"))
    assert result.stop is Stop.TOOL_FAILED
    assert "no car available" in result.stop_detail
    assert result.status == "compensated"
    assert_undone_in_reverse(ledger, result.run_id, ["book_flight", "book_hotel"])
    assert [(c.tool, c.status) for c in result.compensations] == [
        ("book_hotel", "compensated"),
        ("book_flight", "compensated"),
    ]
    assert result.not_compensable == []


async def test_a_budget_that_runs_out_before_an_answer_abandons(skipping_env, ledger, task_queue):
    input = AgentInput(agent="trip", options=dict(fail_at="none"), budget=Budget(max_steps=2))
    result = await run(skipping_env, ledger, task_queue, input)
    assert result.stop is Stop.STEP_BUDGET
    assert_undone_in_reverse(ledger, result.run_id, ["book_flight", "book_hotel"])


async def test_the_model_giving_up_abandons(skipping_env, ledger, task_queue):
    result = await run(skipping_env, ledger, task_queue, AgentInput(agent="t-give-up"))
    assert result.stop is Stop.GAVE_UP
    assert result.stop_detail == "the customer changed their mind"
    assert_undone_in_reverse(ledger, result.run_id, ["book_flight", "book_hotel"])


async def test_a_declined_approval_abandons_when_the_policy_says_so(skipping_env, ledger, task_queue):
    input = AgentInput(agent="t-book-then-pay", approvals=ApprovalPolicy(on_decline="abandon"))
    async with new_worker(skipping_env.client, task_queue, ledger):
        handle = await skipping_env.client.start_workflow(
            AgentWorkflow.run, input, id=f"saga-{uuid.uuid4().hex[:10]}", task_queue=task_queue
        )

        async def pending() -> list[Any]:
            return (await handle.query(AgentWorkflow.approvals)).pending

        await eventually(pending, what="the payment approval")
        [p] = await pending()
        await handle.signal(
            AgentWorkflow.decision,
            Decision(call_id=p.call_id, approve=False, approver="cfo", arguments_hash=p.arguments_hash),
        )
        result = await handle.result()
    assert result.stop is Stop.APPROVAL_DECLINED
    effects = ledger.effects(result.run_id)
    assert [(e.tool, e.compensates) for e in effects] == [("book_flight", None), ("cancel_flight", effects[0].key)]


async def test_a_compensation_failing_twice_then_succeeding_completes_the_walk(skipping_env, ledger, task_queue):
    input = AgentInput(agent="trip", options=dict(compensation_failures=2))
    async with new_worker(skipping_env.client, task_queue, ledger):
        handle = await skipping_env.client.start_workflow(
            AgentWorkflow.run, input, id=f"saga-{uuid.uuid4().hex[:10]}", task_queue=task_queue
        )
        result = await handle.result()
        history = await handle.fetch_history()
    assert result.status == "compensated"
    assert_undone_in_reverse(ledger, result.run_id, ["book_flight", "book_hotel"])
    attempts = [
        e.activity_task_started_event_attributes.attempt
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
    ]
    assert attempts[-2:] == [3, 3]  # each undo failed twice, then succeeded, once


async def test_a_compensation_that_always_fails_leaves_a_visible_compensation_failed(skipping_env, ledger, task_queue):
    input = AgentInput(
        scenario="trip",
        options=dict(compensation_failures=99),
        saga=SagaPolicy(max_attempts=3, initial_interval_seconds=1),
    )
    async with new_worker(skipping_env.client, task_queue, ledger):
        handle = await skipping_env.client.start_workflow(
            AgentWorkflow.run, input, id=f"saga-{uuid.uuid4().hex[:10]}", task_queue=task_queue
        )
        with pytest.raises(WorkflowFailureError) as failure:
            await handle.result()
        progress = await handle.query(AgentWorkflow.progress)
    cause = failure.value.cause
    assert cause.type == "CompensationFailed"
    assert "not undone: ['book_hotel', 'book_flight']" in str(cause)
    [partial] = cause.details
    assert partial["status"] == "compensation_failed"
    assert [s["call"]["name"] for s in partial["compensations_remaining"]] == ["book_hotel", "book_flight"]
    assert progress.status == "compensation_failed"
    assert progress.compensations_remaining == ["book_hotel", "book_flight"]
    assert [e.tool for e in ledger.effects(handle.id)] == ["book_flight", "book_hotel"]  # nothing undone


async def test_cancel_during_a_long_tool_call_stops_it_then_compensates(skipping_env, ledger, task_queue):
    """The hotel booking takes 30 s; the run is cancelled a moment into it. The booking is cancelled
    through its heartbeat, never lands, and the flight is undone."""
    input = AgentInput(agent="t-slow-hotel", timeouts=Timeouts(heartbeat_seconds=2.0))
    async with new_worker(skipping_env.client, task_queue, ledger):
        handle = await skipping_env.client.start_workflow(
            AgentWorkflow.run, input, id=f"saga-{uuid.uuid4().hex[:10]}", task_queue=task_queue
        )
        await eventually(lambda: len(ledger.effects(handle.id)) == 1, timeout=60, what="the flight")

        async def booking_hotel() -> bool:
            return (await handle.query(AgentWorkflow.progress)).label.startswith("slow_book_hotel")

        await eventually(booking_hotel, what="the hotel booking to start")
        await handle.cancel(reason="the customer called to cancel")
        result = await asyncio.wait_for(handle.result(), 60)
    assert result.stop is Stop.CANCELLED
    assert result.stop_detail == "the customer called to cancel"
    effects = ledger.effects(result.run_id)
    assert [(e.tool, e.compensates) for e in effects] == [("book_flight", None), ("cancel_flight", effects[0].key)]
    hotel = next(c for c in result.compensations if c.tool == "slow_book_hotel")
    assert hotel.result.startswith("nothing to cancel")  # interrupted before its effect


def test_not_compensable_names_each_tool_once_however_many_calls_it_made() -> None:
    """A migration cancelled during its 4th call listed `migrate_record` four times
    for three effects — the interrupted call had made none. A tool without an inverse is named once; the
    ledger says which calls made an effect."""
    from agentic.loop import ToolRecord
    from agentic.messages import ToolCall
    from agentic.results import ToolStatus
    from agentic.saga import compensation_plan

    def record(step: int, status: ToolStatus) -> ToolRecord:
        call = ToolCall(id=f"c{step}", name="migrate_record", arguments={"record": f"rec-{step}"}, uid=f"{step}.1")
        return ToolRecord(step=step, call=call, status=status, mutating=True)

    records = [record(1, ToolStatus.OK), record(2, ToolStatus.OK), record(3, ToolStatus.OK)]
    records.append(record(4, ToolStatus.CANCELLED))  # interrupted: it may or may not have made its effect
    plan = compensation_plan("mig-cancel-1", records, specs={})
    assert plan.not_compensable == ["migrate_record"]
    assert plan.steps == []

"""AgentWorkflow on the real time-skipping test server: the loop's rules, executed durably."""

from __future__ import annotations

import dataclasses
import uuid

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowFailureError
from temporalio.testing import WorkflowEnvironment

from agentic import Budget, Stop, ToolStatus
from duragent._activities.inputs import AgentResult
from duragent._stores.ledger import EffectsLedger
from duragent._stores.transcripts import SqliteTranscriptStore, Transcripts
from duragent._workflows.agent import AgentWorkflow
from duragent._workflows.inputs import AgentInput
from examples.options import DemoDeps
from tests.conftest import agent_named, new_worker, transcripts_next_to


async def execute(
    env: WorkflowEnvironment, ledger: EffectsLedger, task_queue: str, input: AgentInput, **worker: object
) -> AgentResult:
    async with new_worker(env.client, task_queue, ledger, **worker):
        return await env.client.execute_workflow(
            AgentWorkflow.run, input, id=f"run-{uuid.uuid4().hex[:10]}", task_queue=task_queue
        )


async def test_billing_answers_and_charges_once(skipping_env, ledger, task_queue):
    result = await execute(skipping_env, ledger, task_queue, AgentInput(agent="billing"))
    assert result.stop is Stop.ANSWERED
    assert result.output == "Invoice inv-9 is settled."
    assert result.trajectory() == ["charge"]
    messages = result.transcript_messages(transcripts_next_to(ledger))
    assert [m.role for m in messages] == ["system", "user", "assistant", "tool", "assistant"]
    effects = ledger.effects(result.run_id)
    assert [e.tool for e in effects] == ["charge"]
    assert result.status == "completed"


class _CountedWrites:
    """The worker's real SQLite transcript store, counting its write transactions."""

    def __init__(self, store: SqliteTranscriptStore) -> None:
        self.store = store
        self.writes = 0

    def put_blobs(self, blobs: dict[str, str], owner: str | None = None) -> None:
        self.writes += 1
        self.store.put_blobs(blobs, owner)

    def put_messages(self, blobs: dict[str, str], nodes: list[tuple[str, str, str]], owner: str | None = None) -> None:
        self.writes += 1
        self.store.put_messages(blobs, nodes, owner)

    def get_blobs(self, refs: list[str]) -> dict[str, str]:
        return self.store.get_blobs(refs)

    def get_nodes(self, refs: list[str]) -> dict[str, tuple[str, str]]:
        return self.store.get_nodes(refs)


async def test_each_activity_stores_its_messages_in_one_transaction(skipping_env, ledger, task_queue):
    """The first model call stores the system and user messages with its reply, in one transaction: a
    one-step run (model, tool, model) writes the store three times, and its transcript is whole."""
    counted = _CountedWrites(SqliteTranscriptStore(ledger.path.parent / "transcripts.db"))
    result = await execute(
        skipping_env, ledger, task_queue, AgentInput(agent="billing"), transcripts=Transcripts(counted)
    )
    assert result.trajectory() == ["charge"]
    assert counted.writes == 3
    messages = result.transcript_messages(transcripts_next_to(ledger))
    assert [m.role for m in messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert messages[1].content == agent_named("billing").task


async def test_workflow_and_in_process_agent_reach_the_same_run(skipping_env, ledger, task_queue, tmp_path):
    """One loop, two runners: the durable run's transcript and consumption equal the in-process run's."""
    durable = await execute(skipping_env, ledger, task_queue, AgentInput(agent="migration"))
    migration = agent_named("migration")
    local = dataclasses.replace(migration, deps=DemoDeps(EffectsLedger(tmp_path / "local.db"))).run(
        run_id=durable.run_id
    )
    assert durable.transcript_messages(transcripts_next_to(ledger)) == local.messages
    assert durable.usage == local.usage
    assert durable.stop is local.stop is Stop.ANSWERED


async def test_step_budget_stops_and_a_resumed_run_keeps_counting(skipping_env, ledger, task_queue):
    first = await execute(skipping_env, ledger, task_queue, AgentInput(agent="billing", budget=Budget(max_steps=1)))
    assert first.stop is Stop.STEP_BUDGET
    assert first.step_count == 1
    assert len(ledger.effects(first.run_id)) == 1

    history = [m for m in first.transcript_messages(transcripts_next_to(ledger)) if m.role != "system"]
    # The same allowance, carried over: no model call may happen at all.
    exhausted = await execute(
        skipping_env,
        ledger,
        task_queue,
        AgentInput(agent="billing", history=history, consumed=first.usage, budget=Budget(max_steps=1)),
    )
    assert exhausted.stop is Stop.STEP_BUDGET
    assert exhausted.usage == first.usage

    resumed = await execute(
        skipping_env,
        ledger,
        task_queue,
        AgentInput(
            scenario="billing",
            task="Continue. Do not repeat completed work.",
            history=history,
            consumed=first.usage,
            budget=Budget(max_steps=2),
        ),
    )
    assert resumed.stop is Stop.ANSWERED
    assert resumed.step_count == 2
    assert resumed.input_tokens > first.input_tokens
    assert resumed.trajectory() == []


@pytest.mark.parametrize(
    ("budget", "stop"),
    [
        (Budget(max_input_tokens=5), Stop.TOKEN_BUDGET),
        (Budget(max_output_tokens=5), Stop.TOKEN_BUDGET),
        (Budget(max_cost=1e-9), Stop.COST_BUDGET),
    ],
)
async def test_token_and_cost_budgets_stop_before_the_next_model_call(skipping_env, ledger, task_queue, budget, stop):
    result = await execute(skipping_env, ledger, task_queue, AgentInput(agent="migration", budget=budget))
    assert result.stop is stop
    assert result.step_count == 1  # checked before the second call, after the first one's tools ran
    assert len(ledger.effects(result.run_id)) == 1


async def test_repeat_guard_stops_an_identical_call(skipping_env, ledger, task_queue):
    result = await execute(skipping_env, ledger, task_queue, AgentInput(agent="t-repeat"))
    assert result.stop is Stop.REPEATED_CALL
    assert result.trajectory() == ["lookup"]
    assert [r.status for r in result.records] == [ToolStatus.OK, ToolStatus.REPEATED]


async def test_tool_errors_are_fed_back_to_the_model(skipping_env, ledger, task_queue):
    result = await execute(skipping_env, ledger, task_queue, AgentInput(agent="t-errors"))
    assert result.stop is Stop.ANSWERED
    assert [r.status for r in result.records] == [ToolStatus.ERROR, ToolStatus.INVALID_ARGUMENTS]
    assert "ValueError: the upstream returned garbage" in result.records[0].content
    assert "invalid arguments for broken" in result.output


async def test_idempotency_key_is_stable_across_an_activity_retry(skipping_env, ledger, task_queue):
    """Each write fails once AFTER its effect committed; Temporal retries it with the same key."""
    input = AgentInput(agent="t-rows", options=dict(flaky_attempts=1))
    async with new_worker(skipping_env.client, task_queue, ledger):
        handle = await skipping_env.client.start_workflow(
            AgentWorkflow.run, input, id=f"run-{uuid.uuid4().hex[:10]}", task_queue=task_queue
        )
        result = await handle.result()
        history = await handle.fetch_history()
    assert result.stop is Stop.ANSWERED
    effects = ledger.effects(result.run_id)
    calls = [r.call.uid for r in result.records]
    assert [e.key for e in effects] == [f"{result.run_id}:{call_id}" for call_id in calls]
    assert [e.args["row"] for e in effects] == ["row-1", "row-2", "row-3"]
    attempts = [
        e.activity_task_started_event_attributes.attempt
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
    ]
    assert attempts.count(2) == 3  # every write really was retried, and still made one effect


async def test_an_agent_the_worker_does_not_serve_fails_the_run_at_once(skipping_env, ledger, task_queue):
    with pytest.raises(WorkflowFailureError) as failure:
        await execute(skipping_env, ledger, task_queue, AgentInput(agent="no-such-agent"))
    message = str(failure.value.cause)
    assert f"unknown agent 'no-such-agent' (not served on task queue {task_queue!r})" in message
    assert "billing, billing-desk, courier, migration, refund" in message  # it names the agents this worker serves


async def test_a_non_retryable_model_error_fails_the_run_without_retrying(skipping_env, ledger, task_queue):
    async with new_worker(skipping_env.client, task_queue, ledger):
        handle = await skipping_env.client.start_workflow(
            AgentWorkflow.run, AgentInput(agent="t-short"), id=f"run-{uuid.uuid4().hex[:10]}", task_queue=task_queue
        )
        with pytest.raises(WorkflowFailureError) as failure:
            await handle.result()
        history = await handle.fetch_history()
    assert failure.value.cause.type == "ModelCallFailed"
    assert "has no reply #2" in str(failure.value.cause)
    model_attempts = [
        e.activity_task_started_event_attributes.attempt
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
    ]
    assert max(model_attempts) == 1


async def test_progress_query_reports_consumption_and_trajectory(skipping_env, ledger, task_queue):
    async with new_worker(skipping_env.client, task_queue, ledger):
        handle = await skipping_env.client.start_workflow(
            AgentWorkflow.run,
            AgentInput(agent="migration"),
            id=f"run-{uuid.uuid4().hex[:10]}",
            task_queue=task_queue,
        )
        result = await handle.result()
        progress = await handle.query(AgentWorkflow.progress)
    assert progress.status == "completed"
    assert progress.step == result.step_count == 6
    assert progress.max_steps == agent_named("migration").budget.max_steps
    assert progress.trajectory == ["migrate_record"] * 5
    assert (progress.input_tokens, progress.output_tokens, progress.cost) == (
        result.input_tokens,
        result.output_tokens,
        result.cost,
    )


async def test_a_full_replay_on_every_task_is_deterministic(skipping_env, ledger, task_queue):
    """No workflow cache: every task replays the whole history, so any non-determinism would fail it."""
    result = await execute(
        skipping_env,
        ledger,
        task_queue,
        AgentInput(agent="trip", options=dict(fail_at="none")),
        max_cached_workflows=0,
    )
    assert result.stop is Stop.ANSWERED
    assert result.trajectory() == ["book_flight", "book_hotel", "book_car"]

"""Tests that stay honest when one fails: a workflow a test leaves open on the shared time-skipping server is
terminated when that test ends (tests/conftest.py), so it cannot stop time skipping for the tests after it.
The two tests run in this order: the first leaves a run waiting on a 24-hour approval, as a test failing
half-way would; the second finds it terminated and time skipping working."""

from __future__ import annotations

import uuid
from datetime import timedelta

from temporalio.client import WorkflowExecutionStatus

from agentic.approvals import ApprovalPolicy
from tests.conftest import eventually, new_worker
from workflows.agent import AgentWorkflow
from workflows.inputs import AgentInput

LEFT_OPEN: list[str] = []


async def test_a_test_that_leaves_a_run_open(skipping_env, ledger, task_queue) -> None:
    async with new_worker(skipping_env.client, task_queue, ledger):
        handle = await skipping_env.client.start_workflow(
            AgentWorkflow.run, AgentInput(agent="refund"), id=f"left-{uuid.uuid4().hex[:8]}", task_queue=task_queue
        )

        async def waiting() -> bool:
            return bool((await handle.query(AgentWorkflow.approvals)).pending)

        await eventually(waiting, what="the approval wait")
    LEFT_OPEN.append(handle.id)  # and returns without closing it


async def test_the_next_test_finds_it_terminated_and_time_still_skips(skipping_env, ledger, task_queue) -> None:
    assert LEFT_OPEN, "runs after the test above"
    described = await skipping_env.client.get_workflow_handle(LEFT_OPEN[0]).describe()
    assert described.status == WorkflowExecutionStatus.TERMINATED
    async with new_worker(skipping_env.client, task_queue, ledger):
        result = await skipping_env.client.execute_workflow(
            AgentWorkflow.run,
            AgentInput(agent="refund", approvals=ApprovalPolicy(timeout_seconds=timedelta(days=3).total_seconds())),
            id=f"skips-{uuid.uuid4().hex[:8]}",
            task_queue=task_queue,
        )
    assert [e.event for e in result.audit] == ["expired"]  # three days of waiting, skipped

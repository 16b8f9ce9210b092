"""Tests that stay honest when one fails: a workflow a test leaves open on the shared time-skipping server is
terminated when that test ends (tests/conftest.py), so it cannot stop time skipping for the tests after it.
The tests run in pairs, in this order: the first leaves a run waiting on a 24-hour approval, as a test failing
half-way would; the second finds it terminated and time skipping working. The second pair leaves a run whose tool
is out when it is terminated, which holds the server's time-skipping lock for good (tests/conftest.py,
SkippingServer); the test after it gets a fresh server and time skips. Under `pytest -n` the file runs on one
worker, in this order (`--dist loadfile`, pyproject.toml)."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

import pytest
from temporalio.api.enums.v1 import PendingActivityState
from temporalio.client import WorkflowExecutionStatus

from agentic.approvals import ApprovalPolicy
from duragent._workflows.agent import AgentWorkflow
from duragent._workflows.inputs import AgentInput, Timeouts
from tests.conftest import STUCK_AFTER, eventually, new_worker

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


# -- a run terminated with its tool in flight leaves the server's time-skipping lock held -----------------------
LEFT_IN_FLIGHT: list[str] = []
# Out of `make test-fast`: the pair takes about 20 s (the tool's wait, the 5-s probe that finds time stuck) and
# the session's time-skipping server is replaced by a new process.
after_a_stuck_server = pytest.mark.system


@after_a_stuck_server
async def test_a_test_that_ends_with_a_tool_in_flight(skipping_env, ledger, task_queue) -> None:
    async with new_worker(skipping_env.client, task_queue, ledger):
        handle = await skipping_env.client.start_workflow(
            AgentWorkflow.run,
            AgentInput(agent="t-slow-hotel", timeouts=Timeouts(heartbeat_seconds=2.0)),
            id=f"in-flight-{uuid.uuid4().hex[:8]}",
            task_queue=task_queue,
        )

        async def hotel_in_flight() -> bool:
            pending = (await handle.describe()).raw_description.pending_activities
            return any(a.state == PendingActivityState.PENDING_ACTIVITY_STATE_STARTED for a in pending)

        await eventually(hotel_in_flight, what="the slow tool running")
    # The worker stops; the tool, cancelled by the shutdown, fails and is retried a second later, with no
    # worker to take the retry: the server holds the time-skipping lock for it when the fixture terminates.
    await asyncio.sleep(2.0)
    LEFT_IN_FLIGHT.append(handle.id)


@after_a_stuck_server
async def test_the_next_test_still_skips_time(skipping_env, ledger, task_queue) -> None:
    assert LEFT_IN_FLIGHT, "runs after the test above"
    assert any(test.endswith("::test_a_test_that_ends_with_a_tool_in_flight") for test in STUCK_AFTER)
    async with new_worker(skipping_env.client, task_queue, ledger):
        run = skipping_env.client.execute_workflow(
            AgentWorkflow.run,
            AgentInput(agent="refund", approvals=ApprovalPolicy(timeout_seconds=timedelta(days=3).total_seconds())),
            id=f"skips-{uuid.uuid4().hex[:8]}",
            task_queue=task_queue,
        )
        result = await asyncio.wait_for(run, timeout=60)  # with the lock held, this would wait three real days
    assert [e.event for e in result.audit] == ["expired"]

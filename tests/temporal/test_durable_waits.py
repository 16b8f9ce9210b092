"""On the real dev server, with worker processes killed by SIGKILL: an approval wait and a compensation
walk survive the crash, a decision sent while no worker runs is kept, and a deadline is not reset."""

from __future__ import annotations

import asyncio
import uuid

from agentic import Stop
from agentic.approvals import ApprovalPolicy, Decision
from duragent._ops.devstack.worker_process import WorkerProcess
from duragent._stores.ledger import EffectsLedger
from duragent._workflows.agent import AgentWorkflow
from duragent._workflows.inputs import AgentInput, Timeouts
from tests.conftest import dev_settings, eventually


async def pending_row(handle) -> dict:
    """The pending approval, as the workflow published it in its memo (readable with no worker)."""

    async def memo_has_pending() -> bool:
        return bool(await (await handle.describe()).memo_value("pending_approvals", default=[]))

    await eventually(memo_has_pending, what="a pending approval in the memo")
    [row] = await (await handle.describe()).memo_value("pending_approvals")
    return row


async def test_a_decision_sent_while_no_worker_runs_is_applied_when_one_returns(dev_env, task_queue, tmp_path):
    settings = dev_settings(dev_env, task_queue, tmp_path)
    ledger = EffectsLedger(settings.ledger_path)
    first = WorkerProcess(settings, log=tmp_path / "w1.log").wait_ready()
    try:
        handle = await dev_env.client.start_workflow(
            AgentWorkflow.run, AgentInput(agent="refund"), id=f"refund-{uuid.uuid4().hex[:8]}", task_queue=task_queue
        )
        row = await pending_row(handle)
    finally:
        first.kill()
    await handle.signal(
        AgentWorkflow.decision,
        Decision(call_id=row["call_id"], approve=True, approver="night-shift", arguments_hash=row["arguments_hash"]),
    )
    assert ledger.effects(handle.id) == []  # nobody has acted on it yet

    second = WorkerProcess(settings, log=tmp_path / "w2.log").wait_ready()
    try:
        result = await asyncio.wait_for(handle.result(), 60)
    finally:
        second.stop()
    assert result.output == "Refunded order 4471."
    assert [e.tool for e in ledger.effects(handle.id)] == ["refund"]
    assert [(a.event, a.approver) for a in result.audit] == [("approved", "night-shift")]


async def test_a_worker_restart_does_not_reset_the_approval_deadline(dev_env, task_queue, tmp_path):
    settings = dev_settings(dev_env, task_queue, tmp_path)
    ledger = EffectsLedger(settings.ledger_path)
    first = WorkerProcess(settings, log=tmp_path / "w1.log").wait_ready()
    try:
        handle = await dev_env.client.start_workflow(
            AgentWorkflow.run,
            AgentInput(agent="refund", approvals=ApprovalPolicy(timeout_seconds=12)),
            id=f"refund-{uuid.uuid4().hex[:8]}",
            task_queue=task_queue,
        )
        row = await pending_row(handle)
    finally:
        first.kill()
    await asyncio.sleep(4)  # the run sits with no worker for a third of its deadline
    second = WorkerProcess(settings, log=tmp_path / "w2.log").wait_ready()
    try:
        result = await asyncio.wait_for(handle.result(), 60)
    finally:
        second.stop()
    [expired] = result.audit
    assert expired.event == "expired"
    assert expired.at.isoformat().replace("+00:00", "Z")[:19] == row["deadline"].replace("+00:00", "Z")[:19]
    assert ledger.effects(handle.id) == []
    assert result.blocked_tools() == ["refund"]


async def test_a_compensation_walk_survives_a_sigkill_halfway(dev_env, task_queue, tmp_path):
    settings = dev_settings(dev_env, task_queue, tmp_path)
    ledger = EffectsLedger(settings.ledger_path)
    run_id = f"trip-{uuid.uuid4().hex[:8]}"
    first = WorkerProcess(settings, log=tmp_path / "w1.log").wait_ready()
    try:
        handle = await dev_env.client.start_workflow(
            AgentWorkflow.run,
            AgentInput(scenario="trip", options=dict(step_delay=1.5), timeouts=Timeouts(heartbeat_seconds=2.0)),
            id=run_id,
            task_queue=task_queue,
        )
        # The first undo (the hotel) is done and the second (the flight) is sleeping: kill now.
        await eventually(lambda: any(e.tool == "cancel_hotel" for e in ledger.effects(run_id)), what="cancel_hotel")
    finally:
        first.kill()
    assert not any(e.tool == "cancel_flight" for e in ledger.effects(run_id))

    second = WorkerProcess(settings, log=tmp_path / "w2.log").wait_ready()
    try:
        result = await asyncio.wait_for(handle.result(), 90)
    finally:
        second.stop()
    assert result.stop is Stop.TOOL_FAILED and result.status == "compensated"
    effects = ledger.effects(run_id)
    tools = [e.tool for e in effects]
    assert tools == ["book_flight", "book_hotel", "cancel_hotel", "cancel_flight"]  # each inverse exactly once
    by_tool = {e.tool: e for e in effects}
    assert by_tool["cancel_hotel"].compensates == by_tool["book_hotel"].key
    assert by_tool["cancel_flight"].compensates == by_tool["book_flight"].key

"""Delegation on the real dev server: kill -9 of the worker while a delegated child runs (a new worker
finishes the tree with one child — never a second — and each effect exactly once in the ledger), and a
child's approval found and decided from the command line through its root, and a root cancelled while its
grandchild waits undoing the tree children first."""

from __future__ import annotations

import asyncio
import json
import signal
import uuid

from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowExecutionStatus

from agentic import Stop
from duragent._client import AgentClient
from duragent._ops.devstack.worker_process import WorkerProcess
from duragent._stores.ledger import EffectsLedger
from duragent._workflows.inputs import Timeouts
from tests.conftest import dev_settings, eventually, new_worker
from tests.ops.test_cli import starter
from tests.temporal.test_delegation import child_result, forward, run_id, undone, wait_for_pending, worker

MODULES = {"AGENT_MODULES": "examples,tests.support.delegation_agents"}


async def test_a_child_survives_sigkill_of_its_worker_with_one_child_and_each_effect_once(
    dev_env, task_queue, tmp_path
):
    settings = dev_settings(dev_env, task_queue, tmp_path)
    ledger = EffectsLedger(settings.ledger_path)
    root = f"slow-{uuid.uuid4().hex[:8]}"
    child = f"{root}~2.1"
    agents = AgentClient(dev_env.client, task_queue=task_queue)
    first = WorkerProcess(settings, log=tmp_path / "worker1.log", extra_env=MODULES).wait_ready()
    try:
        handle = await agents.start("d-slow-parent", run_id=root, timeouts=Timeouts(heartbeat_seconds=2.0))
        await eventually(lambda: len(ledger.effects(child)) >= 1, timeout=120, what="the child's first record")
    finally:
        first.kill()
    assert first.process.returncode == -signal.SIGKILL
    at_kill = ledger.effects()
    # The kill landed while the child ran: its first record made (under its own key), not yet its last.
    assert [e.key for e in ledger.effects(child)] in ([f"{child}:1.1"], [f"{child}:1.1", f"{child}:2.1"])

    second = WorkerProcess(settings, log=tmp_path / "worker2.log", extra_env=MODULES).wait_ready()
    try:
        result = await asyncio.wait_for(handle.result(), 120)
        history = await handle.workflow.fetch_history()
        runs = [
            e.id
            async for e in dev_env.client.list_workflows(
                f'WorkflowType = "AgentWorkflow" AND TaskQueue = "{task_queue}"'
            )
        ]
    finally:
        second.stop()

    assert result.stop is Stop.ANSWERED and result.output == "Parent: Migrated 3 records."
    started = [
        e for e in history.events if e.event_type == EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED
    ]
    assert [e.start_child_workflow_execution_initiated_event_attributes.workflow_id for e in started] == [child]
    assert sorted(runs) == sorted([root, child])  # one child, never a second
    effects = ledger.effects()
    assert [(e.run_id, e.tool, e.args) for e in effects] == [
        (root, "open_ticket", {"subject": "migration"}),
        *[(child, "migrate_record", {"record": f"rec-{i}"}) for i in (1, 2, 3)],
    ]
    assert len({e.key for e in effects}) == len(effects)
    assert effects[: len(at_kill)] == at_kill  # nothing done before the kill was done again
    assert result.usage.steps == 3 + 4  # the parent's steps and its child's, charged once


async def test_a_childs_approval_is_listed_with_its_root_and_approved_through_the_root_from_the_cli(
    dev_env, task_queue, tmp_path
):
    """`pending` lists the billing desk's refund with the support run as its root and the path to it;
    `approve SUPPORT_RUN` finds it there and the decision reaches the billing desk's run."""
    settings = dev_settings(dev_env, task_queue, tmp_path)
    ledger = EffectsLedger(settings.ledger_path)
    root = f"support-{task_queue}"
    child = f"{root}~2.1"
    async with new_worker(dev_env.client, task_queue, ledger):
        code, _, err = await starter("run", "support", "--id", root, settings=settings)
        assert code == 0, err

        async def listed() -> list[dict]:
            code, out, _ = await starter("pending", "--json", settings=settings)
            return [row for row in json.loads(out) if row["root_run_id"] == root] if code == 0 else []

        await eventually(listed, what="the billing desk's refund in visibility")
        [row] = await listed()
        assert (row["run_id"], row["tool"], row["path"]) == (child, "refund_payment", [root, child])
        code, out, _ = await starter("pending", settings=settings)
        assert f"root {root}  path {root} → {child}" in out
        code, out, err = await starter(
            "approve", root, "--by", "maria", "--hash", row["arguments_hash"][:12], "--json", settings=settings
        )
        assert code == 0, err
        assert (json.loads(out)["run_id"], json.loads(out)["decision"]) == (child, "approved")
        code, out, _ = await starter("result", root, "--json", settings=settings)
        assert json.loads(out)["output"].startswith("Ticket opened; the billing desk says: Refunded order 4471")
    assert [(e.run_id, e.tool) for e in ledger.effects()] == [(root, "open_ticket"), (child, "refund_payment")]


async def test_cancelling_the_root_while_a_grandchild_waits_undoes_everything_children_first(
    dev_env, ledger, task_queue
):
    """On the real dev server. On the time-skipping server this run once never ended (one full run in about
    eight): the grandchild's workflow task was refused with "ACTIVITY_UNKNOWN for scheduledEventId=37" — a cancel
    of its compensation activity reaching that server after the activity had completed, which it refuses
    (temporalio/sdk-java#2391) where the real server accepts it — and the run never moved again."""
    root = run_id("cancel")
    child, grandchild = f"{root}~2.1", f"{root}~2.1~2.1"
    async with worker(dev_env, task_queue, ledger):
        agents = AgentClient(dev_env.client, task_queue=task_queue)
        handle = await agents.start("d-desk-gated", run_id=root)
        await wait_for_pending(handle)
        await handle.cancel("the customer hung up")
        result = await handle.result()
        below = [await child_result(agents, child), await child_result(agents, grandchild)]
        statuses = [(await agents.handle(r).describe()).status for r in (root, child, grandchild)]

    assert result.stop is Stop.CANCELLED and result.status == "compensated"
    assert [(r.stop, r.status) for r in below] == [(Stop.CANCELLED, "compensated")] * 2
    assert statuses == [WorkflowExecutionStatus.COMPLETED] * 3  # nothing left running
    effects = ledger.effects()
    assert forward(effects) == [(root, "open_ticket"), (child, "reserve_funds"), (grandchild, "post_entry")]
    # Newest first, each agent its own, children before their parent's earlier effects; the payment waiting
    # for approval never happened, so there is nothing to refund.
    assert undone(effects) == [(grandchild, "reverse_entry"), (child, "release_funds"), (root, "close_ticket")]
    assert all(e.tool != "pay" for e in effects)

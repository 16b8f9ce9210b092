"""What a rogue worker's own `AgentWorkflow`, polling the agents' task queue, can hand a run
of the agents' at its start — a forged `carry` by continuing as new into it, a forged place in a delegation
tree by starting it as a child. The server vouches for both (the predecessor is an `AgentWorkflow` on this queue
that continued as new; the parent link names the claimed parent), so without worker keys both are taken. With
`AGENT_WORKER_KEYS`, a start that claims either must carry the agents' workers' seal, and these do not.

The rogue's worker stops before the agents' worker joins the queue: the run it handed over is then run by ours."""

from __future__ import annotations

import os
import uuid
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.worker import Worker

from agentic.delegation import Delegation
from duragent._client import AgentClient
from duragent._config.worker_keys import WorkerKeys
from duragent._workflows.inputs import AgentInput
from tests.conftest import eventually, new_worker
from tests.support.outsider import ImpostorHandover, ImpostorParent, forged_continuation
from tests.temporal.test_handover import failure_of_the_run_after

KEYS = WorkerKeys((os.urandom(32),))
WITH_AND_WITHOUT = pytest.mark.parametrize("keys", [None, KEYS], ids=["no-worker-keys", "worker-keys"])


async def rogue(client: Client, task_queue: str, workflow: type) -> Worker:
    """The rogue's worker on the agents' queue, on a connection of its own (another process's)."""
    own = await Client.connect(client.service_client.config.target_host, namespace=client.namespace)
    return Worker(own, task_queue=task_queue, workflows=[workflow])


async def closed(client: Client, workflow_id: str, run_id: str | None = None) -> bool:
    events = (await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()).events
    return events[-1].event_type not in (
        EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
        EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
        EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
    ) and any(e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED for e in events)


@WITH_AND_WITHOUT
async def test_a_rogue_workers_run_cannot_hand_a_forged_carry_to_a_continuation(
    dev_env, ledger, task_queue, keys: WorkerKeys | None
):
    client = dev_env.client
    run_id = f"rogue-handover-{uuid.uuid4().hex[:8]}"
    async with await rogue(client, task_queue, ImpostorHandover):
        first = await client.start_workflow(
            ImpostorHandover.run,
            args=[task_queue, forged_continuation(run_id, "ATTACKER-9996")],
            id=run_id,
            task_queue=task_queue,
        )
        await eventually(lambda: closed(client, run_id, first.result_run_id), what="the rogue's continue-as-new")
    async with new_worker(client, task_queue, ledger, approver_keys={}, worker_keys=keys):
        why = await failure_of_the_run_after(client, run_id, first.result_run_id or "")
    if keys is None:  # the attack, as it stands without worker keys: the forged approval refunds
        assert [e.tool for e in ledger.effects(run_id)] == ["refund"], why
    else:
        assert ledger.effects(run_id) == []
        assert "its `carry` was not handed over by the agents' workers" in why, why


@WITH_AND_WITHOUT
async def test_a_rogue_workers_run_cannot_place_a_child_in_another_runs_tree(
    dev_env, ledger, task_queue, keys: WorkerKeys | None
):
    client = dev_env.client
    parent, child_id = f"rogue-parent-{uuid.uuid4().hex[:8]}", f"rogue-child-{uuid.uuid4().hex[:8]}"
    claim = Delegation(path=["victim-root", parent], call_id="2.1", tool="billing")
    child: dict[str, Any] = AgentInput(agent="refund", delegation=claim).model_dump(mode="json")
    async with await rogue(client, task_queue, ImpostorParent):
        await client.execute_workflow(ImpostorParent.run, args=[child_id, child], id=parent, task_queue=task_queue)
    async with new_worker(client, task_queue, ledger, approver_keys={}, worker_keys=keys):
        run = AgentClient(client, task_queue=task_queue).handle(child_id)
        if keys is None:  # taken as the victim's grandchild: its approval names the victim's tree
            [waiting] = await run.wait_for_approval()
            assert waiting.path[0] == "victim-root"
            await run.cancel()
        else:
            await eventually(lambda: closed(client, child_id), what="the child's end")
            description = await client.get_workflow_handle(child_id).describe()
            assert description.status is not None and description.status.name == "FAILED"
            history = await client.get_workflow_handle(child_id).fetch_history()
            failure = history.events[-1].workflow_execution_failed_event_attributes.failure.message
            assert f"run {parent} delegated to it without the agents' workers' seal" in failure
    assert ledger.effects(child_id) == []

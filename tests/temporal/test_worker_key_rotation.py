"""Rotating the workers' key (`AGENT_WORKER_KEYS`: the first signs, all verify): recorded histories keep
replaying on sealing workers, and a run that waits across a rotation finishes on the new key, its tool acting
once. The key never reaches history; only the seals do."""

from __future__ import annotations

import base64
import os
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer, Worker

from agentic.agent_set import AgentSet
from duragent._activities.describe import DescribeActivities
from duragent._activities.inputs import EngineOptions
from duragent._activities.served import ServedAgents
from duragent._client import AgentClient
from duragent._config.worker_keys import WorkerKeys
from duragent._plugin import DurableAgentsPlugin
from duragent._sealing import HEADER, Sealing
from duragent._workflows.agent import AgentWorkflow
from tests.conftest import TEST_AGENTS, eventually, new_worker

HISTORIES = sorted((Path(__file__).parent.parent / "histories").glob("*.json"))
OLD, NEW, LATER = os.urandom(32), os.urandom(32), os.urandom(32)


def replayer(*keys: bytes) -> Replayer:
    return Replayer(
        workflows=[AgentWorkflow], data_converter=pydantic_data_converter, interceptors=[Sealing(WorkerKeys(keys))]
    )


@pytest.mark.parametrize("path", HISTORIES, ids=lambda p: p.stem)
async def test_recorded_histories_replay_on_a_sealing_worker(path: Path):
    """Histories written before seals existed (none in their headers) replay on a worker that seals: replay
    compares commands by type and id, never by header, and a replayed start is never checked."""
    history = WorkflowHistory.from_json(f"recorded-{path.stem.split('-run')[0]}", path.read_text())
    result = await replayer(NEW).replay_workflow(history, raise_on_replay_failure=True)
    assert result.replay_failure is None


async def test_a_run_waiting_across_a_rotation_finishes_on_the_new_key_and_acts_once(dev_env, ledger, task_queue):
    client = dev_env.client
    agents = AgentClient(client, task_queue=task_queue)
    run_id = f"rotated-{uuid.uuid4().hex[:8]}"
    async with new_worker(client, task_queue, ledger, approver_keys={}, worker_keys=WorkerKeys((OLD,))):
        run = await agents.start("refund", run_id=run_id)
        [waiting] = await run.wait_for_approval()

    # What the old key sealed is in history; the key is not.
    before = await client.get_workflow_handle(run_id).fetch_history()
    sealed = [
        e.activity_task_scheduled_event_attributes.header.fields[HEADER]
        for e in before.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    assert sealed and all(seal.data.startswith(b"v1:") for seal in sealed)
    text = before.to_json()
    for form in (OLD.hex(), base64.b64encode(OLD).decode()):
        assert form not in text

    # The rotation: the new key first, the old one kept. Every task replays the run from its history (no
    # cache), seals the new key did not make included: replay never checks them.
    rotated = WorkerKeys((NEW, OLD))
    async with new_worker(client, task_queue, ledger, approver_keys={}, worker_keys=rotated, max_cached_workflows=0):
        await run.approve(waiting.call_id, by="maria", arguments_hash=waiting.arguments_hash)
        assert (await run.result()).status == "completed"
    assert [(e.tool, e.key) for e in ledger.effects(run_id)] == [("refund", f"{run_id}:1.1")]

    # The whole history — schedules and results sealed under both keys — replays on a worker holding both, and on
    # one holding no key (the results' bytes are what they always were); a worker holding neither key verifies the
    # results and refuses them: it cannot tell them from a stranger's.
    history = await client.get_workflow_handle(run_id).fetch_history()
    result = await replayer(NEW, OLD).replay_workflow(history, raise_on_replay_failure=True)
    assert result.replay_failure is None
    keyless = Replayer(workflows=[AgentWorkflow], data_converter=pydantic_data_converter)
    assert (await keyless.replay_workflow(history, raise_on_replay_failure=True)).replay_failure is None
    with pytest.raises(RuntimeError, match="sealed under a key since dropped"):
        await replayer(LATER).replay_workflow(history, raise_on_replay_failure=True)


async def workflows_only(client: Client, task_queue: str, keys: WorkerKeys) -> Worker:
    """A worker of the build before the rotation, caught between scheduling an activity and running it: it runs
    the agents' workflow (and its local spec lookup) under `keys`, and no other activity. Its own connection,
    as another process has (the SDK allows one worker per queue and connection)."""
    own = await Client.connect(
        client.service_client.config.target_host, namespace=client.namespace, plugins=[DurableAgentsPlugin()]
    )
    describe = DescribeActivities(ServedAgents(AgentSet(TEST_AGENTS, approver_keys={})), EngineOptions())
    return Worker(
        own,
        task_queue=task_queue,
        activities=[describe.describe_agent],
        no_remote_activities=True,  # the spec lookup is local: no activity task is taken from the queue
        interceptors=[Sealing(keys)],
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=1),  # its runs move on soon after it stops
    )


async def first_model_call_scheduled(client: Client, run_id: str) -> bool:
    events = (await client.get_workflow_handle(run_id).fetch_history()).events
    return any(e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED for e in events)


async def task_failures(client: Client, run_id: str) -> list[str]:
    events = (await client.get_workflow_handle(run_id).fetch_history()).events
    return [
        e.workflow_task_failed_event_attributes.failure.message
        for e in events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
    ]


@pytest.mark.parametrize(("after", "finishes"), [((NEW, OLD), True), ((NEW,), False)], ids=["old-kept", "old-dropped"])
async def test_an_activity_scheduled_before_a_rotation_runs_while_the_old_key_is_kept(
    dev_env, ledger, task_queue, after: tuple[bytes, ...], finishes: bool
):
    """The first model call is scheduled (sealed under the old key) by a worker that stops before any worker
    runs it; the workers that run it hold the rotated keys. Kept, the old key opens it and the run books its
    trip. Dropped, nothing acts: the model call is refused, and the results the run recorded under the old key (its
    described agent) no longer verify, so every workflow task fails saying so and the run waits, open — which is
    why the old key stays until the runs that recorded under it have closed."""
    client = dev_env.client
    run_id = f"in-flight-{uuid.uuid4().hex[:8]}"
    async with await workflows_only(client, task_queue, WorkerKeys((OLD,))):
        run = await AgentClient(client, task_queue=task_queue).start("trip", run_id=run_id, options={"fail_at": "none"})
        await eventually(lambda: first_model_call_scheduled(client, run_id), what="the model call's schedule")
    async with new_worker(client, task_queue, ledger, approver_keys={}, worker_keys=WorkerKeys(after)):
        if finishes:
            result = await run.result()
            assert result.status == "completed"
            assert [e.tool for e in ledger.effects(run_id)] == ["book_flight", "book_hotel", "book_car"]
            return

        async def refused_clearly() -> bool:
            return any("sealed under a key since dropped" in m for m in await task_failures(client, run_id))

        await eventually(refused_clearly, what="a workflow task failure naming the dropped key")
    assert ledger.effects(run_id) == []
    assert (await client.get_workflow_handle(run_id).describe()).status.name == "RUNNING"
    await client.get_workflow_handle(run_id).terminate("the test is over")

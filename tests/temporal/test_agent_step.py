"""An agent as one step of a user's own workflow (`duragent.workflow.run_agent`), on the time-skipping server:
the user's `Worker` serves their workflow and activities next to the agents (`DurableAgentsPlugin(agents=...)`).
The agent's approval waits a day and is approved through `AgentClient`, then the workflow's last step runs; an
approval that expires makes the agent undo what it did, and the last step does not run; the workflow's history
replays; with the workers' keys the agent's run is started sealed and accepted; the child's id is the
parent's plus a count of its agent steps, the same on every replay."""

from __future__ import annotations

import uuid
from datetime import timedelta

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.worker import Replayer, Worker

from duragent import AgentClient, DurableAgentsPlugin
from duragent._config.worker_keys import WorkerKeys
from duragent._sealing import HEADER
from examples.options import DemoDeps
from tests.conftest import TEST_AGENTS, transcripts_next_to
from tests.support.plain_user_workflow import TwoSteps
from tests.support.user_workflows import (
    NOTIFIED,
    Refunded,
    RefundRequest,
    RefundThenNotify,
    look_up_order,
    notify_customer,
)

KEYS = WorkerKeys((b"k" * 32,))


def users_worker(client: Client, task_queue: str, ledger, **plugin: object) -> Worker:
    """The user's own worker: their workflow and activities, and the agents by the plugin."""
    serving = DurableAgentsPlugin(
        agents=TEST_AGENTS, deps=DemoDeps(ledger=ledger), transcripts=transcripts_next_to(ledger), **plugin
    )
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[RefundThenNotify],
        activities=[look_up_order, notify_customer],
        plugins=[serving],
    )


async def start(client: Client, task_queue: str, request: RefundRequest):
    return await client.start_workflow(
        RefundThenNotify.run, request, id=f"order-{uuid.uuid4().hex[:8]}", task_queue=task_queue, result_type=Refunded
    )


async def test_the_agent_step_waits_a_day_for_its_approval_then_the_last_step_runs(skipping_env, ledger, task_queue):
    client = skipping_env.client
    agents = AgentClient(client, task_queue=task_queue)
    async with users_worker(client, task_queue, ledger):
        order = f"A-{uuid.uuid4().hex[:6]}"  # NOTIFIED is this process's: other tests notify too
        handle = await start(client, task_queue, RefundRequest(order_id=order))
        [waiting] = await agents.handle(handle.id).wait_for_approval()  # found among the workflow's children
        assert waiting.run_id == f"{handle.id}~refund-1"
        assert (waiting.tool, waiting.arguments) == ("refund", {"order_id": "4471"})

        await skipping_env.sleep(timedelta(days=1))
        assert ledger.effects(waiting.run_id) == [] and not [n for n in NOTIFIED if n.startswith(f"{order}:")]
        run = agents.handle(waiting.run_id)
        await run.approve(waiting.call_id, by="maria", arguments_hash=waiting.arguments_hash)
        done = await handle.result()

    assert (done.stop, done.output, done.notified) == ("answered", "Refunded order 4471.", True)
    assert done.agent_run == waiting.run_id
    assert [e.tool for e in ledger.effects(waiting.run_id)] == ["refund"]  # once, under the agent run's keys
    assert [n for n in NOTIFIED if n.startswith(f"{order}:")] == [f"{order}: {done.output}"]  # once
    [entry] = (await run.result()).audit
    assert (entry.event, entry.approver) == ("approved", "maria")

    # The user's workflow replays from its history: the child's start and id are the recorded ones.
    history = await handle.fetch_history()
    replayed = await Replayer(workflows=[RefundThenNotify], plugins=[DurableAgentsPlugin()]).replay_workflow(history)
    assert replayed.replay_failure is None


async def test_an_expired_approval_undoes_the_agents_booking_and_the_last_step_does_not_run(
    skipping_env, ledger, task_queue
):
    client = skipping_env.client
    async with users_worker(client, task_queue, ledger):
        order = f"B-{uuid.uuid4().hex[:6]}"
        request = RefundRequest(order_id=order, agent="t-book-then-pay", approval_days=1, on_expire="abandon")
        handle = await start(client, task_queue, request)
        [waiting] = await AgentClient(client, task_queue=task_queue).handle(handle.id).wait_for_approval()
        assert waiting.tool == "pay"
        done = await handle.result()  # the server skips to the deadline
        agent_result = await AgentClient(client, task_queue=task_queue).handle(done.agent_run).result()

    assert (done.stop, done.notified) == ("approval_expired", False)
    assert not [n for n in NOTIFIED if n.startswith(f"{order}:")]
    assert agent_result.status == "compensated"
    assert [c.tool for c in agent_result.compensations] == ["book_flight"]
    assert [e.tool for e in ledger.effects(done.agent_run)] == ["book_flight", "cancel_flight"]


async def test_with_the_workers_keys_the_agent_step_is_started_sealed_and_accepted(skipping_env, ledger, task_queue):
    client = skipping_env.client
    async with users_worker(client, task_queue, ledger, worker_keys=KEYS):
        handle = await start(client, task_queue, RefundRequest(order_id="C-3"))
        agents = AgentClient(client, task_queue=task_queue)
        [waiting] = await agents.handle(handle.id).wait_for_approval()
        await agents.handle(waiting.run_id).approve(waiting.call_id, by="maria", arguments_hash=waiting.arguments_hash)
        done = await handle.result()
    assert done.notified and [e.tool for e in ledger.effects(done.agent_run)] == ["refund"]
    started = [
        e.start_child_workflow_execution_initiated_event_attributes
        async for e in handle.fetch_history_events()
        if e.event_type == EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED
    ]
    assert [s.workflow_id for s in started] == [done.agent_run]
    assert HEADER in started[0].header.fields  # the user's workflow sealed the agent's start


async def test_two_agent_steps_get_two_ids_and_a_given_id_is_used(skipping_env, ledger, task_queue):
    client = skipping_env.client
    async with Worker(
        client,
        task_queue=task_queue,
        workflows=[TwoSteps],
        plugins=[DurableAgentsPlugin(agents=TEST_AGENTS, deps=DemoDeps(ledger=ledger))],
    ):
        ids = await client.execute_workflow(TwoSteps.run, id="two-steps-" + uuid.uuid4().hex[:6], task_queue=task_queue)
    first, second = ids
    assert first.endswith("~t-repeat-1") and second == "chosen-" + first.split("~")[0]

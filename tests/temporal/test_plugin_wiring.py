"""`DurableAgentsPlugin` wires a whole worker: on the user's own `Worker`, next to their workflows and activities,
it registers the agents' workflows, activities and interceptors once; a worker that got it from its client
alone (no agents) fails an agent run at once, in one line, instead of retrying a task forever; a second worker
on a queue in one process is one clear line, in either order, instead of the SDK core's backtrace; and a
child agent run of a user's workflow waiting for approval is listed by `AgentClient.pending()` (visibility,
on the dev server) — what the inbox and `duragent pending` show."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from temporalio.worker import Worker

from duragent import AgentClient, DurableAgentsPlugin, UnknownAgent, build_worker
from duragent._one_worker import SecondWorker
from duragent._run_logging import LoggingInterceptor
from duragent._scrubbing import Scrubbing
from examples.options import DemoDeps
from tests.conftest import TEST_AGENTS, transcripts_next_to
from tests.support.user_workflows import Refunded, RefundRequest, RefundThenNotify, look_up_order, notify_customer

AGENT_ACTIVITIES = [
    "describe_agent",
    "call_model",
    "run_tool",
    "compensate",
    "list_mcp_tools",
    "attach_delegate",
    "attach_turn",
    "deliver_webhook",
]


def activity_names(config: Any) -> list[str]:
    return [a.__temporal_activity_definition.name for a in config["activities"]]


def users_worker(client, task_queue: str, ledger, *plugins: DurableAgentsPlugin) -> Worker:
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[RefundThenNotify],
        activities=[look_up_order, notify_customer],
        plugins=list(plugins),
    )


async def test_the_plugin_on_the_users_worker_adds_the_agents_next_to_the_users_own_once(
    skipping_env, ledger, task_queue
):
    serving = DurableAgentsPlugin(agents=TEST_AGENTS, deps=DemoDeps(ledger=ledger))
    config: Any = users_worker(skipping_env.client, task_queue, ledger, serving).config(active_config=True)
    assert [w.__name__ for w in config["workflows"]] == [
        "RefundThenNotify",
        "AgentWorkflow",
        "ConversationWorkflow",
        "WebhookWorkflow",
    ]
    assert activity_names(config) == ["look_up_order", "notify_customer", *AGENT_ACTIVITIES]
    # The client's plugin (skipping_env's) stood aside: the worker's masking of its secrets, one logging interceptor.
    assert [type(i) for i in config["interceptors"]] == [Scrubbing, LoggingInterceptor]
    assert serving.settings is skipping_env.client.config()["plugins"][0].settings  # read once, by the client's


async def test_a_worker_with_the_plugin_from_its_client_only_fails_an_agent_run_at_once_saying_why(
    skipping_env, ledger, task_queue
):
    async with users_worker(skipping_env.client, task_queue, ledger):  # no agents given to this worker
        run = await AgentClient(skipping_env.client, task_queue=task_queue).start("refund")
        with pytest.raises(UnknownAgent) as failed:
            await run.result()
    assert f"the worker on task queue {task_queue!r} serves no agents" in str(failed.value)
    assert "plugins=[DurableAgentsPlugin(agents=[...], deps=...)]" in str(failed.value)
    assert len(str(failed.value).splitlines()) == 1


async def test_a_second_worker_on_the_queue_is_one_clear_line_in_either_order(skipping_env, ledger, task_queue):
    client = skipping_env.client
    built = build_worker(client, task_queue=task_queue, agents=TEST_AGENTS, deps=DemoDeps(ledger=ledger))
    with pytest.raises(SecondWorker, match=f"a worker for task queue '{task_queue}'.* already runs in this process"):
        users_worker(client, task_queue, ledger)
    async with built:  # run and shut down: the queue is free again
        pass
    async with users_worker(client, task_queue, ledger):
        pass
    other = f"{task_queue}-2"
    users = users_worker(client, other, ledger)
    with pytest.raises(SecondWorker, match="serve the agents from your own Worker") as second:
        build_worker(client, task_queue=other, agents=TEST_AGENTS)
    assert "\n" not in str(second.value) and "Stack backtrace" not in str(second.value)
    del users


async def test_a_waiting_agent_step_is_listed_by_pending_like_any_run(dev_env, ledger, task_queue):
    client = dev_env.client
    agents = AgentClient(client, task_queue=task_queue)
    serving = DurableAgentsPlugin(
        agents=TEST_AGENTS, deps=DemoDeps(ledger=ledger), transcripts=transcripts_next_to(ledger)
    )
    async with users_worker(client, task_queue, ledger, serving):
        handle = await client.start_workflow(
            RefundThenNotify.run,
            RefundRequest(order_id="A-1"),
            id=f"order-{uuid.uuid4().hex[:8]}",
            task_queue=task_queue,
            result_type=Refunded,
        )
        [waiting] = await agents.handle(handle.id).wait_for_approval()
        listed = []
        for _ in range(100):  # visibility is eventually consistent
            listed = await agents.pending()
            if listed:
                break
        assert [(p.run_id, p.call_id) for p in listed] == [(waiting.run_id, waiting.call_id)]
        await agents.handle(waiting.run_id).approve(waiting.call_id, by="maria", arguments_hash=waiting.arguments_hash)
        assert (await handle.result()).notified

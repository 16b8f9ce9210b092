"""What a person decides on is the call as the run itself reports it. Memos and search
attributes are written by whoever starts a workflow: decoy.py started a decoy `AgentWorkflow` on a task queue
nobody polls, whose memo lists a harmless refund under the real run's name and the real call's hash, and
hid the real run from visibility. `AgentClient.pending()` (what `starter.py pending`, the inbox and the runs
API list) and `RunHandle.pending()`/`decide` (what `approve` routes by) must show and route by the runs
themselves. On the dev server (visibility queries), with signed decisions required."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable
from datetime import datetime, timedelta

import pytest
from temporalio.api.enums.v1 import RoutingConfigUpdateState
from temporalio.api.workflowservice.v1 import (
    DescribeWorkerDeploymentRequest,
    SetWorkerDeploymentCurrentVersionRequest,
)
from temporalio.client import Client
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.service import RPCError
from temporalio.worker import Worker

from agentic import ToolCall
from agentic.approvals import arguments_hash
from agentic.signing import ApproverKey, parse_public_keys
from duragent._client import PENDING_QUERY, AgentClient
from duragent._errors import NoPendingApproval
from duragent._workflows import search_attributes as sa
from duragent._workflows.inputs import AgentInput
from duragent._workflows.names import WORKFLOW_TYPE
from tests.conftest import eventually, new_worker
from tests.support.deploy_agents import HOLD_THEN_REFUND

MARIA = ApproverKey.generate("maria")
KEYS = parse_public_keys(MARIA.public_entry())
HARMLESS = {"order_id": "SANDBOX-TEST-0 (no money moves)"}
REAL_HASH = arguments_hash(ToolCall(name="refund", arguments={"order_id": "4471"}))


def waiting_attributes() -> TypedSearchAttributes:
    return TypedSearchAttributes(
        [
            SearchAttributePair(sa.AGENT_STATUS, "awaiting_approval"),
            SearchAttributePair(sa.AGENT_NAME, "refund"),
            SearchAttributePair(sa.AGENT_PENDING_APPROVALS, 1),
        ]
    )


def forged_memo(run_id: str) -> dict[str, object]:
    now = datetime.now().astimezone()
    row = {
        "run_id": run_id,
        "call_id": "1.1",
        "tool": "refund",
        "arguments": HARMLESS,
        "arguments_hash": REAL_HASH,
        "requested_at": now.isoformat(),
        "deadline": (now + timedelta(hours=4)).isoformat(),
    }
    return {"pending_approvals": [row]}


async def listed_by_visibility(client: Client, run_id: str) -> bool:
    return any([e.id == run_id async for e in client.list_workflows(PENDING_QUERY)])


async def test_a_decoys_memo_is_neither_shown_nor_routed_to_the_real_run(dev_env, ledger, task_queue) -> None:
    client = dev_env.client
    real, decoy = f"sec-real-{uuid.uuid4().hex[:8]}", f"sec-decoy-{uuid.uuid4().hex[:8]}"
    async with new_worker(client, task_queue, ledger, approver_keys=KEYS):
        agents = AgentClient(client, task_queue=task_queue)
        await client.start_workflow(
            "AgentWorkflow", AgentInput(agent="refund", search_attributes=False), id=real, task_queue=task_queue
        )
        await client.start_workflow(
            "AgentWorkflow",
            AgentInput(agent="refund"),
            id=decoy,
            task_queue=f"{task_queue}-nobody-polls-this",
            memo=forged_memo(real),
            search_attributes=waiting_attributes(),
        )
        [real_call] = await agents.handle(real).wait_for_approval()  # the real run, asked directly
        await eventually(lambda: listed_by_visibility(client, decoy), what="the decoy in visibility")

        listed = await agents.pending()
        assert all(p.arguments != HARMLESS for p in listed), listed
        assert await agents.handle(decoy).pending() == []
        with pytest.raises(NoPendingApproval):  # `approve DECOY`: nothing waits there, nothing is routed
            await agents.handle(decoy).decide(True, "1.1", by="maria", key=MARIA)
        assert ledger.effects(real) == []
        assert (real_call.arguments, real_call.arguments_hash) == ({"order_id": "4471"}, REAL_HASH)
        await agents.handle(real).workflow.terminate(reason="the test is over")


async def test_a_memo_a_client_started_a_run_with_is_not_what_the_run_reports(dev_env, ledger, task_queue) -> None:
    """A real run on the agents' queue, started with a forged memo while no worker is up: with no worker to
    ask, what is shown is what the run's own workflow last published — nothing yet, then the real call."""
    client = dev_env.client
    run_id = f"sec-memo-{uuid.uuid4().hex[:8]}"
    agents = AgentClient(client, task_queue=task_queue)
    await client.start_workflow(
        "AgentWorkflow",
        AgentInput(agent="refund"),
        id=run_id,
        task_queue=task_queue,
        memo=forged_memo(run_id),
        search_attributes=waiting_attributes(),
    )
    await eventually(lambda: listed_by_visibility(client, run_id), what="the run in visibility")
    assert await agents.handle(run_id).pending() == []
    assert [p for p in await agents.pending() if p.run_id == run_id] == []

    async with new_worker(client, task_queue, ledger, approver_keys=KEYS):
        [asked] = await agents.handle(run_id).wait_for_approval()
    assert (asked.arguments, asked.arguments_hash) == ({"order_id": "4471"}, REAL_HASH)
    # The worker is gone: the call is still shown, as the run's workflow published it.
    [published] = await agents.handle(run_id).pending()
    assert published == asked
    await agents.handle(run_id).workflow.terminate(reason="the test is over")


async def test_with_no_worker_a_runs_progress_shows_what_it_reported_never_what_it_was_started_with(
    dev_env, ledger, task_queue
) -> None:
    """`known_progress` — what `starter.py status` and the runs API show while no worker answers — takes what
    the run waits for from the run (its last published list), never from the status and count in the search
    attributes whoever started it wrote."""
    client = dev_env.client
    run_id = f"sec-progress-{uuid.uuid4().hex[:8]}"
    agents = AgentClient(client, task_queue=task_queue)
    await client.start_workflow(
        WORKFLOW_TYPE,
        AgentInput(agent="refund"),
        id=run_id,
        task_queue=task_queue,
        memo=forged_memo(run_id),
        search_attributes=waiting_attributes(),
    )
    shown = await agents.handle(run_id).known_progress()
    assert (shown.worker_answered, shown.status, shown.pending_approvals) == (False, "running", [])

    async with new_worker(client, task_queue, ledger, approver_keys=KEYS):
        [asked] = await agents.handle(run_id).wait_for_approval()
        answered = await agents.handle(run_id).known_progress()
        assert (answered.worker_answered, answered.status) == (True, "awaiting_approval")
    shown = await agents.handle(run_id).known_progress()  # the worker is gone: as the run last published it
    assert (shown.worker_answered, shown.status) == (False, "awaiting_approval")
    assert shown.pending_approvals == [asked] and "waiting for a worker" in shown.label
    await agents.handle(run_id).workflow.terminate(reason="the test is over")


async def test_a_run_handed_over_to_a_build_with_no_worker_up_yet_still_shows_and_takes_its_approval(
    dev_env, ledger, task_queue, tmp_path
) -> None:
    """A deploy makes build v2 current while no v2 worker is up. A v1 run mid-step then reaches its approval
    wait and hands over to v2 first (duragent/_workflows/agent.py, before a wait), its request carried: the continuation
    has not run, so the pending list is the one its predecessor published, found back along the chain. The
    approver sees the call, her decision waits at the server (a signal), and the first v2 worker applies it."""
    client = dev_env.client
    deployment = f"pending-{uuid.uuid4().hex[:8]}"
    release = tmp_path / "release"

    async def make_current(build_id: str) -> None:
        request = SetWorkerDeploymentCurrentVersionRequest(
            namespace=client.namespace, deployment_name=deployment, build_id=build_id, allow_no_pollers=True
        )
        await client.workflow_service.set_worker_deployment_current_version(request)

    async def propagated() -> bool:
        """The routing change reached the task queue's partitions (it does after the request returns)."""
        request = DescribeWorkerDeploymentRequest(namespace=client.namespace, deployment_name=deployment)
        described = await client.workflow_service.describe_worker_deployment(request)
        state = described.worker_deployment_info.routing_config_update_state
        return state == RoutingConfigUpdateState.ROUTING_CONFIG_UPDATE_STATE_COMPLETED

    def worker(build_id: str) -> Worker:
        return new_worker(
            client, task_queue, ledger, agents=[HOLD_THEN_REFUND], deployment=deployment, build_id=build_id
        )

    agents = AgentClient(client, task_queue=task_queue)
    async with worker("v1"):
        await eventually(lambda: _succeeds(make_current("v1")), timeout=30, what="v1 current")
        await eventually(propagated, timeout=30, what="v1 current on the task queue")
        run = await agents.start(HOLD_THEN_REFUND, f"hold on {release}")
        first = (await run.workflow.describe()).run_id

        async def holding() -> bool:
            return bool((await run.workflow.describe()).raw_description.pending_activities)

        await eventually(holding, timeout=30, what="the run mid-step, in its hold")
        async with worker("v2"):  # the new build's workers poll once (the server learns its task queue)...
            await eventually(lambda: _succeeds(make_current("v2")), timeout=30, what="v2 current")
            await eventually(propagated, timeout=30, what="v2 current on the task queue")
        release.touch()  # ...and are stopped before the run moves on

        async def handed_over() -> bool:
            return (await run.workflow.describe()).run_id != first

        await eventually(handed_over, timeout=30, what="the run to hand over to v2 at its approval wait")
    [waiting] = await run.pending()  # no worker up for v2: from the history of the chain
    assert (waiting.tool, waiting.arguments) == ("refund", {"order_id": "4471"})
    outcome = await run.approve(
        waiting.call_id, by="maria", arguments_hash=waiting.arguments_hash, wait=timedelta(seconds=2)
    )
    assert (outcome.via, outcome.decision) == ("signal", "queued")
    async with worker("v2"):
        result = await asyncio.wait_for(run.result(), 60)
    assert result.status == "completed" and result.continued >= 1
    assert [e.args for e in ledger.effects(run.run_id)] == [{"order_id": "4471"}]


async def _succeeds(call: Awaitable[None]) -> bool:
    try:
        await call
    except RPCError:
        return False
    return True

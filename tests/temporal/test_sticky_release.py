"""After a worker is SIGKILLed mid-step, the worker started in its place first moves the stepping runs
off the dead worker's sticky queue (duragent/_sticky.py), so the run's next workflow task is not left
waiting out the sticky timeout there. A real dev server and real worker processes; what is checked is in the
run's history (workflow tasks that timed out after the kill) and in the ledger (every effect exactly once)."""

from __future__ import annotations

import asyncio
import time

import pytest
from temporalio import workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.common import WorkerDeploymentVersion
from temporalio.worker import Worker, WorkerDeploymentConfig

from duragent._client import AgentClient
from duragent._ops.devstack.worker_process import WorkerProcess
from duragent._sticky import own_build, release_sticky_runs, stepping_runs, waiting_runs
from duragent._stores.ledger import EffectsLedger
from duragent._workflows.agent import AgentWorkflow
from duragent._workflows.inputs import Timeouts
from duragent._workflows.search_attributes import AGENT_STATUS
from duragent._workflows.versioned import PinnedAgentWorkflow
from tests.conftest import dev_settings, eventually

RECORDS = 3


@pytest.mark.parametrize("release", [True, False], ids=["released", "not-released"])
async def test_a_restarted_worker_takes_the_killed_workers_runs_at_once(dev_env, task_queue, tmp_path, release):
    settings = dev_settings(dev_env, task_queue, tmp_path)
    env = {"AGENT_RELEASE_STICKY_RUNS": "true" if release else "false"}
    first = WorkerProcess(settings, log=tmp_path / "first.log", extra_env=env).wait_ready()
    second: WorkerProcess | None = None
    try:
        ledger = EffectsLedger(settings.ledger_path)
        run = await AgentClient(dev_env.client, task_queue=task_queue).start(
            "migration",
            options={"records": RECORDS, "step_delay": 1.0},
            timeouts=Timeouts(heartbeat_seconds=2),
        )
        await eventually(lambda: len(ledger.effects(run.run_id)) >= 1, what="the first record migrated")
        await asyncio.sleep(0.3)  # inside the second record's second of work
        killed_at = time.time()
        first.kill()
        second = WorkerProcess(settings, log=tmp_path / "second.log", extra_env=env).wait_ready()
        result = await asyncio.wait_for(run.result(), 120)
        history = await run.workflow.fetch_history()
    finally:
        first.kill()
        if second is not None:
            second.stop()
    assert result.status == "completed"
    migrated = [e.args["record"] for e in ledger.effects(run.run_id)]
    assert sorted(migrated) == [f"rec-{i}" for i in range(1, RECORDS + 1)]  # each once, the interrupted one too
    timed_out = [
        e
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT
        and e.event_time.seconds + e.event_time.nanos / 1e9 > killed_at
    ]
    # Released, the next workflow task goes to the shared queue; not released, it first times out on the
    # dead worker's sticky queue (the 5 s the release saves).
    assert (len(timed_out) == 0) is release


@workflow.defn(name="StatusHolder", sandboxed=False)
class StatusHolder:
    """An open run that shows `status` as its AgentStatus (none: a run started without our search attributes,
    or the webhook notifier) and waits."""

    @workflow.run
    async def run(self, status: str | None) -> None:
        if status is not None:
            workflow.upsert_search_attributes([AGENT_STATUS.value_set(status)])
        await workflow.wait_condition(lambda: False)


@pytest.mark.parametrize("waiting", [False, True], ids=["stepping-first", "then-waiting"])
async def test_a_starting_worker_releases_the_stepping_runs_first_then_the_waiting_ones(dev_env, task_queue, waiting):
    """Running and compensating runs take steps, and so may a run without our status: each is released first (its
    next workflow task goes to the shared queue at once); then the runs waiting for a person — an approval, a
    conversation's next message — whose next task comes when the person acts."""
    client = dev_env.client
    stepping = {"running": True, "compensating": True, None: True}
    people = {"awaiting_approval": True, "open": True, "closing": True}
    statuses = {s: not waiting for s in stepping} | {s: waiting for s in people} | {"completed": False}
    async with Worker(client, task_queue=task_queue, workflows=[StatusHolder]):
        handles = [
            await client.start_workflow(StatusHolder.run, status, id=f"{task_queue}-{status}", task_queue=task_queue)
            for status in statuses
        ]
        try:

            async def all_shown() -> bool:
                shown = [
                    w.search_attributes.get("AgentStatus")
                    async for w in client.list_workflows(f"TaskQueue = '{task_queue}'")
                ]
                return len(shown) == len(statuses) and sum(s is not None for s in shown) == len(statuses) - 1

            await eventually(all_shown, timeout=30, what="the runs and their statuses in visibility")
            released = await release_sticky_runs(client, task_queue, waiting=waiting)
        finally:
            for handle in handles:
                await handle.terminate("test over")
    assert released == sum(statuses.values())


def test_the_query_names_the_task_queue_and_refuses_what_it_cannot_quote():
    assert "'open'" in waiting_runs("agents-1") and "IS NULL" not in waiting_runs("agents-1")
    query = stepping_runs("agents-1")
    assert "TaskQueue = 'agents-1'" in query and "ExecutionStatus = 'Running'" in query
    with pytest.raises(ValueError, match="task queue"):
        stepping_runs("x' OR TaskQueue != '")


def test_a_versioned_worker_releases_only_the_runs_of_its_own_build(dev_env):
    """A deploy starts the new build's workers next to the old build's live ones: the new build must leave their
    runs' sticky queues alone (a pinned run's next task then reached the new build, which could not replay it:
    tests/ops/test_deploy.py failed so, about one full run in three)."""
    version = WorkerDeploymentVersion(deployment_name="agents", build_id="v2")
    plain = Client(dev_env.client.service_client)  # (without our plugin, which adds its own workflows)
    versioned = Worker(
        plain,
        task_queue="q",
        workflows=[PinnedAgentWorkflow],
        deployment_config=WorkerDeploymentConfig(version=version, use_worker_versioning=True),
    )
    unversioned = Worker(plain, task_queue="q", workflows=[AgentWorkflow])
    assert own_build(versioned) == "agents:v2" and own_build(unversioned) is None
    assert stepping_runs("q", own_build(versioned)).endswith(" AND TemporalWorkerDeploymentVersion = 'agents:v2'")
    assert "TemporalWorkerDeploymentVersion" not in stepping_runs("q", own_build(unversioned))
    with pytest.raises(ValueError, match="build"):
        stepping_runs("q", "agents:v2' OR TaskQueue != '")

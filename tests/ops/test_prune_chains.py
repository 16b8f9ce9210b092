"""A cron or retry chain under our workflow type, made by any Temporal client, no longer stops retention:
`prune` skips the chain with its reason and archives and deletes every other due run."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.common import RetryPolicy
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from duragent._client import AgentClient
from duragent._ops.retention.archive import read_archive
from duragent._ops.retention.journal import SqlitePruneJournal
from duragent._ops.retention.policy import Policy
from duragent._ops.retention.temporal import RunStores, prune
from duragent._stores.ledger import EffectsLedger
from tests.conftest import eventually, new_worker, transcripts_next_to
from tests.ops.test_prune import fresh_namespace
from tests.support.foreign_chains import ForeignChain


async def executions(client: Client, run_id: str) -> list[WorkflowExecutionStatus | None]:
    return [e.status async for e in client.list_workflows(f'WorkflowId = "{run_id}"')]


async def test_prune_skips_a_chain_the_server_continues_and_prunes_the_rest(
    dev_env: WorkflowEnvironment, task_queue: str, tmp_path: Path, ledger: EffectsLedger
) -> None:
    client = await fresh_namespace(dev_env)
    batch = uuid.uuid4().hex[:6]
    retried, cron, ours = f"retried-{batch}", f"cron-{batch}", f"billing-{batch}"
    async with Worker(client, task_queue=f"foreign-{batch}", workflows=[ForeignChain]):
        # The outsider's chains: a retry policy (the first attempt fails), and a cron schedule.
        await client.execute_workflow(
            "AgentWorkflow",
            True,
            id=retried,
            task_queue=f"foreign-{batch}",
            retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=100), maximum_attempts=3),
        )
        chain = await client.start_workflow(
            "AgentWorkflow", False, id=cron, task_queue=f"foreign-{batch}", cron_schedule="@every 1s"
        )

        async def ran_twice() -> bool:
            return (await executions(client, cron)).count(WorkflowExecutionStatus.COMPLETED) >= 2

        await eventually(ran_twice, what="two runs of the cron chain")
        await chain.terminate("enough")
    async with new_worker(client, task_queue, ledger):
        done = await (await AgentClient(client, task_queue=task_queue).start("billing", run_id=ours)).result()
    assert done.status == "completed"

    async def all_closed() -> bool:
        statuses = [s for run_id in (retried, cron, ours) for s in await executions(client, run_id)]
        return len(statuses) >= 5 and WorkflowExecutionStatus.RUNNING not in statuses

    await eventually(all_closed, what="visibility to list every execution closed")
    stores = RunStores(
        ledger=ledger, transcripts=transcripts_next_to(ledger), journal=SqlitePruneJournal(tmp_path / "retention.db")
    )
    now = datetime.now(UTC) + timedelta(days=91)
    outcome = await prune(client, stores, tmp_path / "archive", now, Policy(), dry_run=False, wait_seconds=0)

    assert outcome.archived == [ours]
    assert [r["run_id"] for r in read_archive(outcome.archive)] == [ours]  # type: ignore[arg-type]
    skipped = {s.run_id: s.why for s in outcome.skipped}
    assert set(skipped) == {retried, cron}
    assert all(why.startswith("a cron or retry chain") for why in skipped.values())
    assert len(await executions(client, retried)) == 2 and len(await executions(client, cron)) >= 3  # untouched

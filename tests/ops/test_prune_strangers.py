"""Any Temporal client may run a workflow of its own under the name `AgentWorkflow`, on a queue of its
own, that returns something else than an `AgentResult`. Every `prune --yes` used to abort on it (`invalid input:
Input should be an object`), so retention stopped for everybody. Played on a dev server: the stranger's run is
there, closed and due, next to real runs. Listing every queue, prune archives and deletes the real run and says
why it skipped the stranger's; on the agents' queue (what `starter.py prune` does), the stranger's is not even
listed."""

from __future__ import annotations

import argparse
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from duragent._client import AgentClient
from duragent._config.settings import Settings
from duragent._ops.cli.prune import add_arguments, cmd_prune
from duragent._ops.retention.archive import read_archive
from duragent._ops.retention.journal import SqlitePruneJournal
from duragent._ops.retention.policy import Policy
from duragent._ops.retention.temporal import RunStores, prune
from duragent._stores.ledger import EffectsLedger
from tests.conftest import eventually, new_worker, transcripts_next_to
from tests.ops.test_prune import fresh_namespace, gone, prune_env, visible_as_closed
from tests.support.foreign_chains import ForeignResult

__all__ = ["prune_env"]  # test_prune's dev server, which finishes deletions at once
pytestmark = pytest.mark.system  # that server is this module's own


async def test_a_strangers_agent_workflow_is_skipped_with_its_reason_and_the_real_runs_are_pruned(
    prune_env: WorkflowEnvironment, task_queue: str, tmp_path: Path, ledger: EffectsLedger
) -> None:
    client = await fresh_namespace(prune_env)
    batch = uuid.uuid4().hex[:6]
    stranger, first, second = f"rogue-{batch}", f"billing-a-{batch}", f"billing-b-{batch}"
    async with Worker(client, task_queue=f"rogue-q-{batch}", workflows=[ForeignResult]):
        assert await client.execute_workflow("AgentWorkflow", "hello", id=stranger, task_queue=f"rogue-q-{batch}")
    agents = AgentClient(client, task_queue=task_queue)
    async with new_worker(client, task_queue, ledger):
        for run_id in (first, second):
            assert (await (await agents.start("billing", run_id=run_id)).result()).status == "completed"
    await eventually(lambda: visible_as_closed(client, {stranger, first, second}), what="every run listed closed")
    stores = RunStores(
        ledger=ledger, transcripts=transcripts_next_to(ledger), journal=SqlitePruneJournal(tmp_path / "retention.db")
    )
    now = datetime.now(UTC) + timedelta(days=91)

    # Every AgentWorkflow of the namespace (an operator with agents on several queues): the stranger is listed.
    listed = await prune(client, stores, tmp_path / "archive", now, Policy(), dry_run=False, wait_seconds=30)
    assert sorted(listed.archived) == sorted([first, second]) and sorted(listed.deleted) == sorted([first, second])
    assert sorted(r["run_id"] for r in read_archive(listed.archive)) == sorted([first, second])  # type: ignore[arg-type]
    [skipped] = listed.skipped
    assert skipped.run_id == stranger and skipped.why.startswith("its result is not a run's result"), skipped
    assert await gone(client, first) and await gone(client, second) and not await gone(client, stranger)

    # A real run more, and the pass `starter.py prune` makes: on the agents' queue, the stranger is not listed.
    third = f"billing-c-{batch}"
    async with new_worker(client, task_queue, ledger):
        assert (await (await agents.start("billing", run_id=third)).result()).status == "completed"
    await eventually(lambda: visible_as_closed(client, {third}), what="the third run listed closed")
    queued = await prune(
        client, stores, tmp_path / "archive", now, Policy(), dry_run=False, wait_seconds=30, task_queue=task_queue
    )
    assert queued.archived == [third] and queued.skipped == []
    assert not await gone(client, stranger)  # not ours: left to an operator


async def test_the_prune_command_lists_the_agents_queue_only(
    prune_env: WorkflowEnvironment, task_queue: str, tmp_path: Path, ledger: EffectsLedger, capsys
) -> None:
    """`starter.py prune` itself (not `prune()` called with a queue): a stranger's `AgentWorkflow` on a queue of
    its own, closed and due, is not listed; the agents' run is."""
    client = await fresh_namespace(prune_env)
    batch = uuid.uuid4().hex[:6]
    stranger, ours = f"rogue-{batch}", f"billing-{batch}"
    async with Worker(client, task_queue=f"rogue-q-{batch}", workflows=[ForeignResult]):
        assert await client.execute_workflow("AgentWorkflow", "hello", id=stranger, task_queue=f"rogue-q-{batch}")
    async with new_worker(client, task_queue, ledger):
        await (await AgentClient(client, task_queue=task_queue).start("billing", run_id=ours)).result()
    await eventually(lambda: visible_as_closed(client, {stranger, ours}), what="both runs listed closed")
    settings = Settings(
        address=client.service_client.config.target_host,
        namespace=client.namespace,
        task_queue=task_queue,
        data_dir=tmp_path,
        ledger_path=ledger.path,
    )
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    parser.add_argument("--json", action="store_true")
    later = (datetime.now(UTC) + timedelta(days=91)).isoformat()
    assert await cmd_prune(parser.parse_args(["--now", later, "--json"]), settings) == 0
    listed = capsys.readouterr().out
    assert ours in listed and stranger not in listed, listed

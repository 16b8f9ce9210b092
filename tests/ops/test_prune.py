"""Retention of Temporal runs (`starter.py prune`): real runs of every outcome on a real dev server, their close
times moved into the past by pruning "as of" a later `now`; archived, then deleted from Temporal (visibility and
DeleteWorkflowExecution are the server's own) and from the stores — SQLite and PostgreSQL.

The dev server here skips one wait: Temporal deletes a closed run only once its visibility close record is
acknowledged, which this server checks about every 30 s (`history.transferProcessorEnsureCloseBeforeDelete`).
Our runs closed long before any prune, as in production; `test_a_deletion_temporal_finishes_later_...` runs on
the shared dev server with its defaults, where the wait is real.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
import pytest_asyncio
from google.protobuf.duration_pb2 import Duration
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest, RegisterNamespaceRequest
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.common import WorkflowIDReusePolicy
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from agentic import Agent
from agentic.saga import SagaPolicy
from duragent._activities.inputs import AgentResult, ContinueAsNewPolicy, EngineOptions
from duragent._client import AgentClient
from duragent._config.codec import AesGcmCodec, KeyRing, new_key
from duragent._errors import RunFailed
from duragent._ops.devstack import devserver
from duragent._ops.retention.archive import read_archive
from duragent._ops.retention.journal import PostgresPruneJournal, SqlitePruneJournal
from duragent._ops.retention.policy import NAMESPACE_RETENTION, Policy, keep_closed_runs
from duragent._ops.retention.temporal import Pass, RunStores, prune
from duragent._stores.encrypted import EncryptedTranscriptStore
from duragent._stores.transcripts import Released, TranscriptNotFound, Transcripts, releasable
from duragent._worker import build_worker
from duragent._workflows import search_attributes
from duragent._workflows.agent import AgentWorkflow
from duragent._workflows.inputs import AgentInput
from duragent.testing import start_dev_server
from examples.options import DemoDeps
from tests.conftest import TEST_AGENTS, eventually
from tests.ops.test_cli import starter
from tests.support import delegation_agents
from tests.support.backends import Backend

# Processes of its own: a dev server and `prune` command lines.
pytestmark = pytest.mark.system

FAST_DELETE = ["--dynamic-config-value", "history.transferProcessorEnsureCloseBeforeDelete=false"]


@pytest_asyncio.fixture(scope="module")
async def prune_env() -> AsyncIterator[WorkflowEnvironment]:
    env = await start_dev_server(extra_args=FAST_DELETE)
    try:
        yield env
    finally:
        await env.shutdown()


async def fresh_namespace(env: WorkflowEnvironment, retention: timedelta = NAMESPACE_RETENTION) -> Client:
    """A namespace of the test's own: a prune sees a whole namespace, and so no other test's runs."""
    namespace = f"prune-{uuid.uuid4().hex[:8]}"
    ttl = Duration()
    ttl.FromTimedelta(retention)
    await env.client.workflow_service.register_namespace(
        RegisterNamespaceRequest(namespace=namespace, workflow_execution_retention_period=ttl)
    )
    client = await Client.connect(
        env.client.service_client.config.target_host, namespace=namespace, data_converter=pydantic_data_converter
    )
    await search_attributes.register(client)
    return client


@pytest_asyncio.fixture
async def client(prune_env: WorkflowEnvironment) -> Client:
    return await fresh_namespace(prune_env)


@dataclass
class Stack:
    """Workers' stores on one backend, a worker using them, and the prune's view of the same stores."""

    backend: Backend
    client: Client
    agents: AgentClient
    stores: RunStores
    archive_dir: Path

    async def prune(self, days: float, *, dry_run: bool = False, **kwargs: Any) -> Pass:
        now = datetime.now(UTC) + timedelta(days=days)
        return await prune(self.client, self.stores, self.archive_dir, now, Policy(), dry_run=dry_run, **kwargs)

    def fresh_transcripts(self) -> Transcripts:
        """A reader without cache, as another process: what the store really holds."""
        return Transcripts(self.backend.transcript_store())

    def owners(self) -> set[str]:
        """The runs that own transcript rows, read from the storage itself."""
        if self.backend.url:
            with psycopg.connect(self.backend.url) as db:
                return {r for (r,) in db.execute("SELECT DISTINCT run_id FROM transcript_owners").fetchall()}
        with sqlite3.connect(self.backend.directory / "transcripts.db") as db:
            return {r for (r,) in db.execute("SELECT DISTINCT run_id FROM owners").fetchall()}


def stack_on(backend: Backend, client: Client, task_queue: str, tmp_path: Path) -> Stack:
    ledger = backend.ledger()
    journal = PostgresPruneJournal(backend.database()) if backend.url else SqlitePruneJournal(tmp_path / "retention.db")
    stores = RunStores(ledger=ledger, transcripts=Transcripts(backend.transcript_store()), journal=journal)
    return Stack(backend, client, AgentClient(client, task_queue=task_queue), stores, tmp_path / "archive")


def serving(
    stack: Stack, task_queue: str, agents: list[Agent] = TEST_AGENTS, engine: EngineOptions | None = None
) -> Worker:
    return build_worker(
        stack.client,
        task_queue=task_queue,
        agents=agents,
        deps=DemoDeps(ledger=stack.stores.ledger),
        transcripts=Transcripts(stack.backend.transcript_store()),
        engine=engine,
    )


async def gone(client: Client, run_id: str) -> bool:
    try:
        await client.get_workflow_handle(run_id).describe()
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            return True
        raise
    return False


async def visible_as_closed(client: Client, run_ids: set[str]) -> bool:
    closed = set()
    async for execution in client.list_workflows('WorkflowType = "AgentWorkflow" AND ExecutionStatus != "Running"'):
        closed.add(execution.id)
    return run_ids <= closed


def by_id(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {record["run_id"]: record for record in records}


def transcript_of(result: AgentResult, transcripts: Transcripts) -> list[dict[str, Any]]:
    return [m.to_dict() for m in result.transcript_messages(transcripts)]


async def test_prune_archives_then_deletes_exactly_the_due_runs_and_never_an_open_one(
    client: Client, backend: Backend, task_queue: str, tmp_path: Path
) -> None:
    stack = stack_on(backend, client, task_queue, tmp_path)
    agents, ledger = stack.agents, stack.stores.ledger
    batch = uuid.uuid4().hex[:6]
    names = ("big", "refund-a", "trip-ok", "trip-bad", "short", "killed", "late", "open")
    ids = {name: f"{name}-{batch}" for name in names}
    async with serving(stack, task_queue):
        big = await (await agents.start("t-big-output", options={"output_bytes": 2000}, run_id=ids["big"])).result()
        refund_a = await agents.start("refund", run_id=ids["refund-a"])
        [waiting] = await refund_a.wait_for_approval()
        await refund_a.approve(waiting.call_id, by="maria")
        refunded = await refund_a.result()
        trip_ok = await (await agents.start("trip", run_id=ids["trip-ok"])).result()
        failing_undo = SagaPolicy(max_attempts=2, initial_interval_seconds=1)
        trip_bad = await agents.start(
            "trip", options={"compensation_failures": 99}, saga=failing_undo, run_id=ids["trip-bad"]
        )
        with pytest.raises(RunFailed):
            await trip_bad.result()
        with pytest.raises(RunFailed):
            await (await agents.start("t-short", run_id=ids["short"])).result()
        killed = await agents.start("t-pay-batch", run_id=ids["killed"])
        await killed.wait_for_approval()
        await killed.workflow.terminate("stopped by an operator")
        # A run out of time (its execution timeout, set by whoever started it): Temporal closes it TIMED_OUT.
        await stack.client.start_workflow(
            AgentWorkflow.run,
            AgentInput(agent="refund"),
            id=ids["late"],
            task_queue=task_queue,
            execution_timeout=timedelta(seconds=2),
        )
        open_run = await agents.start("refund", run_id=ids["open"])  # same agent and task as refund-a
        await open_run.wait_for_approval()

        assert (big.status, refunded.status, trip_ok.status) == ("completed", "completed", "compensated")
        closed = {ids[name] for name in names if name != "open"}
        await eventually(lambda: visible_as_closed(stack.client, closed), what="visibility to list the closed runs")
        before = {
            ids["big"]: transcript_of(big, stack.stores.transcripts),
            ids["refund-a"]: transcript_of(refunded, stack.stores.transcripts),
            ids["trip-ok"]: transcript_of(trip_ok, stack.stores.transcripts),
        }
        effects_before = {run_id: ledger.effects(run_id) for run_id in ids.values()}
        assert effects_before[ids["refund-a"]] and effects_before[ids["trip-bad"]]

        # Nothing is due before 30 days; a dry run only lists.
        assert (await stack.prune(29)).archived == []
        dry = await stack.prune(31, dry_run=True)
        assert sorted(dry.as_dict()["archived"]) == sorted([ids["big"], ids["refund-a"], ids["trip-ok"]])
        assert dry.archived == [] and dry.archive is None
        assert not await gone(stack.client, ids["big"]) and ledger.effects(ids["refund-a"])

        first = await stack.prune(31)
        answered = [ids["big"], ids["refund-a"], ids["trip-ok"]]
        assert sorted(first.archived) == sorted(answered) and sorted(first.deleted) == sorted(answered)
        assert first.pending == [] and first.skipped == [] and first.warnings == []
        assert first.archive is not None and first.archive.name.endswith(".jsonl.gz")
        archived = by_id(read_archive(first.archive))
        for run_id in answered:
            record = archived[run_id]
            assert record["transcript"] == before[run_id]
            assert record["effects"] == [e.model_dump(mode="json") for e in effects_before[run_id]]
            assert record["histories"] and record["histories"][-1]["events"]
            assert record["failure"] is None and record["result"]["status"] == record["status"]
            assert await gone(stack.client, run_id) and ledger.effects(run_id) == []
        assert archived[ids["big"]]["transcript"][-2]["content"] == "x" * 2000  # the claim-checked output, whole
        assert [a["event"] for a in archived[ids["refund-a"]]["approvals"]] == ["approved"]
        # Rows trip-ok and refund-a shared with trip-bad and the open refund stayed; their own went.
        assert first.released["shared"] > 0 and first.released["nodes"] > 0 and first.released["blobs"] > 0
        assert stack.owners() == {ids["trip-bad"], ids["short"], ids["killed"], ids["late"], ids["open"]}
        with pytest.raises(TranscriptNotFound):
            stack.fresh_transcripts().load(refunded.transcript_ref or "")

        assert (await stack.prune(89)).archived == []
        second = await stack.prune(91)
        failed = [ids["trip-bad"], ids["short"], ids["killed"], ids["late"]]
        assert sorted(second.archived) == sorted(failed) and sorted(second.deleted) == sorted(failed)
        archived = by_id(read_archive(second.archive))  # type: ignore[arg-type]
        bad = archived[ids["trip-bad"]]
        assert bad["status"] == "compensation_failed" and bad["failure"]["type"] == "CompensationFailed"
        assert bad["result"]["compensations_remaining"] and bad["approvals"] == []
        assert bad["transcript"][0]["role"] == "system" and len(bad["effects"]) == 2
        short = archived[ids["short"]]
        assert short["failure"]["type"] == "ModelCallFailed" and short["result"] is None
        # No result: the transcript is the one under the last head its history recorded (the tool's answer).
        assert [m["role"] for m in short["transcript"]] == ["user", "assistant", "tool"]
        stopped = archived[ids["killed"]]
        assert stopped["temporal_status"] == "terminated" and stopped["approvals"] is None
        assert stopped["transcript"][-1]["tool_calls"]  # stored up to the calls waiting for approval
        assert archived[ids["late"]]["temporal_status"] == "timed_out"  # kept 90 days, like every failure
        for run_id in failed:
            assert await gone(stack.client, run_id) and ledger.effects(run_id) == []
        assert stack.owners() == {ids["open"]}  # every row of a pruned run is gone; the open run's are all there

        # The open run was never touched, however old: it still continues, on its whole transcript.
        assert (await stack.prune(10_000)).archived == []
        assert await open_run.is_running()
        [waiting] = await open_run.pending()
        await open_run.approve(waiting.call_id, by="maria")
        done = await open_run.result()
    assert done.status == "completed" and done.output == "Refunded order 4471."
    assert [m["content"] for m in transcript_of(done, stack.fresh_transcripts())][:2] == [
        m["content"] for m in before[ids["refund-a"]][:2]
    ]


async def test_the_namespace_keeps_closed_runs_longer_than_any_policy_or_prune_warns(
    prune_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """The dev server keeps closed runs one day; set longer, prune is what ends them. A policy longer than the
    namespace's retention is named: Temporal would delete those runs unarchived."""
    client = await fresh_namespace(prune_env, retention=timedelta(days=1))  # as the dev server's `default`
    stores = RunStores(
        ledger=Backend("sqlite", tmp_path).ledger(),
        transcripts=Transcripts(Backend("sqlite", tmp_path).transcript_store()),
        journal=SqlitePruneJournal(tmp_path / "retention.db"),
    )
    now = datetime.now(UTC)
    [warning] = (await prune(client, stores, tmp_path, now, Policy())).warnings
    assert "deletes closed runs after 1 days, before this policy's 90" in warning
    assert await keep_closed_runs(client) == NAMESPACE_RETENTION
    stores = RunStores(
        ledger=Backend("sqlite", tmp_path).ledger(),
        transcripts=Transcripts(Backend("sqlite", tmp_path).transcript_store()),
        journal=SqlitePruneJournal(tmp_path / "retention.db"),
    )
    assert (await prune(client, stores, tmp_path, now, Policy())).warnings == []
    [warning] = (await prune(client, stores, tmp_path, now, Policy(30, 365))).warnings
    assert "deletes closed runs after 100 days, before this policy's 365" in warning


async def test_an_open_run_is_never_listed_whatever_the_policy(client, tmp_path, task_queue) -> None:
    stack = stack_on(Backend("sqlite", tmp_path), client, task_queue, tmp_path)
    async with serving(stack, task_queue):
        handle = await stack.agents.start("refund", run_id=f"waits-{uuid.uuid4().hex[:6]}")
        await handle.wait_for_approval()
        everything = await prune(
            stack.client, stack.stores, stack.archive_dir, datetime.now(UTC) + timedelta(days=1), Policy(0, 0)
        )
        assert handle.run_id not in everything.archived
        assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING
        await handle.workflow.terminate("done with the test")


def test_release_of_a_run_that_owns_nothing_is_nothing(tmp_path: Path) -> None:
    assert releasable(Backend("sqlite", tmp_path).transcript_store()).release("nobody-ran") == Released()


# -- the command line, and a prune killed half-way ------------------------------------------------------


def cli_env(client: Client, backend: Backend, task_queue: str, **extra: str) -> dict[str, str]:
    """The environment of a `starter.py` pointed at this test's namespace, task queue and the workers' stores."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_", "TEMPORAL_"))}
    env |= {
        "TEMPORAL_ADDRESS": client.service_client.config.target_host,
        "TEMPORAL_NAMESPACE": client.namespace,
        "TEMPORAL_TASK_QUEUE": task_queue,  # prune lists the runs on the agents' queue only
        "AGENT_DATA_DIR": str(backend.directory),
        "AGENT_LEDGER": str(backend.directory / "ledger.db"),
    }
    if backend.url:
        env["AGENT_DATABASE_URL"] = backend.url
    return env | extra


@pytest.mark.parametrize(
    ("point", "backend"),
    [
        ("after_archive", "sqlite"),
        ("after_journal", "sqlite"),
        ("after_release", "sqlite"),
        ("after_archive", "postgres"),
        ("after_release", "postgres"),
    ],
    indirect=["backend"],
)
async def test_a_prune_killed_between_archive_and_delete_archives_again_or_finishes_never_loses(
    client: Client, backend: Backend, point: str, task_queue: str
) -> None:
    """`starter.py prune --yes` SIGKILLs itself at `point`. Before its journal entry the next prune archives the
    run again (twice, never zero times); after it, the next prune finishes the deletion from the journal. Either
    way the first archive holds the whole run, and at the end Temporal and the stores no longer do."""
    stack = stack_on(backend, client, task_queue, backend.directory)
    run_id = f"refund-{uuid.uuid4().hex[:6]}"
    async with serving(stack, task_queue):
        handle = await stack.agents.start("refund", run_id=run_id)
        [waiting] = await handle.wait_for_approval()
        await handle.approve(waiting.call_id, by="maria")
        result = await handle.result()
    await eventually(lambda: visible_as_closed(client, {run_id}), what="visibility to list the run as closed")
    transcript = transcript_of(result, stack.stores.transcripts)
    effects = [e.model_dump(mode="json") for e in stack.stores.ledger.effects(run_id)]
    assert len(effects) == 1
    now = (datetime.now(UTC) + timedelta(days=31)).isoformat()
    prune_yes = ("prune", "--yes", "--now", now, "--json")

    if point == "after_archive":  # without --yes (or with --dry-run) prune only says what it would do
        code, out, err = await starter(
            "prune", "--dry-run", "--now", now, "--json", env=cli_env(client, backend, task_queue)
        )
        assert code == 0, err
        assert json.loads(out)["archived"] == [run_id] and json.loads(out)["dry_run"] is True
        code, out, _ = await starter("prune", "--now", now, env=cli_env(client, backend, task_queue))
        assert code == 0 and out.startswith("would archive and delete 1 run(s) (a dry run: add --yes to do it):")
        assert not stack.archive_dir.exists() and not await gone(client, run_id)

    # A process: the command SIGKILLs itself at `point`.
    code, _, _ = await starter(
        *prune_yes, env=cli_env(client, backend, task_queue, AGENT_PRUNE_CRASH_AT=point), process=True
    )
    assert code == -signal.SIGKILL
    [first] = sorted(stack.archive_dir.glob("*.jsonl.gz"))
    assert not list(stack.archive_dir.glob("*.partial"))
    [record] = read_archive(first)
    assert record["run_id"] == run_id and record["transcript"] == transcript and record["effects"] == effects
    assert not await gone(client, run_id)  # the kill came before any deletion in Temporal
    released = point == "after_release"
    assert (stack.stores.ledger.effects(run_id) == []) is released
    assert (run_id in stack.owners()) is not released

    code, out, err = await starter(*prune_yes, env=cli_env(client, backend, task_queue))
    assert code == 0, err
    again = json.loads(out)
    archives = sorted(stack.archive_dir.glob("*.jsonl.gz"))
    if point == "after_archive":  # no journal entry yet: archived again, whole
        assert again["archived"] == [run_id] and again["unfinished"] == [] and len(archives) == 2
        [second] = [a for a in archives if a != first]
        [record_again] = read_archive(second)
        assert record_again["transcript"] == transcript and record_again["effects"] == effects
    else:  # the journal names the archive: finished without archiving again
        assert again["archived"] == [] and again["unfinished"] == [run_id] and archives == [first]
    assert again["deleted"] == [run_id] and again["pending"] == []
    assert await gone(client, run_id)
    assert stack.stores.ledger.effects(run_id) == [] and run_id not in stack.owners()
    assert stack.stores.journal.entries() == []

    # The archive reads back: the whole record, and a summary a person can read.
    code, out, err = await starter(
        "archive", "show", str(first), run_id, "--json", env=cli_env(client, backend, task_queue)
    )
    assert code == 0, err
    assert json.loads(out) == record
    code, out, _ = await starter("archive", "show", str(first), run_id, env=cli_env(client, backend, task_queue))
    assert code == 0 and "transcript (5 messages):" in out and "assistant: -> refund({'order_id': '4471'})" in out
    assert effects[0]["key"] in out and "approved  refund  by maria" in out


async def test_a_deletion_temporal_finishes_later_is_finished_by_the_next_prune(
    dev_env: WorkflowEnvironment, tmp_path: Path, task_queue: str
) -> None:
    """On a server with its default configuration Temporal deletes a closed run some 30 s after being asked.
    A prune that stops waiting first leaves the run in its journal; the next pass — which still sees the run
    in visibility meanwhile — does not archive it again, and drops the entry once the run is gone."""
    client = await fresh_namespace(dev_env)
    stack = stack_on(Backend("sqlite", tmp_path), client, task_queue, tmp_path)
    async with serving(stack, task_queue):
        run_id = (await (await stack.agents.start("billing")).result()).run_id
    await eventually(lambda: visible_as_closed(client, {run_id}), what="visibility to list the run as closed")

    first = await stack.prune(31, wait_seconds=0.5)
    assert first.archived == [run_id] and first.pending == [run_id] and first.deleted == []
    assert [entry.run_id for entry in stack.stores.journal.entries()] == [run_id]
    dry = await stack.prune(31, dry_run=True)
    assert dry.unfinished == [run_id] and dry.due == []  # listed by visibility, yet not due again

    second = await stack.prune(31, wait_seconds=120)
    assert second.archived == [] and second.unfinished == [run_id] and second.deleted == [run_id]
    assert await gone(client, run_id) and stack.stores.journal.entries() == []
    assert len(list(stack.archive_dir.glob("*.jsonl.gz"))) == 1


async def test_a_prune_pointed_at_another_store_keeps_the_run(client: Client, tmp_path: Path, task_queue: str) -> None:
    """The workers' stores are not the prune's (another data directory, another database): a run whose
    transcript is not there is neither archived without it nor deleted — it is kept, saying why."""
    workers = stack_on(Backend("sqlite", tmp_path / "workers"), client, task_queue, tmp_path / "workers")
    async with serving(workers, task_queue):
        run_id = (await (await workers.agents.start("billing")).result()).run_id
    await eventually(lambda: visible_as_closed(client, {run_id}), what="visibility to list the run as closed")
    elsewhere = stack_on(Backend("sqlite", tmp_path / "elsewhere"), client, task_queue, tmp_path / "elsewhere")
    done = await elsewhere.prune(31)
    assert done.archived == [] and done.archive is None
    [kept] = done.skipped
    assert kept.run_id == run_id and "its transcript is not in this store" in kept.why
    assert "AGENT_DATA_DIR" in kept.why
    assert not await gone(client, run_id) and workers.stores.ledger.effects(run_id)
    assert not list(elsewhere.archive_dir.glob("*"))


async def test_closed_children_are_kept_while_their_root_is_open_and_are_undone_when_it_is_cancelled(
    client: Client, tmp_path: Path, task_queue: str
) -> None:
    """A child and a grandchild answered and closed; the root waits for an approval. Both are due by the
    policy, but the root may still undo their effects as a unit (its saga finds them under their keys in the
    ledger), so prune keeps them, rows and all — and cancelling the root then undoes what they did."""
    stack = stack_on(Backend("sqlite", tmp_path), client, task_queue, tmp_path)
    root = f"desk-{uuid.uuid4().hex[:6]}"
    child, grandchild = f"{root}~2.1", f"{root}~2.1~2.1"
    async with serving(stack, task_queue, [*TEST_AGENTS, *delegation_agents.agents]):
        desk = await stack.agents.start("d-desk-then-pays", run_id=root)
        await desk.wait_for_approval()
        await eventually(lambda: visible_as_closed(stack.client, {child, grandchild}), what="the children closed")
        effects = {run: stack.stores.ledger.effects(run) for run in (child, grandchild)}
        assert [e.tool for e in effects[child]] == ["reserve_funds"]
        assert [e.tool for e in effects[grandchild]] == ["post_entry"]

        kept = await stack.prune(31)
        assert kept.archived == [] and kept.deleted == []
        assert {s.run_id: s.why for s in kept.skipped} == {
            child: f"its parent run {root} is still open",
            grandchild: f"its root run {root} is still open",
        }
        assert {run: stack.stores.ledger.effects(run) for run in (child, grandchild)} == effects
        assert {child, grandchild} <= stack.owners()  # their transcripts too
        assert not await gone(stack.client, child) and not await gone(stack.client, grandchild)

        await desk.workflow.cancel()
        cancelled = await desk.result()
    assert cancelled.status == "compensated"
    undone = [(e.run_id, e.tool) for e in stack.stores.ledger.effects() if e.compensates is not None]
    assert undone == [(grandchild, "reverse_entry"), (child, "release_funds"), (root, "close_ticket")]


async def test_a_closed_run_is_kept_while_another_run_under_its_id_is_open(
    client: Client, tmp_path: Path, task_queue: str
) -> None:
    """Our client never reuses a run id, but a reset or another client can start a second execution under a
    closed run's id. The stores key rows by the id, so pruning the closed execution would take the open one's
    rows with it (its idempotency keys: a retried effect would run twice): the run is kept until both are done."""
    stack = stack_on(Backend("sqlite", tmp_path), client, task_queue, tmp_path)
    run_id = f"reused-{uuid.uuid4().hex[:6]}"
    async with serving(stack, task_queue):
        first = await (await stack.agents.start("t-book-then-pay", run_id=run_id)).wait_for_approval()
        handle = stack.agents.handle(run_id)
        await handle.deny(first[0].call_id, by="maria")
        assert (await handle.result()).status == "completed"
        await stack.client.start_workflow(
            AgentWorkflow.run,
            AgentInput(agent="t-book-then-pay"),
            id=run_id,
            task_queue=task_queue,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        )
        [waiting] = await handle.wait_for_approval()
        await eventually(lambda: visible_as_closed(stack.client, {run_id}), what="the first execution closed")
        effects = stack.stores.ledger.effects(run_id)
        assert [e.tool for e in effects] == ["book_flight"]  # the second execution's booking is the first's key

        kept = await stack.prune(31)
        assert kept.archived == [] and [(s.run_id, s.why) for s in kept.skipped] == [
            (run_id, "another run with the same id is open")
        ]
        assert stack.stores.ledger.effects(run_id) == effects and run_id in stack.owners()

        await handle.approve(waiting.call_id, by="maria")
        second = await handle.result()
    assert second.status == "completed"
    assert [e.tool for e in stack.stores.ledger.effects(run_id)] == ["book_flight", "pay"]
    assert second.transcript_messages(stack.fresh_transcripts())  # its transcript whole, read back


async def test_the_embedded_server_keeps_closed_runs_longer_than_any_policy(tmp_path: Path) -> None:
    """`starter.py server` (and the demo): the namespace retention is set once the server serves."""
    server = devserver.start_on_free_ports(tmp_path / "dev.db", log=tmp_path / "server.log")
    try:
        await devserver.wait_until_serving(server.address)
        client = await Client.connect(server.address)
        described = await client.workflow_service.describe_namespace(DescribeNamespaceRequest(namespace="default"))
        assert described.config.workflow_execution_retention_ttl.ToTimedelta() == NAMESPACE_RETENTION
    finally:
        server.stop()


async def test_a_run_that_continued_as_new_is_archived_and_deleted_whole(
    client: Client, tmp_path: Path, task_queue: str
) -> None:
    """Every execution of a continue-as-new chain: all their histories in the record, all of them deleted —
    visibility lists only the chain's last one as due."""
    stack = stack_on(Backend("sqlite", tmp_path), client, task_queue, tmp_path)
    often = EngineOptions(continue_as_new=ContinueAsNewPolicy(max_history_events=40))
    async with serving(stack, task_queue, engine=often):
        handle = await stack.agents.start("migration", options={"records": 6})
        result = await handle.result()
    assert result.continued >= 2
    await eventually(lambda: visible_as_closed(client, {handle.run_id}), what="visibility to list the run as closed")
    executions = [history.run_id for history in await handle.histories()]
    assert len(executions) == result.continued + 1
    transcript = transcript_of(result, stack.fresh_transcripts())

    done = await stack.prune(31)
    assert done.archived == [handle.run_id] and done.deleted == [handle.run_id]
    [record] = read_archive(done.archive)  # type: ignore[arg-type]
    assert record["executions"] == executions
    assert [h["run_id"] for h in record["histories"]] == executions and all(h["events"] for h in record["histories"])
    assert record["transcript"] == transcript and len([m for m in transcript if m["role"] == "tool"]) == 6
    for execution in executions:
        with pytest.raises(RPCError) as missing:
            await client.get_workflow_handle(handle.run_id, run_id=execution).describe()
        assert missing.value.status == RPCStatusCode.NOT_FOUND
    assert stack.stores.ledger.effects(handle.run_id) == [] and stack.owners() == set()


async def test_a_run_from_an_encrypted_store_is_archived_readable(
    client: Client, tmp_path: Path, task_queue: str
) -> None:
    """With codec keys the store holds ciphertext under keyed refs; the archive holds the transcript in clear
    (for a postmortem without the keys), and no message twice."""
    stack = stack_on(Backend("sqlite", tmp_path), client, task_queue, tmp_path)
    sealed = EncryptedTranscriptStore(stack.backend.transcript_store(), AesGcmCodec(KeyRing.parse(f"k1:{new_key()}")))
    stack.stores.transcripts = Transcripts(sealed)
    async with build_worker(
        client, task_queue=task_queue, agents=TEST_AGENTS, deps=DemoDeps(ledger=stack.stores.ledger),
        transcripts=Transcripts(sealed),
    ):  # fmt: skip
        result = await (await stack.agents.start("t-big-output", options={"output_bytes": 2000})).result()
    await eventually(lambda: visible_as_closed(client, {result.run_id}), what="visibility to list the run as closed")
    transcript = transcript_of(result, stack.stores.transcripts)
    assert b"x" * 2000 not in Backend("sqlite", tmp_path).raw_bodies()

    done = await stack.prune(31)
    [record] = read_archive(done.archive)  # type: ignore[arg-type]
    assert record["transcript"] == transcript and record["transcript"][-2]["content"] == "x" * 2000
    assert record["blobs"] == {}  # every stored blob is one of the transcript's
    assert stack.owners() == set()

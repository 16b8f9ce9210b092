"""`starter.py prune`: archive, then delete, the closed runs that are due (duragent/_ops/retention/policy.py) — from
Temporal
and from the worker-side stores (the effects ledger, the transcript store).

One pass:

1. Finish what an earlier pass started: each run in the prune journal (duragent/_ops/retention/journal.py) is released
and
   deleted as in step 4, without being archived again — the journal names the archive that holds it.
2. Find the due runs through visibility.
3. Write each one's record (duragent/_ops/retention/run_record.py) to a new gzip JSONL archive: a `.partial` file,
fsynced,
   renamed (duragent/_ops/retention/archive.py). A run whose transcript this store does not hold is skipped, not
   deleted: the
   prune is pointed at another store than the workers'. So is an id the server continues (a cron or retry chain,
   which only a foreign client starts): skipped with the reason, and the pass goes on.
4. Only then, per archived run: a journal entry; its effects rows purged; its transcript rows released (only
   those no other run owns: duragent/_stores/transcripts.py); DeleteWorkflowExecution for every execution of its
   continue-as-new chain.
5. Wait (boundedly) until Temporal no longer has them — it deletes asynchronously — and drop their entries.

A kill at any point loses nothing. Before the archive is renamed nothing was deleted. Between the rename and
the journal entries the next pass archives the run again (twice, never zero times). After its entry the next
pass finishes it, and the record in the first archive is complete: nothing was released before the entry.
`AGENT_PRUNE_CRASH_AT=after_archive|after_journal|after_release` makes the process SIGKILL itself at that
point (the crash tests).
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import DeleteWorkflowExecutionRequest, DescribeNamespaceRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from duragent._ops.retention.archive import SUFFIX, ArchiveWriter
from duragent._ops.retention.journal import Entry, PruneJournal
from duragent._ops.retention.policy import ClosedRun, Policy, Skipped, find_due
from duragent._ops.retention.run_record import NotOurs, ServerChain, TranscriptMissing, run_record
from duragent._stores.ledger import PrunableLedger
from duragent._stores.transcripts import Transcripts, releasable

CRASH_ENV = "AGENT_PRUNE_CRASH_AT"
CRASH_POINTS = ("after_archive", "after_journal", "after_release")


@dataclass
class RunStores:
    """The worker-side stores a prune reads into the archive and then deletes from."""

    ledger: PrunableLedger
    transcripts: Transcripts
    journal: PruneJournal


@dataclass
class Pass:
    """What one pass did (or, dry, would do): `as_dict()` is `starter.py prune --json`."""

    now: datetime
    policy: Policy
    dry_run: bool
    due: list[ClosedRun] = field(default_factory=list)
    archived: list[str] = field(default_factory=list)
    archive: Path | None = None
    skipped: list[Skipped] = field(default_factory=list)
    unfinished: list[str] = field(default_factory=list)  # from the journal: archived by an earlier pass
    deleted: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)  # deletion requested; Temporal not done yet
    released: dict[str, int] = field(default_factory=lambda: dict.fromkeys(("effects", "nodes", "blobs", "shared"), 0))
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "now": self.now.isoformat(),
            "completed_days": self.policy.completed_days,
            "failed_days": self.policy.failed_days,
            # As `job prune`: what was archived and deleted, or in a dry run what would be.
            "archived": [run.run_id for run in self.due] if self.dry_run else self.archived,
            "archive": str(self.archive) if self.archive else None,
            "runs": [run.summary() for run in self.due],
            "skipped": [{"run_id": s.run_id, "why": s.why} for s in self.skipped],
            "unfinished": self.unfinished,
            "deleted": self.deleted,
            "pending": self.pending,
            "released": self.released,
            "warnings": self.warnings,
        }


async def prune(
    client: Client,
    stores: RunStores,
    archive_dir: Path,
    now: datetime,
    policy: Policy,
    *,
    dry_run: bool = True,
    wait_seconds: float = 60.0,
    task_queue: str | None = None,
) -> Pass:
    """One pass. `task_queue`: only runs on the agents' queue (the CLI passes the settings'); None: every
    `AgentWorkflow` of the namespace, a stranger's under that name included (each skipped with its reason)."""
    crash_point = _crash_point()
    outcome = Pass(now=now, policy=policy, dry_run=dry_run)
    outcome.warnings += await _retention_warnings(client, policy)
    journal = stores.journal.entries()
    outcome.unfinished = [entry.run_id for entry in journal]
    due, outcome.skipped = await find_due(client, now, policy, task_queue)
    in_journal = set(outcome.unfinished)
    outcome.due = [run for run in due if run.run_id not in in_journal]
    if dry_run:
        return outcome

    for entry in journal:
        await _finish(client, stores, entry, outcome)

    archive = archive_dir / f"agent-runs-{now.strftime('%Y%m%dT%H%M%SZ')}-{uuid.uuid4().hex[:6]}{SUFFIX}"
    archived: list[tuple[str, list[str]]] = []
    chains: set[str] = set()  # ids the server continues: every due execution under them is skipped
    with ArchiveWriter(archive) as out:
        for run in outcome.due:
            try:
                if run.run_id in chains:
                    raise ServerChain(run.run_id)
                made = await run_record(client, run, stores.transcripts, stores.ledger, now)
            except TranscriptMissing as exc:
                why = f"{exc}: are AGENT_DATABASE_URL / AGENT_DATA_DIR the workers'?"
                outcome.skipped.append(Skipped(run.run_id, why))
                continue
            except ServerChain as exc:
                chains.add(run.run_id)
                outcome.skipped.append(Skipped(run.run_id, str(exc)))
                continue
            except NotOurs as exc:
                outcome.skipped.append(Skipped(run.run_id, str(exc)))
                continue
            if made is None:
                outcome.skipped.append(Skipped(run.run_id, "Temporal no longer has it"))
                continue
            out.write(made.record)
            archived.append((run.run_id, made.executions))
    outcome.archive = archive if archived else None
    outcome.archived = [run_id for run_id, _ in archived]
    _crash_at("after_archive", crash_point)

    entries = []
    for run_id, executions in archived:
        stores.journal.add(run_id, executions, str(archive))
        entries.append(Entry(run_id, tuple(executions), str(archive), now.isoformat()))
    _crash_at("after_journal", crash_point)
    for entry in entries:
        await _finish(client, stores, entry, outcome, crash_point)

    await _confirm(client, stores.journal, [*journal, *entries], outcome, wait_seconds)
    return outcome


async def _finish(
    client: Client, stores: RunStores, entry: Entry, outcome: Pass, crash_point: str | None = None
) -> None:
    """Release the run's rows and ask Temporal to delete it. Both are idempotent, so finishing twice is fine.
    Rows are released before the deletion is asked for: once Temporal has no execution left, the stores
    were released — and the run id may be reused by a new run, whose rows must not be touched."""
    if await _gone(client, entry):
        return
    outcome.released["effects"] += stores.ledger.purge(entry.run_id)
    released = releasable(stores.transcripts.store).release(entry.run_id)
    outcome.released["nodes"] += released.nodes
    outcome.released["blobs"] += released.blobs
    outcome.released["shared"] += released.shared
    _crash_at("after_release", crash_point)
    for execution in entry.executions:  # the chain's last execution last: until then visibility still lists it
        try:
            await client.workflow_service.delete_workflow_execution(
                DeleteWorkflowExecutionRequest(
                    namespace=client.namespace,
                    workflow_execution=WorkflowExecution(workflow_id=entry.run_id, run_id=execution),
                )
            )
        except RPCError as exc:
            if exc.status != RPCStatusCode.NOT_FOUND:
                raise


async def _confirm(
    client: Client, journal: PruneJournal, entries: list[Entry], outcome: Pass, wait_seconds: float
) -> None:
    """Wait until Temporal no longer has the runs (at most `wait_seconds`); drop their journal entries. Those
    still there stay in the journal, reported as pending: the next pass finishes them."""
    deadline = time.monotonic() + wait_seconds
    waiting = list(entries)
    while waiting:
        still = []
        for entry in waiting:
            if await _gone(client, entry):
                journal.remove(entry.run_id)
                outcome.deleted.append(entry.run_id)
            else:
                still.append(entry)
        waiting = still
        if waiting and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
        elif waiting:
            break
    outcome.pending = [entry.run_id for entry in waiting]


async def _gone(client: Client, entry: Entry) -> bool:
    for execution in entry.executions:
        try:
            await client.get_workflow_handle(entry.run_id, run_id=execution).describe()
            return False
        except RPCError as exc:
            if exc.status != RPCStatusCode.NOT_FOUND:
                raise
    return True


async def _retention_warnings(client: Client, policy: Policy) -> list[str]:
    """The namespace's own retention must be longer than the longest policy, or Temporal deletes runs that
    were never archived."""
    try:
        described = await client.workflow_service.describe_namespace(
            DescribeNamespaceRequest(namespace=client.namespace)
        )
    except RPCError:
        return []  # a caller allowed to prune but not to describe the namespace: nothing to compare
    ttl = described.config.workflow_execution_retention_ttl.ToTimedelta()
    if ttl.total_seconds() and ttl.total_seconds() < policy.longest * 86400:
        return [
            f"namespace {client.namespace} deletes closed runs after {ttl.total_seconds() / 86400:g} days, before"
            f" this policy's {policy.longest:g}: Temporal will delete runs prune never archived"
            " (set the namespace's retention longer: docs/operations.md, Retention)"
        ]
    return []


def _crash_point() -> str | None:
    point = os.environ.get(CRASH_ENV, "").strip() or None
    if point is not None and point not in CRASH_POINTS:
        raise ValueError(f"{CRASH_ENV}: expected one of {', '.join(CRASH_POINTS)}, got {point!r}")
    return point


def _crash_at(point: str, chosen: str | None) -> None:
    """SIGKILL, exactly like `kill -9`: no cleanup, no flush (the crash tests)."""
    if point == chosen:
        os.kill(os.getpid(), signal.SIGKILL)

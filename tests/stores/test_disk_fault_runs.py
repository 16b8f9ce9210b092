"""Runs whose SQLite stores sit on a small disk of the test's own that fills up mid-run, then turns read-only:
the durable run on a worker process with the SQLite ledger and transcript store (its
activities retried by Temporal), and the checkpoint runner (`job run`, then `job resume`). Each fault is met
with one error naming the store's file; nothing is lost or written twice (the rows are counted); the run
finishes once the disk is writable again. The stores alone: tests/stores/test_disk_faults.py."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import re
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentic import Stop
from duragent._activities.transcripts import STORE_UNAVAILABLE
from duragent._ops.devstack.worker_process import WorkerProcess
from duragent._stores.transcripts import EMPTY
from duragent._workflows.agent import AgentWorkflow
from duragent._workflows.inputs import AgentInput, Timeouts
from tests.conftest import dev_settings, eventually
from tests.support.baseline_helpers import Job, one_line_error
from tests.support.baseline_helpers import eventually as eventually_sync
from tests.support.small_disk import SmallDisk, small_disk

# Processes of its own: `mount` (as root), worker processes and `job` command lines.
pytestmark = pytest.mark.system

RECORDS = 6


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[SmallDisk]:
    with small_disk(tmp_path / "disk") as mounted:
        yield mounted


def query(path: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    """Read by a connection of this test's own, closed at once: an open file would keep the disk from being
    remounted read-only."""
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        return db.execute(sql, params).fetchall()


def records(ledger: Path, run_id: str) -> list[str]:
    """The records migrated, in the ledger's order (one row per real effect)."""
    if not ledger.exists():
        return []
    try:
        rows = query(ledger, "SELECT args FROM effects WHERE run_id = ? ORDER BY seq", run_id)
    except sqlite3.OperationalError as exc:  # the file is made a moment before its table (a loaded machine)
        if "no such table" in str(exc):
            return []
        raise
    return [re.sub(r'.*"record": "([^"]+)".*', r"\1", args) for (args,) in rows]


@pytest.mark.parametrize("on_the_disk", ["all stores", "the transcript store"])
async def test_a_durable_run_on_a_disk_that_fills_then_turns_read_only_finishes_with_each_effect_once(
    disk: SmallDisk, dev_env, task_queue, tmp_path: Path, on_the_disk: str
) -> None:
    """ "the transcript store": the ledger is on another disk, so a tool's effect lands and the append of its
    result to the transcript fails after it: the activity's retry runs the tool again and finds the effect by
    its key (duragent/_activities/transcripts.py)."""
    transcripts = disk.path / "transcripts.db"
    ledger = disk.path / "ledger.db" if on_the_disk == "all stores" else tmp_path / "ledger.db"
    settings = dataclasses.replace(dev_settings(dev_env, task_queue, disk.path), ledger_path=ledger)
    failing = f"SQLite store {disk.path}/" if on_the_disk == "all stores" else f"SQLite store {transcripts} "
    worker = WorkerProcess(settings, log=tmp_path / "worker.log").wait_ready()
    workers = [worker]
    try:
        handle = await dev_env.client.start_workflow(
            AgentWorkflow.run,
            AgentInput(
                agent="migration",
                options={"records": RECORDS, "step_delay": 1.0},
                timeouts=Timeouts(heartbeat_seconds=2),
            ),
            id=f"disk-{uuid.uuid4().hex[:8]}",
            task_queue=task_queue,
        )
        await eventually(lambda: len(records(ledger, handle.id)) >= 2, what="two records migrated")

        # 1. The disk fills: the step's activity fails naming the file, and Temporal retries it.
        disk.fill()
        failures: list[tuple[str, str]] = []

        async def failing_on_the_full_disk() -> bool:
            pending = (await handle.describe()).raw_description.pending_activities
            failures[:] = [
                (p.last_failure.application_failure_info.type, p.last_failure.message)
                for p in pending
                if p.attempt >= 2
            ]
            return any(failing in m and "the disk is full" in m for _, m in failures)

        await eventually(failing_on_the_full_disk, what="an activity retried, failing on the full disk")
        if on_the_disk == "the transcript store":  # the activity's own report (a tool's ledger error: ToolRetry)
            assert {kind for kind, _ in failures} == {STORE_UNAVAILABLE}, failures
        migrated_while_full = records(ledger, handle.id)
        await asyncio.sleep(2)
        assert records(ledger, handle.id) == migrated_while_full, "no effect recorded while the disk is full"
        disk.free()
        await eventually(lambda: len(records(ledger, handle.id)) > len(migrated_while_full), what="space returned")

        # 2. The disk turns read-only under a stopped worker: the next one says so in one line, and runs nothing.
        assert worker.stop() == 0
        disk.read_only()
        refused = WorkerProcess(settings, log=tmp_path / "refused.log")
        workers.append(refused)
        assert refused.process.wait(60) == 1
        [line] = [line for line in refused.output if line.strip()]
        assert line.startswith(f"error: SQLite store {disk.path}/") and "a read-only disk" in line, line

        # 3. Writable again: a new worker takes the run over, and it finishes.
        disk.writable()
        workers.append(WorkerProcess(settings, log=tmp_path / "worker-2.log").wait_ready())
        result = await asyncio.wait_for(handle.result(), 180)
    finally:
        for started in workers:
            started.stop()

    assert result.stop is Stop.ANSWERED and result.output == f"Migrated {RECORDS} records."
    # Each record migrated once, in order: the retries of the failed step found nothing, or their effect by key.
    assert records(ledger, handle.id) == [f"rec-{i}" for i in range(1, RECORDS + 1)]
    assert len(query(ledger, "SELECT DISTINCT key FROM effects WHERE run_id = ?", handle.id)) == RECORDS
    # The transcript store holds exactly the run's chain: no node of a failed write, none written twice.
    chain: list[str] = []
    cursor = result.transcript_ref
    while cursor and cursor != EMPTY:
        chain.append(cursor)
        [(cursor,)] = query(transcripts, "SELECT previous FROM nodes WHERE ref = ?", cursor)
    owned = query(transcripts, "SELECT o.ref FROM owners o JOIN nodes n ON n.ref = o.ref WHERE o.run_id = ?", handle.id)
    assert sorted(ref for (ref,) in owned) == sorted(chain)
    # A model reply and a tool result per step, past the system prompt and the task (and the final answer).
    assert len(chain) + len(result.messages) == 2 + 2 * RECORDS + 1
    assert query(transcripts, "SELECT count(*) FROM nodes WHERE message NOT IN (SELECT ref FROM blobs)") == [(0,)]


def test_a_checkpointed_run_on_a_disk_that_fills_then_turns_read_only_resumes_and_finishes_once(
    disk: SmallDisk,
) -> None:
    job = Job(disk.path)
    try:
        worker = job.spawn(
            "run", "--id", "mig", "--scenario", "migration", "--option", "step_delay=1", "--lease-seconds", "2"
        )
        eventually_sync(lambda: len(records(job.ledger_path, "mig")) >= 2, what="two records migrated")

        # 1. The disk fills: the worker stops at its next checkpoint write, naming the file; the run stays active.
        disk.fill()
        _, err = worker.communicate(timeout=60)
        assert worker.returncode == 1, err
        line = one_line_error(err)
        assert re.match(
            rf"error: SQLite store {disk.path}/(baseline|ledger)\.db is unavailable: the disk is full", line
        )
        migrated = records(job.ledger_path, "mig")
        steps_at_fault = query(job.db, "SELECT step, status, attempts FROM steps WHERE run_id = 'mig' ORDER BY step")
        disk.free()
        job.wait_lease_expired("mig")  # the worker could not let go of it: its lease runs out instead
        job.close()  # this test's own connection too: the disk goes read-only only when nothing writes it
        job._store = None

        # 2. Read-only: `job resume` cannot open the store, says which, and changes nothing.
        disk.read_only()
        refused = job.run("resume", "--id", "mig")
        assert refused.returncode == 1
        assert one_line_error(refused.stderr).startswith(f"error: SQLite store {job.db} is unavailable: ")
        assert "a read-only disk" in refused.stderr
        disk.writable()
        assert records(job.ledger_path, "mig") == migrated
        assert query(job.db, "SELECT step, status, attempts FROM steps WHERE run_id = 'mig' ORDER BY step") == (
            steps_at_fault
        )

        # 3. Writable: the step is retried from its checkpoint and the run finishes.
        resumed = job.run("resume", "--id", "mig")
        assert resumed.returncode == 0, resumed.stderr
        assert job.status("mig")["status"] == "completed"
    finally:
        job.close()

    assert records(job.ledger_path, "mig") == [f"rec-{i}" for i in range(1, 6)]  # each once, in order
    tool_steps = query(
        job.db, "SELECT status, idempotency_key FROM steps WHERE run_id = 'mig' AND step_name = 'tool:migrate_record'"
    )
    keys = [key for (key,) in query(job.ledger_path, "SELECT key FROM effects WHERE run_id = 'mig' ORDER BY seq")]
    assert [status for status, _ in tool_steps] == ["completed"] * 5 and [k for _, k in tool_steps] == keys
    # Nothing half-written: every output belongs to a step, every completed step has its output.
    assert query(job.db, "SELECT count(*) FROM outputs WHERE id NOT IN (SELECT output_ref FROM steps)") == [(0,)]
    assert query(job.db, "SELECT count(*) FROM steps WHERE status = 'completed' AND output_ref IS NULL") == [(0,)]

"""The checkpoint store: one SQLite connection per process (WAL, busy timeout), every write in
`BEGIN IMMEDIATE`, and every worker write fenced by the run's lease owner.

Only short transactions hold the connection's lock, never a model or tool call, so the lease renewer
thread always gets through. Other processes read concurrently thanks to WAL. Writes queue rather than
fail: threads of a process take turns on one lock per file, other processes are waited for with backoff
(`duragent._stores.sqlite_file.write_transaction`), so many stores on one file never see "database is locked".
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentic import Usage
from duragent._baseline import schema
from duragent._baseline.errors import LeaseLost, RunExists, UnknownRun
from duragent._config.webhook_signing import terminal_event
from duragent._stores.disk_faults import named_disk_faults
from duragent._stores.sqlite_file import create_private, use_wal, write_transaction, writer_lock


def iso(epoch: float | None = None) -> str:
    return datetime.fromtimestamp(time.time() if epoch is None else epoch, UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class Progress:
    step: int
    total: int | None
    label: str

    def to_dict(self) -> dict[str, Any]:
        return {"step": self.step, "total": self.total, "label": self.label}


@dataclass(frozen=True)
class RunRow:
    run_id: str
    scenario: str
    status: str
    options: str
    created_at: str
    updated_at: str
    finished_at: str | None
    used_steps: int
    input_tokens: int
    output_tokens: int
    cost: float
    progress_step: int
    progress_total: int | None
    progress_label: str
    lease_owner: str | None
    lease_expires: float
    attempts: int
    stop: str | None
    stop_detail: str | None
    output: str | None
    error: str | None
    remaining: str | None
    not_compensable: str | None
    webhook_url: str | None
    execution: str | None  # this row's own id (schema.py), never a reused run id's

    @property
    def consumed(self) -> Usage:
        return Usage(
            steps=self.used_steps, input_tokens=self.input_tokens, output_tokens=self.output_tokens, cost=self.cost
        )

    @property
    def progress(self) -> Progress:
        return Progress(self.progress_step, self.progress_total, self.progress_label)

    @property
    def terminal(self) -> bool:
        return self.status in schema.TERMINAL


@dataclass(frozen=True)
class StepRow:
    run_id: str
    step: int
    step_name: str
    status: str
    input_hash: str
    output_ref: int | None
    idempotency_key: str | None
    call_id: str | None
    attempts: int
    label: str
    started_at: str
    finished_at: str | None


@dataclass(frozen=True)
class StepSpec:
    """A step the runner is about to take: its identity (name, input hash) and how to show it."""

    step: int
    name: str
    input_hash: str
    label: str
    key: str | None = None
    call_id: str | None = None


class Store:
    def __init__(self, path: str | Path, busy_timeout: float = 10.0) -> None:
        self.path = Path(path)
        with named_disk_faults(self.path):  # a full or read-only disk: one error naming this file
            self._open(busy_timeout)

    def _open(self, busy_timeout: float) -> None:
        create_private(self.path)  # 0600 in a 0700 directory: outputs, approvals, webhook URLs
        self._lock = threading.RLock()
        self._db = sqlite3.connect(self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False)
        self._db.row_factory = sqlite3.Row
        self._db.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
        self._db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: a killed process loses nothing committed
        with writer_lock(self.path):
            use_wal(self._db)
        if self._db.execute("PRAGMA user_version").fetchone()[0] != schema.VERSION:
            with self.transaction() as db:
                found = db.execute("PRAGMA user_version").fetchone()[0]  # again, under the write lock
                for statement in schema.DDL.split(";"):
                    if statement.strip():
                        db.execute(statement)
                # A new file has the latest tables from DDL; a file of an earlier version gets what changed.
                for version in range(found + 1, schema.VERSION + 1) if found else ():
                    for statement in schema.MIGRATIONS.get(version, ()):
                        db.execute(statement)
                db.execute(f"PRAGMA user_version={schema.VERSION}")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        with named_disk_faults(self.path), self._lock, write_transaction(self._db, self.path) as db:
            yield db

    @contextmanager
    def owned(self, run_id: str, owner: str) -> Iterator[sqlite3.Connection]:
        """A write transaction that only commits if `owner` still holds the run's lease (fencing)."""
        with self.transaction() as db:
            row = db.execute("SELECT lease_owner FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            if row is None or row[0] != owner:
                holder = row[0] if row else None
                raise LeaseLost(f"run {run_id}: the lease is now held by {holder or 'nobody'}; this worker stops")
            db.execute("UPDATE runs SET updated_at = ? WHERE run_id = ?", (iso(), run_id))
            yield db

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        with named_disk_faults(self.path), self._lock:
            return self._db.execute(sql, params).fetchall()

    # -- runs -------------------------------------------------------------------------------------

    def create_run(
        self,
        run_id: str,
        scenario: str,
        options: str,
        *,
        owner: str | None,
        lease_seconds: float,
        webhook_url: str | None,
        progress: Progress,
    ) -> None:
        """Record a new run, leased to `owner` — or to nobody (`owner=None`): a worker started next takes
        it over as it would resume it (`job serve`'s POST /runs)."""
        now = time.time()
        with self.transaction() as db:
            if db.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone():
                raise RunExists(f"a run with id {run_id!r} already exists; run ids are never reused")
            db.execute(
                "INSERT INTO runs(run_id, scenario, status, options, created_at, updated_at, lease_owner,"
                " lease_expires, attempts, webhook_url, progress_step, progress_total, progress_label, execution)"
                " VALUES (?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    scenario,
                    options,
                    iso(now),
                    iso(now),
                    owner,
                    now + lease_seconds if owner else 0,
                    1 if owner else 0,
                    webhook_url,
                    progress.step,
                    progress.total,
                    progress.label,
                    uuid.uuid4().hex,
                ),
            )

    def run(self, run_id: str) -> RunRow | None:
        rows = self.query("SELECT * FROM runs WHERE run_id = ?", (run_id,))
        return RunRow(**dict(rows[0])) if rows else None

    def require(self, run_id: str) -> RunRow:
        row = self.run(run_id)
        if row is None:
            raise UnknownRun(f"unknown run id {run_id!r} in {self.path}")
        return row

    def set_status(self, run_id: str, owner: str, status: str, progress: Progress | None = None) -> None:
        with self.owned(run_id, owner) as db:
            db.execute("UPDATE runs SET status = ? WHERE run_id = ?", (status, run_id))
            if progress is not None:
                _set_progress(db, run_id, progress)

    def finish(self, run_id: str, owner: str, status: str, *, progress: Progress, **result: Any) -> None:
        """The terminal write: status, result, lease released and the webhook queued, in one transaction
        (so a crash can never leave a finished run without its notification)."""
        with self.owned(run_id, owner) as db:
            close_run(db, run_id, status, progress, **result)

    # -- steps and outputs ------------------------------------------------------------------------

    def steps(self, run_id: str) -> list[StepRow]:
        rows = self.query("SELECT * FROM steps WHERE run_id = ? ORDER BY step", (run_id,))
        return [StepRow(**dict(r)) for r in rows]

    def output(self, ref: int) -> Any:
        rows = self.query("SELECT body FROM outputs WHERE id = ?", (ref,))
        if not rows:
            raise LookupError(f"output {ref} is missing")
        return json.loads(rows[0][0])

    def intend(self, run_id: str, owner: str, spec: StepSpec, progress: Progress) -> int:
        """Write (or re-open) the intent row of a mutating step and count one more attempt; returns it."""
        with self.owned(run_id, owner) as db:
            db.execute(
                "INSERT INTO steps(run_id, step, step_name, status, input_hash, idempotency_key, call_id,"
                " attempts, label, started_at) VALUES (?, ?, ?, 'in_progress', ?, ?, ?, 1, ?, ?)"
                " ON CONFLICT(run_id, step) DO UPDATE SET attempts = attempts + 1",
                (run_id, spec.step, spec.name, spec.input_hash, spec.key, spec.call_id, spec.label, iso()),
            )
            _set_progress(db, run_id, progress)
            row = db.execute("SELECT attempts FROM steps WHERE run_id = ? AND step = ?", (run_id, spec.step))
            return int(row.fetchone()[0])

    def complete(
        self,
        run_id: str,
        owner: str,
        spec: StepSpec,
        body: Any,
        *,
        started_at: str,
        progress: Progress,
        status: str = "completed",
        consumed: Usage | None = None,
        attempts: int = 1,
        handles_cancel: bool = False,
    ) -> None:
        """Store the output and mark the step done: an intent row is updated, a read-only step is inserted
        whole. The consumption moves forward in the same transaction, so it always matches the steps."""
        now = iso()
        with self.owned(run_id, owner) as db:
            ref = db.execute(
                "INSERT INTO outputs(run_id, step, body, created_at) VALUES (?, ?, ?, ?)",
                (run_id, spec.step, json.dumps(body, sort_keys=True), now),
            ).lastrowid
            db.execute(
                "INSERT INTO steps(run_id, step, step_name, status, input_hash, output_ref, idempotency_key,"
                " call_id, attempts, label, started_at, finished_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT(run_id, step) DO UPDATE SET status = excluded.status,"
                " output_ref = excluded.output_ref, finished_at = excluded.finished_at",
                (
                    run_id,
                    spec.step,
                    spec.name,
                    status,
                    spec.input_hash,
                    ref,
                    spec.key,
                    spec.call_id,
                    attempts,
                    spec.label,
                    started_at,
                    now,
                ),
            )
            if consumed is not None:
                db.execute(
                    "UPDATE runs SET used_steps = ?, input_tokens = ?, output_tokens = ?, cost = ? WHERE run_id = ?",
                    (consumed.steps, consumed.input_tokens, consumed.output_tokens, consumed.cost, run_id),
                )
            if handles_cancel:
                db.execute(
                    "UPDATE events SET handled_at = ?, handled_step = ? WHERE run_id = ? AND kind = 'cancel'"
                    " AND handled_at IS NULL",
                    (now, spec.step, run_id),
                )
            _set_progress(db, run_id, progress)

    # -- control events ---------------------------------------------------------------------------

    def request_cancel(self, run_id: str, detail: str) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT INTO events(run_id, kind, detail, created_at) VALUES (?, 'cancel', ?, ?)",
                (run_id, detail, iso()),
            )

    def pending_cancel(self, run_id: str, *ancestors: str) -> sqlite3.Row | None:
        """The cancel request not handled yet of `run_id` — or of a run above it (a delegated run stops when
        any run it answers to is cancelled; that run handles its own request once the child returned)."""
        runs = (run_id, *ancestors)
        placeholders = ", ".join("?" for _ in runs)
        rows = self.query(
            f"SELECT * FROM events WHERE run_id IN ({placeholders}) AND kind = 'cancel' AND handled_at IS NULL"
            " ORDER BY id LIMIT 1",
            runs,
        )
        return rows[0] if rows else None


def close_run(
    db: sqlite3.Connection,
    run_id: str,
    status: str,
    progress: Progress,
    *,
    stop: str | None = None,
    stop_detail: str | None = None,
    output: str | None = None,
    error: str | None = None,
    remaining: list[str] | None = None,
    not_compensable: list[str] | None = None,
) -> None:
    """Inside a write transaction: end the run, release its lease and queue its webhook (the outbox)."""
    now = iso()
    db.execute(
        "UPDATE runs SET status = ?, stop = ?, stop_detail = ?, output = ?, error = ?, remaining = ?,"
        " not_compensable = ?, finished_at = ?, updated_at = ?, lease_owner = NULL, lease_expires = 0"
        " WHERE run_id = ?",
        (
            status,
            stop,
            stop_detail,
            output,
            error,
            json.dumps(remaining) if remaining else None,
            json.dumps(not_compensable) if not_compensable else None,
            now,
            now,
            run_id,
        ),
    )
    _set_progress(db, run_id, progress)
    url = db.execute("SELECT webhook_url FROM runs WHERE run_id = ?", (run_id,)).fetchone()[0]
    if url:
        payload = {
            "event": terminal_event(status, stop),
            "run_id": run_id,
            "status": status,
            "stop": stop,
            "output": output,
            "error": error,
            "finished_at": now,
        }
        db.execute(
            "INSERT INTO webhooks(run_id, url, payload, status, created_at) VALUES (?, ?, ?, 'pending', ?)",
            (run_id, url, json.dumps(payload, sort_keys=True), now),
        )


def _set_progress(db: sqlite3.Connection, run_id: str, progress: Progress) -> None:
    db.execute(
        "UPDATE runs SET progress_step = ?, progress_total = ?, progress_label = ? WHERE run_id = ?",
        (progress.step, progress.total, progress.label, run_id),
    )

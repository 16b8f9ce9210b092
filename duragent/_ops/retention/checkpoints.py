"""Retention: finished runs are archived to gzip JSONL, then deleted — successful ones after 30 days,
failed ones after 90 (kept longer for postmortems). Active runs are never touched.

The archive is written and fsynced before anything is deleted, so a crash in between archives a run
twice (the next prune writes it again), never zero times. `dry_run` only says which runs it would take
(`job prune` without `--yes`). A retention of 0 days takes every finished run (`job prune --all --yes`).
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from duragent._baseline.schema import FAILED, RUN_TABLES, SUCCEEDED
from duragent._baseline.store import Store
from duragent._ops.retention.archive import read_archive, write_archive

__all__ = ["prune", "read_archive"]


def prune(
    store: Store,
    archive_dir: Path,
    now: datetime,
    *,
    completed_days: float = 30,
    failed_days: float = 90,
    dry_run: bool = False,
) -> dict[str, Any]:
    if completed_days < 0 or failed_days < 0:
        raise ValueError("a retention is never negative")
    ok_cut = (now - timedelta(days=completed_days)).isoformat(timespec="milliseconds")
    failed_cut = (now - timedelta(days=failed_days)).isoformat(timespec="milliseconds")
    ok_in, failed_in = _marks(SUCCEEDED), _marks(FAILED)
    rows = store.query(
        f"SELECT run_id FROM runs WHERE (status IN ({ok_in}) AND COALESCE(finished_at, updated_at) < ?)"
        f" OR (status IN ({failed_in}) AND COALESCE(finished_at, updated_at) < ?) ORDER BY created_at",
        (*SUCCEEDED, ok_cut, *FAILED, failed_cut),
    )
    run_ids = [r["run_id"] for r in rows]
    if not run_ids or dry_run:
        return {"archived": run_ids, "archive": None, "dry_run": dry_run}
    archive = archive_dir / f"baseline-runs-{now.strftime('%Y%m%dT%H%M%SZ')}-{uuid.uuid4().hex[:6]}.jsonl.gz"
    write_archive(archive, [_dump(store, run_id) for run_id in run_ids])
    with store.transaction() as db:
        for run_id in run_ids:
            for table in RUN_TABLES:
                db.execute(f"DELETE FROM {table} WHERE run_id = ?", (run_id,))
            db.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))
    return {"archived": run_ids, "archive": str(archive), "dry_run": False}


def _marks(values: tuple[str, ...]) -> str:
    return ", ".join("?" for _ in values)


def _dump(store: Store, run_id: str) -> dict[str, Any]:
    record: dict[str, Any] = {"run": dict(store.query("SELECT * FROM runs WHERE run_id = ?", (run_id,))[0])}
    for table in reversed(RUN_TABLES):
        record[table] = [dict(r) for r in store.query(f"SELECT * FROM {table} WHERE run_id = ?", (run_id,))]
    return record

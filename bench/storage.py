"""Storage per run as steps grow: Temporal history vs the baseline's checkpoint rows.

Both engines run `migration` with N records (N mutating steps, N+1 model calls).

Temporal: the run's history as fetched (`fetch_history()`), serialized as the protobuf `History` — bytes
and event count — and, within it, the bytes of the model activities' inputs (the transcript each model
call is handed). Baseline: every row of the run in the checkpoint store (`runs`, `steps`, `outputs`,
`events`, `approvals`, `approval_audit`, `webhooks`, `webhook_attempts`), sized as SQLite stores values:
text and blobs by their byte length, numbers as 8 bytes, NULL as 0. Neither counts the effects ledger
(shared by both engines: it is the effects, not the durability) nor SQLite's page overhead.

Each row also gives both runs' wall time per step (start to result): a cost per step that grows with the
run's length (work over the whole transcript at every step) shows as a growing figure down the column.
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.served import agent_set
from bench.stack import Stack
from bench.temporal_runs import history_bytes, model_input_bytes, run_ours
from duragent._baseline import jobs
from duragent._baseline.options import RunOptions
from duragent._baseline.schema import RUN_TABLES
from duragent._baseline.store import Store
from examples import migration

AGENT = migration.agent


@dataclass(frozen=True)
class StorageConfig:
    steps: list[int] = field(default_factory=lambda: [5, 20, 50, 100, 200])


def fitting_budget(records: int) -> int | None:
    """A step budget that lets a run of `records` finish (N mutating model calls and the answer), or None when
    the agent's own budget does (the runs then are exactly what `starter.py run migration` would do)."""
    needed = records + 1
    own = AGENT.budget.max_steps
    return None if own is None or own >= needed else needed


def value_bytes(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, int | float):
        return 8
    if isinstance(value, str):
        return len(value.encode())
    return len(value)


def checkpoint_bytes(db: Path, run_id: str) -> dict[str, Any]:
    """Rows and bytes of one run across the checkpoint store's tables."""
    connection = sqlite3.connect(db)
    try:
        tables: dict[str, dict[str, int]] = {}
        for table in ("runs", *RUN_TABLES):
            rows = connection.execute(f"SELECT * FROM {table} WHERE run_id = ?", (run_id,)).fetchall()
            tables[table] = {"rows": len(rows), "bytes": sum(value_bytes(v) for row in rows for v in row)}
    finally:
        connection.close()
    return {
        "rows": sum(t["rows"] for t in tables.values()),
        "bytes": sum(t["bytes"] for t in tables.values()),
        "tables": {name: t for name, t in tables.items() if t["rows"]},
    }


async def measure(stack: Stack, workdir: Path, config: StorageConfig, say: Callable[[str], None]) -> dict[str, Any]:
    db = workdir / "storage-baseline.db"
    store = Store(db)
    agents = agent_set(workdir / "storage-ledger.db")
    rows = []
    try:
        for steps in config.steps:
            options = {"records": steps}
            max_steps = fitting_budget(steps)
            budget = None if max_steps is None else AGENT.budget.model_copy(update={"max_steps": max_steps})
            run = await run_ours(stack.agents, f"st-t-{steps}-{uuid.uuid4().hex[:6]}", AGENT, options, budget=budget)
            run_id = f"st-b-{steps}-{uuid.uuid4().hex[:6]}"
            started = time.perf_counter()
            row = jobs.start(store, agents, run_id, AGENT.label, RunOptions(options=options, max_steps=max_steps))
            baseline_wall = time.perf_counter() - started
            if row.status != "completed" or run.result.status != "completed":
                raise RuntimeError(f"storage runs of {steps} steps did not complete")
            checkpoint = checkpoint_bytes(db, run_id)
            temporal_bytes = history_bytes(run.history)
            rows.append(
                {
                    "steps": steps,
                    "temporal_events": len(run.history.events),
                    "temporal_bytes": temporal_bytes,
                    "temporal_model_input_bytes": model_input_bytes(run.history),
                    "baseline_rows": checkpoint["rows"],
                    "baseline_bytes": checkpoint["bytes"],
                    "baseline_tables": checkpoint["tables"],
                    "temporal_per_baseline": temporal_bytes / checkpoint["bytes"] if checkpoint["bytes"] else None,
                    "temporal_ms_per_step": run.wall / steps * 1000,
                    "baseline_ms_per_step": baseline_wall / steps * 1000,
                }
            )
            say(
                f"  storage {steps} steps: temporal {len(run.history.events)} events {temporal_bytes} B,"
                f" baseline {checkpoint['rows']} rows {checkpoint['bytes']} B"
            )
    finally:
        store.close()
    return {"agent": AGENT.label, "rows": rows}

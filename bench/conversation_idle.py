"""Idle conversations' cost, for `python -m bench conversations --idle N`: N conversations of one message each
(`bench-echo`: one model call a turn), parked on one worker, then left waiting for a next message that never comes.

Two prices, each read at N/2 and at N:
- **the worker's memory** (RSS of its process): an idle conversation stays in the worker's workflow cache
  (`max_cached_workflows`) until newer work pushes it out; past the cache it is evicted and should cost the worker
  nothing, so the memory must level off once N passes the cache;
- **the server's storage**: the growth of the dev server's SQLite file (its main file plus write-ahead log) and the
  rows its tables gained, per conversation — what an idle conversation really costs.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
import uuid
from pathlib import Path
from typing import Any

from bench.conversation_agents import echo
from duragent._client import AgentClient

AT_ONCE = 10  # first messages in flight while parking idle conversations (50 overloaded the embedded server)


async def measure_idle(agents: AgentClient, worker_pid: int, database: Path, count: int, cache: int) -> dict[str, Any]:
    """Park `count` idle conversations; RSS and storage before, at count/2 and at count."""
    marks = sorted({count // 2, count} - {0})
    points: list[dict[str, Any]] = [_point(0, worker_pid, database)]
    batch = f"idle-{uuid.uuid4().hex[:6]}"
    started = time.perf_counter()
    parked = 0
    for mark in marks:
        while parked < mark:
            names = [f"{batch}-{n}" for n in range(parked, min(parked + AT_ONCE, mark))]
            await asyncio.gather(*(agents.conversation(echo, name).send("hello") for name in names))
            parked += len(names)
        points.append(_point(parked, worker_pid, database))
        print(f"idle: {_shown(points[-1], points[0])}", flush=True)
    took = time.perf_counter() - started
    base, last = points[0], points[-1]
    out: dict[str, Any] = {
        "idle_conversations": count,
        "idle_worker_cache": cache,
        "idle_points": points,
        "idle_first_turns_per_s": count / took if took else 0.0,
        "idle_worker_rss_mb_before": base["rss_mb"],
        "idle_worker_rss_mb_after": last["rss_mb"],
        "idle_worker_kb_per_conversation": 1024 * (last["rss_mb"] - base["rss_mb"]) / count if count else 0.0,
        "idle_server_bytes_per_conversation": (last["db_bytes"] - base["db_bytes"]) / count if count else 0.0,
        "idle_server_rows_per_conversation": (last["db_rows"] - base["db_rows"]) / count if count else 0.0,
    }
    if len(points) == 3:
        # The second half's memory per conversation: ~0 once the first half already filled the cache.
        half = points[2]["conversations"] - points[1]["conversations"]
        out["idle_worker_kb_per_conversation_second_half"] = 1024 * (points[2]["rss_mb"] - points[1]["rss_mb"]) / half
    return out


def _point(conversations: int, pid: int, database: Path) -> dict[str, Any]:
    return {"conversations": conversations, "rss_mb": rss_mb(pid), **storage(database)}


def _shown(point: dict[str, Any], base: dict[str, Any]) -> str:
    n = point["conversations"]
    rows = (point["db_rows"] - base["db_rows"]) / n
    size = (point["db_bytes"] - base["db_bytes"]) / n / 1024
    return f"{n} conversations: worker RSS {point['rss_mb']:.0f} MB; server {size:.1f} KB and {rows:.0f} rows each"


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def storage(database: Path) -> dict[str, int]:
    """The server's SQLite file (with its write-ahead log) in bytes, and the rows of all its tables, read through
    a second, read-only connection (SQLite allows it while the server writes)."""
    size = sum(p.stat().st_size for p in (database, Path(f"{database}-wal")) if p.exists())
    rows = 0
    if database.exists():
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30) as db:
            tables = [t for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            rows = sum(db.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables)
        db.close()
    return {"db_bytes": size, "db_rows": rows}

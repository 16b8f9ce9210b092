"""`python -m bench rpcs`: what a run costs the server, counted — RPCs by operation, persistence requests by
operation, history events by type and bytes — for ours (`bench-noop`) and the bare floor, per run.

    python -m bench rpcs --n 100 --n 1000 --steps 2

Counts, not timings: they come from the dev server's own counters (`/metrics`: `service_requests` by service
and operation, `persistence_requests` by operation), read before and after a batch of N runs started at once,
divided by N. A batch is counted once every run is closed and the server's counters stopped moving, so the
timers a batch leaves behind (sticky timeouts) are counted with it. Polls (`Poll*TaskQueue`) depend on
timing and are shown apart; every other count is the same from one run of this command to the next, on a
busy machine or an idle one, which is what makes two commits comparable on a shared machine.

It uses only what the bench's stack offered at 835fe98 too (`bench.stack.temporal_stack`, `AgentClient.start`),
so the same file counts an older tree's engine: `PYTHONPATH=/path/to/old/tree python bench/rpc_counts.py`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import socket
import sys
import tempfile
import time
import urllib.request
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from temporalio.client import Client

from bench import agents as noop
from bench.stack import Stack, temporal_stack

_SAMPLE = re.compile(r"^(\w+)\{(.*)\} ([0-9.eE+-]+)$")
_LABEL = re.compile(r'(\w+)="([^"]*)"')
NO_SEARCH_ATTRIBUTES = "temporal-no-sa"
COUNTERS = ("service_requests", "persistence_requests", "visibility_persistence_requests")
POLLS = ("PollWorkflowTaskQueue", "PollActivityTaskQueue", "PollNexusTaskQueue")
# What the server does on its own clock, whatever the runs do (namespace and cluster refreshes, task queue
# and worker heartbeats, queue reader polls): per run they shrink as N grows. Not watched for settling.
BACKGROUND = (
    *POLLS,
    "RecordWorkerHeartbeat",
    "ListNamespaces",
    "ListClusterMetadata",
    "GetTaskQueue",
    "ListNexusEndpoints",
    "GetTaskQueueUserData",
    "GetTimerTasks",
    "GetTransferTasks",
    "GetVisibilityTasks",
    "GetOutboundTasks",
    "UpdateShard",
    "GetTasks",
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def scrape(port: int) -> Counter[str]:
    """The server's counters of interest, as `metric service operation` -> value (summed over other labels)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    counts: Counter[str] = Counter()
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if not match or match.group(1) not in COUNTERS:
            continue
        labels = dict(_LABEL.findall(match.group(2)))
        key = f"{match.group(1)} {labels.get('service_name', '-')} {labels.get('operation', '-')}"
        counts[key] += float(match.group(3))
    return counts


async def settled(port: int, quiet: float = 3.0, limit: float = 60.0) -> Counter[str]:
    """The counters once no RPC but the background ones moved for `quiet` seconds (at most `limit` seconds)."""
    last = scrape(port)
    still_since = time.monotonic()
    deadline = still_since + limit
    while time.monotonic() < deadline:
        await asyncio.sleep(0.5)
        now = scrape(port)
        moved = any(now[k] != last[k] for k in now if k.startswith("service_requests") and not k.endswith(BACKGROUND))
        last = now
        if moved:
            still_since = time.monotonic()
        elif time.monotonic() - still_since >= quiet:
            break
    return last


async def start_all(stack: Stack, engine: str, ids: list[str], steps: int) -> None:
    gate = asyncio.Semaphore(200)

    async def start(run_id: str) -> None:
        async with gate:
            if engine == "floor":
                await stack.client.start_workflow("BenchFloorWorkflow", steps, id=run_id, task_queue=stack.floor_queue)
            else:
                task = f"Run the no-op steps ({run_id})."
                # Named only when off, so this file still counts an older tree's engine (its `start` may lack it).
                extra = {"search_attributes": False} if engine == NO_SEARCH_ATTRIBUTES else {}
                await stack.agents.start(noop.agent, task, run_id=run_id, options={"records": steps}, **extra)

    await asyncio.gather(*(start(run_id) for run_id in ids))


async def wait_closed(client: Client, ids: list[str], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    for run_id in ids:
        await asyncio.wait_for(client.get_workflow_handle(run_id).result(), max(1.0, deadline - time.monotonic()))


async def history_of(client: Client, run_id: str) -> tuple[Counter[str], int]:
    history = await client.get_workflow_handle(run_id).fetch_history()
    events = Counter(event.WhichOneof("attributes") or "?" for event in history.events)
    return events, sum(event.ByteSize() for event in history.events)


async def batch(stack: Stack, port: int, engine: str, n: int, steps: int, timeout: float) -> dict[str, Any]:
    ids = [f"rpc-{engine}-{n}-{uuid.uuid4().hex[:6]}-{i}" for i in range(n)]
    before = await settled(port)
    await start_all(stack, engine, ids, steps)
    await wait_closed(stack.client, ids, timeout)
    after = await settled(port)
    per_run = {key: (after[key] - before[key]) / n for key in after if after[key] != before[key]}
    # Every run's history: how many events a run records depends on how long it took (progress by time).
    events: Counter[str] = Counter()
    size = 0
    for run_id in ids:
        run_events, run_bytes = await history_of(stack.client, run_id)
        events.update(run_events)
        size += run_bytes
    return {
        "engine": engine,
        "n": n,
        "steps": steps,
        "per_run": dict(sorted(per_run.items())),
        "events": {kind: count / n for kind, count in sorted(events.items())},
        "event_count": sum(events.values()) / n,
        "history_bytes": size / n,
    }


def table(rows: list[dict[str, Any]]) -> str:
    keys = sorted({k for row in rows for k in row["per_run"]})
    head = [f"{row['engine']} N={row['n']}" for row in rows]
    lines = ["| per run | " + " | ".join(head) + " |", "|---|" + "---:|" * len(rows)]
    for key in keys:
        cells = [f"{row['per_run'].get(key, 0):.2f}" for row in rows]
        lines.append(f"| {key} | " + " | ".join(cells) + " |")
    for kind in sorted({k for row in rows for k in row["events"]}):
        cells = [f"{row['events'].get(kind, 0):.2f}" for row in rows]
        lines.append(f"| events: {kind.removesuffix('_event_attributes')} | " + " | ".join(cells) + " |")
    lines.append("| history events | " + " | ".join(f"{row['event_count']:.2f}" for row in rows) + " |")
    lines.append("| history bytes | " + " | ".join(f"{row['history_bytes']:.0f}" for row in rows) + " |")
    return "\n".join(lines)


async def count(ns: list[int], steps: int, engines: list[str], timeout: float, workdir: Path) -> list[dict[str, Any]]:
    port = free_port()
    rows = []
    async with temporal_stack(workdir, server_flags=["--metrics-port", str(port)]) as stack:
        for engine in engines:  # warm: a fresh worker's first runs import what later ones reuse
            warm = [f"rpc-warm-{engine}-{uuid.uuid4().hex[:6]}-{i}" for i in range(5)]
            await start_all(stack, engine, warm, steps)
            await wait_closed(stack.client, warm, timeout)
        for n in ns:
            for engine in engines:
                row = await batch(stack, port, engine, n, steps, timeout)
                print(
                    f"  {engine} N={n}: {row['event_count']:.2f} events, {row['history_bytes']:.0f} bytes", flush=True
                )
                rows.append(row)
    return rows


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--n", type=int, action="append", help="runs started at once (repeatable; default 1, 100)")
    parser.add_argument("--steps", type=int, default=2, help="no-op steps per run (default 2)")
    parser.add_argument(
        "--engine",
        action="append",
        choices=["floor", "temporal", NO_SEARCH_ATTRIBUTES],
        help=f"default: floor and temporal; {NO_SEARCH_ATTRIBUTES}: ours started with search_attributes=False",
    )
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--out", type=Path, help="write the rows as JSON here")


def run(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="bench-rpcs-") as scratch:
        rows = asyncio.run(
            count(args.n or [1, 100], args.steps, args.engine or ["floor", "temporal"], args.timeout, Path(scratch))
        )
    print(table(rows))
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":  # an older tree's bench, which does not list this module
    parser = argparse.ArgumentParser(prog="rpc_counts.py", description=__doc__)
    configure(parser)
    sys.exit(run(parser.parse_args()))
else:
    from bench.cli import Command, register

    register(
        Command("rpcs", "RPCs, persistence requests and history events per run: ours and the floor", configure, run)
    )

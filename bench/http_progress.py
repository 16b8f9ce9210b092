"""`python -m bench http-progress`: what streaming the progress of idle Temporal runs costs.

N runs wait for an approval (the demo `refund` agent: the 24 h wait of a real approval), each with one
open SSE stream from the runs API (`duragent/_ops/http/`, in this process, on loopback). Over `--idle-seconds` it
counts the calls the API made to the Temporal server (history long polls and queries, from the feeds'
own counters) and the events added to those runs' histories (`history_length` before and after). Then a
`migration` run with one stream measures, for each finished action, the delay from the server's
`ActivityTaskCompleted` event time to the SSE event that reports it.

Prints one line, `http-progress temporal: ...`, and writes results/http-progress.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from temporalio.api.enums.v1 import EventType

from bench.cli import Command, register
from duragent._client import AgentClient
from duragent._config.http_clients import tls_context
from duragent._config.settings import Settings
from duragent._connection import connect
from duragent._ops.devstack import devserver
from duragent._ops.devstack.worker_process import WorkerProcess
from duragent._ops.http.app import create_app
from duragent._ops.http.auth import HttpAuth, TokenTable
from duragent._ops.http.temporal import TemporalEngine

TOKEN = "bench-token-0123456789abcdef"
POLL_ALTERNATIVE_MS = 200  # what "re-query every run every 200 ms" would cost, per stream


def configure(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--runs", type=int, default=100, help="idle streamed runs (default 100)")
    sub.add_argument("--idle-seconds", type=float, default=60.0, help="how long to watch them idle (default 60)")
    sub.add_argument("--records", type=int, default=10, help="actions of the latency run: 2 per record + 1")
    sub.add_argument("--out", type=Path, default=Path("results"))


def run(args: argparse.Namespace) -> int:
    outcome = asyncio.run(measure(args))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "http-progress.json").write_text(json.dumps(outcome, indent=2))
    delays = outcome["step_to_sse_ms"]
    print(
        f"http-progress temporal: streams={outcome['streams']} idle_s={outcome['idle_seconds']:g} "
        f"server_calls_per_min={outcome['calls_per_minute']:.1f} (history long polls "
        f"{outcome['long_polls_per_minute']:.1f}, queries {outcome['queries_per_minute']:.1f}) "
        f"history_events_per_hour={outcome['history_events_per_hour']:.1f} "
        f"step_to_sse_ms median={delays['median']:.0f} p95={delays['p95']:.0f} max={delays['max']:.0f} "
        f"(n={delays['n']}) | polling every {POLL_ALTERNATIVE_MS} ms instead: "
        f"{outcome['polling_alternative_calls_per_minute']:.0f} calls/min",
        flush=True,
    )
    return 0


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-http-") as scratch:
        tmp = Path(scratch)
        server = devserver.start_on_free_ports(tmp / "dev.db", log=tmp / "server.log")
        worker: WorkerProcess | None = None
        try:
            await devserver.wait_until_serving(server.address)
            settings = Settings(
                address=server.address, task_queue=f"bench-{uuid.uuid4().hex[:6]}", ledger_path=tmp / "l.db"
            )
            settings = _with_data_dir(settings, tmp)
            worker = WorkerProcess(settings, log=tmp / "worker.log").wait_ready()
            agents = AgentClient(await connect(settings))
            return await _measure(args, agents)
        finally:
            if worker is not None:
                worker.stop()
            server.stop()


async def _measure(args: argparse.Namespace, agents: AgentClient) -> dict[str, Any]:
    import examples

    engine = TemporalEngine(agents, examples.agents)
    auth = HttpAuth(TokenTable.parse(f"{TOKEN}=bench:approver"))
    port = devserver.free_port()
    # One client watching every run for the whole measurement: the bench's load, not a viewer's share
    # (duragent/_ops/http/streams.py caps a token identity at 4 streams of 300 s each).
    app = create_app(engine, auth, streams_per_principal=args.runs + 1, stream_seconds=args.idle_seconds + 600)
    api = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    serving = asyncio.create_task(api.serve())
    while not api.started:
        await asyncio.sleep(0.05)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    limits = httpx.Limits(max_connections=args.runs + 10)
    client = httpx.AsyncClient(
        base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=None, limits=limits, verify=tls_context()
    )
    streams: list[asyncio.Task[None]] = []
    try:
        handles = [await agents.start("refund", run_id=f"idle-{i}-{uuid.uuid4().hex[:4]}") for i in range(args.runs)]
        for handle in handles:
            await handle.wait_for_approval(timeout=120)
        first = [asyncio.Event() for _ in handles]
        received: list[list[tuple[float, dict[str, Any]]]] = [[] for _ in handles]
        streams = [asyncio.create_task(_stream(client, h.run_id, received[i], first[i])) for i, h in enumerate(handles)]
        await asyncio.wait_for(asyncio.gather(*(e.wait() for e in first)), timeout=120)
        before = [await _history_length(h) for h in handles]
        stats = engine.feeds.stats
        polls, queries = stats.history_polls, stats.queries
        await asyncio.sleep(args.idle_seconds)
        minutes = args.idle_seconds / 60
        polls, queries = stats.history_polls - polls, stats.queries - queries
        after = [await _history_length(h) for h in handles]
        added = sum(after) - sum(before)

        migration = await agents.start("migration", options={"records": args.records, "step_delay": 0.3})
        timeline: list[tuple[float, dict[str, Any]]] = []
        done = asyncio.Event()
        await _stream(client, migration.run_id, timeline, done)
        delays = await _delays(migration, timeline)
    finally:
        for task in streams:
            task.cancel()
        await asyncio.gather(*streams, return_exceptions=True)
        await client.aclose()
        api.should_exit = True
        await serving
    return {
        "streams": args.runs,
        "idle_seconds": args.idle_seconds,
        "calls_per_minute": (polls + queries) / minutes,
        "long_polls_per_minute": polls / minutes,
        "queries_per_minute": queries / minutes,
        "history_events_added": added,
        "history_events_per_hour": added / args.idle_seconds * 3600,
        "polling_alternative_calls_per_minute": args.runs * 60_000 / POLL_ALTERNATIVE_MS,
        "step_to_sse_ms": delays,
    }


async def _stream(
    client: httpx.AsyncClient, run_id: str, into: list[tuple[float, dict[str, Any]]], first: asyncio.Event
) -> None:
    async with client.stream("GET", f"/runs/{run_id}/events") as response:
        name = ""
        async for line in response.aiter_lines():
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: ") and name == "progress":
                into.append((time.time(), json.loads(line.removeprefix("data: "))))
                first.set()
            elif line.startswith("data: ") and name == "end":
                return


async def _history_length(handle: Any) -> int:
    return int((await handle.describe()).raw_description.workflow_execution_info.history_length)


async def _delays(handle: Any, timeline: list[tuple[float, dict[str, Any]]]) -> dict[str, float]:
    """For the k-th completed action: the first SSE event with step >= k, minus the completion's event time."""
    completions = [
        event.event_time.ToMilliseconds() / 1000
        for history in await handle.histories()
        for event in history.events
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED
    ]
    delays = []
    for k, completed_at in enumerate(completions, start=1):
        seen = next((at for at, data in timeline if data["step"] >= k), None)
        if seen is not None:
            delays.append(max(seen - completed_at, 0.0) * 1000)
    ordered = sorted(delays) or [float("nan")]
    return {
        "n": len(delays),
        "median": statistics.median(ordered),
        "p95": ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))],
        "max": ordered[-1],
    }


def _with_data_dir(settings: Settings, tmp: Path) -> Settings:
    import dataclasses

    return dataclasses.replace(settings, data_dir=tmp)


register(Command("http-progress", "cost and delay of SSE progress for idle Temporal runs", configure, run))

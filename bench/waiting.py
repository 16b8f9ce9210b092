"""`python -m bench waiting`: what runs waiting for an approval cost, and how fast decisions drain them.

N `refund` runs (the demo agent whose refund needs a person's approval) are started through `AgentClient` on a
fresh embedded dev server (tuned, as we ship it) with one worker of ours (`worker.py`, in its own process),
and left waiting. Measured:

- **the time to start them all** (200 start requests at once) and until all are seen waiting
  (visibility: `AgentPendingApprovals > 0`);
- **the worker's memory** (RSS, `/proc`) as they park, sampled every second with the worker's sticky cache size
  (the SDK's `temporal_sticky_cache_size` gauge): bounded by `max_cached_workflows` (1,000, `build_worker`) —
  a waiting run beyond it is evicted and costs the worker nothing until a decision comes;
- **the server's bytes per waiting run**: the growth of the dev server's SQLite database (its pages, WAL
  included, as SQLite counts them) over the N runs; and the worker's stores' (SQLite files, or the PostgreSQL
  database);
- **the drain**: every run approved, `--waiting-in-flight` decisions at once, half through `AgentClient`
  (`RunHandle.approve`, as a program would) and half through the runs API (`python starter.py serve` in its own
  process, `POST /runs/{id}/approvals/{call}` with the call and hash an approver reviewed) — decisions per second
  (first sent to last answered, with each decision's latency) and runs closed per second (server close times).

Then the same on the PostgreSQL stores (`--waiting-postgres-runs`, a worker with `AGENT_DATABASE_URL`), when a
PostgreSQL is at hand (`--postgres-url`, or Debian's binaries).

It never hangs: a drain in which no run closed for `--waiting-stall` seconds, with a run still open that long
after its decision, stops and names those runs with what their histories show (bench/stalled.py); SIGTERM,
SIGHUP or Ctrl-C stop it at any phase. Either way what was measured until then is reported, and the worker,
server and runs API it started are stopped by pid. `--waiting-cache` sets the worker's `max_cached_workflows`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import sqlite3
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
import psycopg
from temporalio.api.workflowservice.v1 import GetSystemInfoRequest
from temporalio.client import Client

from bench.machine import cpu_seconds
from bench.runs_api import APPROVER, auth_headers, runs_api
from bench.stack import our_worker
from bench.stalled import DrainStalled, until_closed
from bench.stats import summarize
from duragent._client import AgentClient
from duragent._config.http_clients import tls_context
from duragent._config.settings import Settings
from duragent._connection import connect
from duragent._ops.devstack import devserver
from duragent._ops.devstack.server_profile import TUNED
from duragent._ops.devstack.worker_process import WorkerProcess
from duragent._reported import decidable_pending
from duragent._stores.configured import TRANSCRIPTS_FILE

T = TypeVar("T")
AGENT = "refund"
CACHE_GAUGE = re.compile(r"^temporal_sticky_cache_size(?:\{[^}]*\})? (\S+)$", re.M)


@dataclass(frozen=True)
class WaitingConfig:
    runs: int = 10_000  # on the SQLite stores
    postgres_runs: int = 1_000  # on the PostgreSQL stores (0: none)
    in_flight: int = 50  # decisions at once
    start_in_flight: int = 200  # start requests at once
    timeout: float = 3600.0  # for each phase's parking and draining
    cache: int | None = None  # the worker's max_cached_workflows (AGENT_MAX_CACHED_WORKFLOWS); None: its default
    stall: float = 60.0  # a drain stops when no run closed for this long, one open this long after its decision

    @classmethod
    def quick(cls) -> WaitingConfig:
        return cls(runs=20, postgres_runs=10, in_flight=10, start_in_flight=20, timeout=300.0)


# -- what the processes hold -----------------------------------------------------------------------------


def rss_mb(pid: int) -> float | None:
    """Resident memory of a live process, MB (Linux /proc)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def sqlite_bytes(path: Path) -> int:
    """The pages of a live SQLite database as SQLite counts them (its WAL included), read-only."""
    if not path.exists():
        return 0
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)) as db:
        pages = db.execute("PRAGMA page_count").fetchone()[0]
        size = db.execute("PRAGMA page_size").fetchone()[0]
        free = db.execute("PRAGMA freelist_count").fetchone()[0]
    return int((pages - free) * size)


@dataclass
class Stack:
    """A dev server (tuned) and one worker of ours, its stores in SQLite files or in `settings.database_url`."""

    server: devserver.DevServer
    settings: Settings
    worker: WorkerProcess
    client: Client
    agents: AgentClient
    metrics_url: str  # the worker's SDK metrics (Prometheus text)
    server_version: str


@contextlib.asynccontextmanager
async def waiting_stack(workdir: Path, database_url: str | None, cache: int | None = None) -> AsyncIterator[Stack]:
    workdir.mkdir(parents=True, exist_ok=True)
    server = devserver.start(devserver.free_port(), None, workdir / "dev.db", log=workdir / "server.log", profile=TUNED)
    worker: WorkerProcess | None = None
    try:
        await devserver.wait_until_serving(server.address)
        settings = Settings(
            address=server.address,
            namespace="default",
            task_queue=f"bench-wait-{uuid.uuid4().hex[:8]}",
            data_dir=workdir,
            ledger_path=workdir / "ledger.db",
            database_url=database_url,
        )
        metrics = f"127.0.0.1:{devserver.free_port()}"
        env = {"AGENT_METRICS_ADDRESS": metrics}
        if cache is not None:
            env["AGENT_MAX_CACHED_WORKFLOWS"] = str(cache)
        worker = our_worker(settings, workdir / "worker.log", env).wait_ready()
        client = await connect(settings)
        version = (await client.workflow_service.get_system_info(GetSystemInfoRequest())).server_version
        agents = AgentClient(client)  # the settings of the plugin `connect` used
        yield Stack(server, settings, worker, client, agents, f"http://{metrics}/metrics", version)
    finally:
        if worker is not None:
            worker.stop()
        server.stop()


def stores_bytes(stack: Stack) -> int:
    """What the worker's stores hold: its PostgreSQL database, or its SQLite files."""
    if stack.settings.database_url:
        with psycopg.connect(stack.settings.database_url) as db:
            row = db.execute("SELECT pg_database_size(current_database())").fetchone()
        return int(row[0]) if row else 0
    return sqlite_bytes(stack.settings.data_dir / TRANSCRIPTS_FILE) + sqlite_bytes(stack.settings.ledger_path)


async def cache_size(metrics_url: str) -> float | None:
    try:
        async with httpx.AsyncClient(timeout=5, verify=tls_context()) as client:
            text = (await client.get(metrics_url)).text
    except httpx.HTTPError:
        return None
    values = [float(v) for v in CACHE_GAUGE.findall(text)]
    return sum(values) if values else None


@dataclass
class Sample:
    at: float  # seconds since the first start request
    waiting: int
    worker_rss_mb: float | None
    server_rss_mb: float | None
    cached: float | None


class Watch:
    """Samples the worker and the server every `every` seconds while the runs park."""

    def __init__(self, stack: Stack, query: str, every: float = 1.0) -> None:
        self.stack, self.query, self.every = stack, query, every
        self.samples: list[Sample] = []
        self.started = time.perf_counter()

    async def sample(self) -> Sample:
        waiting = (await self.stack.client.count_workflows(self.query)).count
        sample = Sample(
            at=time.perf_counter() - self.started,
            waiting=waiting,
            worker_rss_mb=rss_mb(self.stack.worker.pid),
            server_rss_mb=rss_mb(self.stack.server.process.pid),
            cached=await cache_size(self.stack.metrics_url),
        )
        self.samples.append(sample)
        return sample

    async def until(self, done: Callable[[Sample], bool], timeout: float) -> Sample:
        deadline = time.monotonic() + timeout
        while True:
            sample = await self.sample()
            if done(sample):
                return sample
            if time.monotonic() > deadline:
                raise TimeoutError(f"waiting bench: {sample.waiting} runs waiting after {timeout:g} s")
            await asyncio.sleep(self.every)


# -- one phase: park N runs, then drain them -----------------------------------------------------------------


async def gated(items: list[str], in_flight: int, each: Callable[[str], Awaitable[T]]) -> list[T]:
    """`each(item)` for every item, `in_flight` at once; what each returned (its latency, say)."""
    gate = asyncio.Semaphore(in_flight)

    async def one(item: str) -> T:
        async with gate:
            return await each(item)

    return list(await asyncio.gather(*(one(item) for item in items)))


async def timed(work: Awaitable[object]) -> float:
    started = time.perf_counter()
    await work
    return time.perf_counter() - started


async def close_times(stack: Stack, prefix: str) -> dict[str, Any]:
    """The close times and statuses of the runs whose ids start with `prefix`."""
    closes, statuses = [], {}
    async for execution in stack.client.list_workflows(f'WorkflowId STARTS_WITH "{prefix}"'):
        status = execution.status.name if execution.status else "UNKNOWN"
        statuses[status] = statuses.get(status, 0) + 1
        if execution.close_time is not None:
            closes.append(execution.close_time.timestamp())
    return {"closes": closes, "statuses": statuses}


async def drain(
    stack: Stack,
    agents: AgentClient,
    ids: list[str],
    via: str,
    api: tuple[str, int] | None,
    config: WaitingConfig,
) -> dict[str, Any]:
    api_url, api_pid = api if via == "http" and api else (None, None)
    queued: list[str] = []  # decisions sent as a signal because no worker answered the update in time
    decided: dict[str, float] = {}  # run -> when its decision was answered (time.monotonic)
    if via == "client":

        async def decide(run_id: str) -> float:
            async def approve() -> None:
                outcome = await agents.handle(run_id).approve(by=APPROVER)
                if outcome.via == "signal":  # no worker answered the update in time: queued, applied later
                    queued.append(run_id)
                decided[run_id] = time.monotonic()

            return await timed(approve())

    else:
        # What an approver reviewed (the call and its arguments' hash), fetched before the clock starts: as the
        # runs published it (their histories), `in_flight` at once. Not by their `approvals` query: thousands of
        # queries to runs the worker evicted, its cache full, can wedge it (docs/benchmarks.md, "A worker wedged
        # on one run").
        shown = await gated(ids, config.in_flight, lambda run_id: _reviewed(stack.client, run_id))
        reviewed = dict(zip(ids, shown, strict=True))
        limits = httpx.Limits(max_connections=config.in_flight, max_keepalive_connections=config.in_flight)
        http = httpx.AsyncClient(
            base_url=api_url or "", headers=auth_headers(), limits=limits, timeout=120, verify=tls_context()
        )

        async def decide(run_id: str) -> float:
            call_id, arguments_hash = reviewed[run_id]

            async def post() -> None:
                answer = await http.post(
                    f"/runs/{run_id}/approvals/{call_id}", json={"approve": True, "arguments_hash": arguments_hash}
                )
                if answer.status_code == 202:  # no worker answered in time: queued, applied when one picks it up
                    queued.append(run_id)
                elif answer.status_code != 200:
                    raise RuntimeError(f"POST approval of {run_id}: {answer.status_code} {answer.text[:200]}")
                decided[run_id] = time.monotonic()

            return await timed(post())

    processes = {"worker": stack.worker.pid, "server": stack.server.process.pid, "bench": os.getpid()}
    if api_pid is not None:
        processes["runs API"] = api_pid
    cpu_before = {name: cpu_seconds(pid) for name, pid in processes.items()}
    prefix = ids[0].rsplit("-", 1)[0] + "-"
    started_wall = time.time()
    started = time.perf_counter()
    # The decisions go out while the closes are watched: a run that stops progressing ends the drain
    # (DrainStalled, naming it), whether or not the other decisions are still going out.
    deciding = asyncio.create_task(gated(ids, config.in_flight, decide))
    watching = asyncio.create_task(until_closed(stack.client, prefix, len(ids), decided, config.stall))
    try:
        await asyncio.wait({deciding, watching}, return_when=asyncio.FIRST_COMPLETED)
        if watching.done() and not deciding.done():
            watching.result()  # DrainStalled; else every run closed while the last answers were on their way
        latencies = await deciding  # a decision refused: its error
        decisions_s = time.perf_counter() - started
        await asyncio.wait_for(watching, config.timeout)
    finally:
        for task in (deciding, watching):
            task.cancel()
        await asyncio.gather(deciding, watching, return_exceptions=True)
        if via != "client":
            await http.aclose()
    closed = await close_times(stack, prefix)
    cpu_after = {name: cpu_seconds(pid) for name, pid in processes.items()}
    # Where the drain's time went: each process's CPU from the first decision until every run closed, per run.
    cpu_ms = {
        name: 1000 * (cpu_after[name] - before) / len(ids)  # type: ignore[operator]
        for name, before in cpu_before.items()
        if before is not None and cpu_after[name] is not None
    }
    closes = closed["closes"]
    span = max(closes) - started_wall if closes else None
    return {
        "via": via,
        "runs": len(ids),
        "in_flight": config.in_flight,
        "decisions_s": decisions_s,
        "decisions_per_s": len(ids) / decisions_s if decisions_s else None,
        "decision_latency": summarize(latencies),
        "queued": len(queued),
        "closed": len(closes),
        "statuses": closed["statuses"],
        "closed_per_s": len(closes) / span if span else None,
        "cpu_ms_per_run": cpu_ms,
    }


async def _reviewed(client: Client, run_id: str) -> tuple[str, str]:
    [pending] = await decidable_pending(client, run_id, (await client.get_workflow_handle(run_id).describe()).run_id)
    return pending.call_id, pending.arguments_hash


async def phase(
    stack: Stack,
    name: str,
    n: int,
    config: WaitingConfig,
    workdir: Path,
    say: Callable[[str], None],
    row: dict[str, Any],
) -> None:
    """Park `n` runs, then drain them; `row` fills as each figure is measured, so that what was measured before
    an interruption or a stalled drain is kept."""
    agents = stack.agents
    batch = f"wait-{name}-{uuid.uuid4().hex[:6]}"
    half = n // 2  # the first half is approved through AgentClient, the rest through the runs API
    ids = [f"{batch}-{'client' if i < half else 'http'}-{i}" for i in range(n)]
    watch = Watch(stack, f'WorkflowId STARTS_WITH "{batch}-" AND AgentPendingApprovals > 0')
    row |= {"stores": name, "runs": n, "samples": [], "drains": []}
    idle = await watch.sample()
    row["idle"] = asdict(idle)
    server_before, stores_before = sqlite_bytes(stack.server.db), stores_bytes(stack)

    say(f"  waiting {name}: starting {n} runs")
    processes = {"worker": stack.worker.pid, "server": stack.server.process.pid}
    cpu_before = {name: cpu_seconds(pid) for name, pid in processes.items()}
    started = time.perf_counter()
    watching = asyncio.create_task(watch.until(lambda s: s.waiting >= n, config.timeout))
    try:
        await gated(ids, config.start_in_flight, lambda run_id: timed(agents.start(AGENT, run_id=run_id)))
        start_all = time.perf_counter() - started
        row |= {"start_all_s": start_all, "starts_per_s": n / start_all}
        all_waiting = await watching
    finally:
        watching.cancel()
        row["samples"] = [asdict(s) for s in watch.samples]
        row["worker_rss_mb"] = _rss_at(watch.samples, n)
    park_all = time.perf_counter() - started
    cpu_after = {name: cpu_seconds(pid) for name, pid in processes.items()}
    server_after, stores_after = sqlite_bytes(stack.server.db), stores_bytes(stack)
    row |= {
        "park_all_s": park_all,
        "park_cpu_ms_per_run": {
            name: 1000 * (cpu_after[name] - before) / n  # type: ignore[operator]
            for name, before in cpu_before.items()
            if before is not None and cpu_after[name] is not None
        },
        "all_waiting": asdict(all_waiting),
        "server_bytes_per_run": (server_after - server_before) / n,
        "stores_bytes_per_run": (stores_after - stores_before) / n,
        "server_db_bytes": server_after,
    }
    say(f"  waiting {name}: {n} started in {start_all:.1f} s, all waiting after {park_all:.1f} s")

    api_log = workdir / f"api-{name}.log"
    async with runs_api(stack.settings, api_log) as api:
        for via, part in (("client", ids[:half]), ("http", ids[half:])):
            if not part:
                continue
            try:
                done = await drain(stack, agents, part, via, api, config)
            except DrainStalled as stalled:
                row["drains"].append({"via": via, "runs": len(part), "stalled": stalled.record()})
                raise
            row["drains"].append(done)
            say(
                f"  waiting {name}: drained {len(part)} via {via}: {done['decisions_per_s']:.1f} decisions/s,"
                f" {done['closed_per_s'] or 0:.1f} runs closed/s"
            )
    row["after_drain"] = asdict(await watch.sample())
    row["samples"] = [asdict(s) for s in watch.samples]


def _rss_at(samples: list[Sample], n: int) -> dict[str, float | None]:
    """The worker's RSS when a tenth, half and all of the runs were waiting, and the most it reached."""

    def first(share: float) -> float | None:
        return next((s.worker_rss_mb for s in samples if s.waiting >= share * n), None)

    rss = [s.worker_rss_mb for s in samples if s.worker_rss_mb is not None]
    return {"tenth": first(0.1), "half": first(0.5), "all": first(1.0), "max": max(rss) if rss else None}


async def measure(
    workdir: Path,
    config: WaitingConfig,
    say: Callable[[str], None],
    postgres_url: str | None = None,
    results: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Each phase in turn, into `results` (given: it holds what was measured even when this raises)."""
    from bench.postgres import bench_database

    results = {} if results is None else results
    results |= {"config": asdict(config), "phases": []}
    plans: list[tuple[str, int]] = [("sqlite", config.runs)]
    if config.postgres_runs:
        plans.append(("postgres", config.postgres_runs))
    for name, n in plans:
        with contextlib.ExitStack() as resources:
            url = resources.enter_context(bench_database(postgres_url, say)) if name == "postgres" else None
            if name == "postgres" and url is None:
                continue
            async with waiting_stack(workdir / name, url, config.cache) as stack:
                results["temporal_server"] = stack.server_version
                row: dict[str, Any] = {}
                results["phases"].append(row)
                await phase(stack, name, n, config, workdir, say, row)
    return results

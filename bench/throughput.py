"""Throughput: N runs of `bench-noop` started at once, runs/s until the last one finished.

Temporal (ours and the bare floor, same N, same steps): the N runs are started concurrently (at most 200
start requests in flight; ours through `AgentClient.start`, as a user's code would, the floor's raw);
ours twice when a PostgreSQL is at hand — with the default SQLite stores and with the PostgreSQL stores
(`AGENT_DATABASE_URL`, a worker of its own) — each batch also counting what it wrote to its stores, per step
(bench/store_rows.py; each run's task names the run, so runs share no transcript rows, as real runs do not);
completion is watched through visibility (until all N are seen closed), and the rate is the number
completed over the span from the first run's start to the last run's close (server timestamps). Each
run's latency is its close time minus its start time. The CPU the server and the worker process used
during the batch and until the server is back at its idle rate (up to a minute after 1,000 runs), per run,
says where the time went. With several server profiles, each N runs on each
profile's server in turn, every row naming its profile (the PostgreSQL-stores row: the last profile only).
Each batch runs on a dev server and workers started for it and removed after it (`--same-server`: all on one),
after a few unmeasured runs of the same engine (a fresh worker's first runs import what later ones reuse):
a dev server's CPU per run grows with the closed runs its database holds, so on a shared one the engine that
went later was charged for those before it — more than the gaps the goals measure.

Baseline: the baseline runs one worker process per run (`job run --agents bench.agents ...`; no pool), so
N runs are N `job run` processes started at once, sharing one SQLite store and one ledger; the rate is N
over the wall time until the last process exited. Every "database is locked" in their stderr is counted,
and every run that did not end `completed` is reported. A threads variant (N `jobs.start` in threads of
one process, each with its own connection) isolates SQLite contention from process start-up.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus

from bench import agents as noop
from bench.floor import START_PAD
from bench.machine import cpu_seconds, pin
from bench.served import JOB_AGENTS, agent_set
from bench.stack import Stack, temporal_stack
from bench.stats import judged, ratio_interval, summarize
from bench.store_rows import StoreCount, postgres_count, sqlite_count
from duragent._baseline import jobs
from duragent._baseline.options import RunOptions
from duragent._baseline.store import Store
from duragent._config.settings import ROOT
from duragent._ops.devstack.server_profile import ServerProfile
from duragent._ops.devstack.worker_process import WorkerProcess
from duragent._stores.ledger import EffectsLedger

LOCKED = "database is locked"


@dataclass(frozen=True)
class ThroughputConfig:
    steps: int = 2
    temporal_n: list[int] = field(default_factory=lambda: [10, 100, 1000])
    baseline_processes_n: list[int] = field(default_factory=lambda: [10, 100])
    baseline_threads_n: list[int] = field(default_factory=lambda: [10, 100, 1000])
    timeout: float = 600.0
    postgres: bool = True  # a row with the PostgreSQL stores (when a PostgreSQL is at hand)
    # The floor plus a search attribute upsert per step (`BenchFloorVisibleWorkflow`): the server's price of
    # visibility upserts, measured next to the floor (the price list, docs/benchmarks.md).
    visible_floor: bool = False
    # The floor carrying ours' payload bytes per event (`BenchFloorPayloadWorkflow`): the price of the bytes.
    payload_floor: bool = False
    # The floor with ours' heartbeat timeout on its activities (`BenchFloorHeartbeatWorkflow`): the price of
    # the server's timers firing inside the measured window, where ours' do.
    heartbeat_floor: bool = False
    # The server on one CPU, the worker and this process on another (`--pin-cores`), as when the server and the
    # workers have machines of their own. On 2 shared cores they compete: the server, the bottleneck, got 1.1
    # cores in every batch and the worker 0.7, so a worker that needs more CPU per run slows the server too.
    # Pinned, the server saturates its CPU and the worker uses about 0.6 of its own. (Pairs spread as much either
    # way: 0.81-1.05x in 10 pinned pairs of 1,000 runs, 0.74-1.03x in 8 unpinned ones.)
    pin_cores: bool = False
    # Ours with `search_attributes=False` (AgentInput): the price of the search attributes, next to ours.
    without_search_attributes: bool = False
    reps: int = 3  # Temporal batches per engine and N, interleaved (who goes first alternates), at least
    # More pairs of batches, up to this many, while a goal's 90 % interval still straddles it (bench/stats.py):
    # batches of 1,000 runs here spread ±15-20 % around their mean, wider than the 10 % margin a goal judges.
    max_reps: int = 3
    history_sample: int = 5  # runs per engine whose histories are read for the per-run breakdown by event type
    # Each batch on a dev server (and workers) started for it. On one long-lived server a batch costs more
    # than the one before: 5 batches of 1,000 floor runs in a row took 43, 53, 58, 60, 65 ms of server CPU per
    # run as its database grew, so whichever engine ran later in a repetition was charged for the others.
    fresh_server: bool = True
    settle_timeout: float = 120.0  # how long to wait, at most, for the server to go idle after a batch
    # Runs of the same engine before each measured batch, unmeasured: a worker's first runs import and build
    # what later ones reuse (the floor's sandbox: about 1 s), which a fresh worker would charge to the batch.
    warmup: int = 10


async def temporal_batch(stack: Stack, kind: str, n: int, steps: int, timeout: float) -> dict[str, Any]:
    client = stack.client
    batch = f"tp-{kind}-{n}-{uuid.uuid4().hex[:6]}"
    ids = [f"{batch}-{i}" for i in range(n)]
    gate = asyncio.Semaphore(200)

    async def start(run_id: str) -> None:
        async with gate:
            if kind in FLOORS:
                args = [steps, "p" * START_PAD] if kind == PAYLOAD_FLOOR else [steps]
                await client.start_workflow(FLOORS[kind], args=args, id=run_id, task_queue=stack.floor_queue)
            else:
                agents = stack.postgres.agents if kind == POSTGRES and stack.postgres else stack.agents
                task = f"Run the no-op steps ({run_id})."
                extra = {"search_attributes": False} if kind == NO_SEARCH_ATTRIBUTES else {}
                await agents.start(noop.agent, task, run_id=run_id, options={"records": steps}, **extra)

    stored_before = _stored(stack, kind)
    started = time.perf_counter()
    await asyncio.gather(*(start(run_id) for run_id in ids))
    start_phase = time.perf_counter() - started
    # Visibility is written asynchronously: wait until all N runs are seen closed, not until none is
    # seen running (a run not yet indexed would look finished).
    batch_query = f'WorkflowId STARTS_WITH "{batch}-"'
    deadline = time.monotonic() + timeout
    while (await client.count_workflows(f'{batch_query} AND ExecutionStatus != "Running"')).count < n:
        if time.monotonic() > deadline:
            break
        await asyncio.sleep(0.25)
    wall = time.perf_counter() - started
    starts: list[datetime] = []
    closes: list[datetime] = []
    latencies: list[float] = []
    statuses: dict[str, int] = {}
    async for execution in client.list_workflows(batch_query):
        status = execution.status.name if execution.status else "UNKNOWN"
        statuses[status] = statuses.get(status, 0) + 1
        starts.append(execution.start_time)
        if execution.close_time is not None and execution.status is WorkflowExecutionStatus.COMPLETED:
            closes.append(execution.close_time)
            latencies.append((execution.close_time - execution.start_time).total_seconds())
    span = (max(closes) - min(starts)).total_seconds() if closes and starts else None
    completed = statuses.get("COMPLETED", 0)
    stored = _stored(stack, kind)
    added = stored.minus(stored_before) if stored and stored_before else None
    per_step = completed * steps
    return {
        "engine": kind,
        "n": n,
        "steps": steps,
        "batch": batch,
        "completed": completed,
        "statuses": statuses,
        "span_s": span,
        "wall_s": wall,
        "start_phase_s": start_phase,
        "runs_per_s": completed / span if span else None,
        "latency": summarize(latencies),
        "store_rows_per_step": added.rows / per_step if added and per_step else None,
        "store_writes_per_step": added.writes / per_step if added and added.writes is not None and per_step else None,
    }


POSTGRES = "temporal-postgres"  # our runs, on the worker whose stores are in PostgreSQL
VISIBLE_FLOOR = "floor+sa"
PAYLOAD_FLOOR = "floor+payloads"  # the floor carrying ours' payload bytes (bench/floor.py)
HEARTBEAT_FLOOR = "floor+heartbeat"  # the floor with ours' activity heartbeat timeout (bench/floor.py)
NO_SEARCH_ATTRIBUTES = "temporal-no-sa"  # ours, started with search_attributes=False, on our worker
FLOORS = {  # served by the floor's worker
    "floor": "BenchFloorWorkflow",
    VISIBLE_FLOOR: "BenchFloorVisibleWorkflow",
    PAYLOAD_FLOOR: "BenchFloorPayloadWorkflow",
    HEARTBEAT_FLOOR: "BenchFloorHeartbeatWorkflow",
}


def _stored(stack: Stack, kind: str) -> StoreCount | None:
    """What the stores of `kind`'s worker hold now (the floor has none)."""
    if kind == POSTGRES and stack.postgres:
        return postgres_count(stack.postgres.url)
    if kind in ("temporal", NO_SEARCH_ATTRIBUTES):
        return sqlite_count(stack.settings.data_dir, stack.settings.ledger_path)
    return None


def worker_of(stack: Stack, kind: str) -> WorkerProcess:
    ours = {
        "temporal": stack.worker,
        NO_SEARCH_ATTRIBUTES: stack.worker,
        POSTGRES: stack.postgres and stack.postgres.worker,
    }
    worker = ours.get(kind, stack.floor)
    assert worker is not None, kind
    return worker


def baseline_processes(workdir: Path, n: int, steps: int, timeout: float) -> dict[str, Any]:
    directory = workdir / f"tp-proc-{n}-{uuid.uuid4().hex[:6]}"
    directory.mkdir(parents=True)
    db, ledger = directory / "baseline.db", directory / "ledger.db"
    Store(db).close()  # the schema exists before the herd arrives, as it would in production
    EffectsLedger(ledger)
    command = [
        sys.executable,
        "-m",
        "duragent._ops.cli.job",
        "run",
        "--agent",
        noop.NAME,
        "--option",
        f"records={steps}",
    ]
    command += [*JOB_AGENTS, "--db", str(db), "--ledger", str(ledger)]
    started = time.perf_counter()
    processes = []
    for i in range(n):
        processes.append(
            (
                time.perf_counter(),
                subprocess.Popen(
                    [*command, "--id", f"tp-{i}"],
                    cwd=ROOT,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    text=True,
                ),
            )
        )
    latencies: list[float] = []
    locked = 0
    failed = 0
    errors: list[str] = []
    try:
        for spawned, process in processes:
            try:
                _, err = process.communicate(timeout=max(1.0, timeout - (time.perf_counter() - started)))
            except subprocess.TimeoutExpired:
                process.kill()
                _, err = process.communicate()
            latencies.append(time.perf_counter() - spawned)
            locked += err.count(LOCKED)
            if process.returncode != 0:
                failed += 1
                errors.append(err.strip().splitlines()[-1] if err.strip() else f"exit {process.returncode}")
    finally:  # interrupted (Ctrl-C, SIGTERM): none of the herd outlives the measurement
        for _, process in processes:
            process.kill()
            process.wait()
    wall = time.perf_counter() - started
    return _baseline_result("baseline-processes", n, steps, db, wall, latencies, locked, failed, errors)


def baseline_threads(workdir: Path, n: int, steps: int) -> dict[str, Any]:
    directory = workdir / f"tp-thr-{n}-{uuid.uuid4().hex[:6]}"
    directory.mkdir(parents=True)
    db = directory / "baseline.db"
    Store(db).close()
    agents = agent_set(directory / "ledger.db")
    options = RunOptions(options={"records": steps})
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    go = threading.Event()

    def one(i: int) -> None:
        go.wait()
        began = time.perf_counter()
        store = None
        try:
            store = Store(db)
            jobs.start(store, agents, f"tp-{i}", noop.NAME, options)
        except Exception as exc:
            with lock:
                errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            if store is not None:
                store.close()
            with lock:
                latencies.append(time.perf_counter() - began)

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(n)]
    for thread in threads:
        thread.start()
    started = time.perf_counter()
    go.set()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    locked = sum(e.count(LOCKED) for e in errors)
    return _baseline_result("baseline-threads", n, steps, db, wall, latencies, locked, len(errors), errors)


def _baseline_result(
    engine: str,
    n: int,
    steps: int,
    db: Path,
    wall: float,
    latencies: list[float],
    locked: int,
    failed: int,
    errors: list[str],
) -> dict[str, Any]:
    store = Store(db)
    try:
        rows = store.query("SELECT status, COUNT(*) AS c FROM runs GROUP BY status")
    finally:
        store.close()
    statuses = {r["status"]: r["c"] for r in rows}
    completed = statuses.get("completed", 0)
    return {
        "engine": engine,
        "n": n,
        "steps": steps,
        "completed": completed,
        "statuses": statuses,
        "wall_s": wall,
        "runs_per_s": completed / wall if wall else None,
        "latency": summarize(latencies),
        "lock_errors": locked,
        "failed": failed,
        "errors": sorted(set(errors))[:5],
    }


@dataclass(frozen=True)
class Target:
    """Where one server profile's batches run. A fresh stack per batch copies only the profile and the
    PostgreSQL URL; `stack`, the long-lived one, is for `--same-server` (and absent when nothing else of the
    bench needs one, so no idle server and workers run beside the batches)."""

    profile: ServerProfile
    database_url: str | None = None
    stack: Stack | None = None


async def measure(
    targets: dict[str, Target], workdir: Path, config: ThroughputConfig, say: Callable[[str], None]
) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    server_version: str | None = None
    for n in config.temporal_n:
        rep = 0
        while rep < config.reps or (rep < config.max_reps and undecided(rows, n, list(targets)[-1])):
            if rep >= config.reps:
                say(f"  throughput n={n}: a goal's interval still straddles it after {rep} pairs; one more pair")
            for name, target in targets.items():
                kinds = [
                    "floor",
                    *([VISIBLE_FLOOR] if config.visible_floor else []),
                    *([PAYLOAD_FLOOR] if config.payload_floor else []),
                    *([HEARTBEAT_FLOOR] if config.heartbeat_floor else []),
                    "temporal",
                ]
                if config.without_search_attributes:
                    kinds.append(NO_SEARCH_ATTRIBUTES)
                if config.postgres and target.database_url:
                    kinds.append(POSTGRES)
                if rep % 2:
                    kinds.reverse()  # interleaved: a drift in the machine's load does not favour one engine
                for kind in kinds:
                    if config.fresh_server:
                        batch_dir = workdir / "batches" / f"{name}-{n}-{rep}-{kind}"
                        async with _fresh_stack(target, batch_dir, kind) as own:
                            row = await _reported_batch(own, kind, n, rep, config, say)
                            server_version = own.server_version
                    else:
                        if target.stack is None:
                            raise ValueError("throughput on one server (--same-server) needs its long-lived stack")
                        row = await _reported_batch(target.stack, kind, n, rep, config, say)
                        server_version = target.stack.server_version
                    rows.append(row)
            rep += 1
    for n in config.baseline_threads_n:
        row = await asyncio.to_thread(baseline_threads, workdir, n, config.steps)
        say(f"  throughput baseline threads n={n}: {_rate(row)} runs/s, {row['lock_errors']} lock errors")
        rows.append(row)
    for n in config.baseline_processes_n:
        row = await asyncio.to_thread(baseline_processes, workdir, n, config.steps, config.timeout)
        say(f"  throughput baseline processes n={n}: {_rate(row)} runs/s, {row['lock_errors']} lock errors")
        rows.append(row)
    return {
        "steps": config.steps,
        "profiles": list(targets),
        "reps": config.reps,
        "rows": rows,
        "temporal_server": server_version,
    }


# The goals a throughput run is judged by, as (figure, goal, whether ours must be at least the goal): each is a
# ratio of ours to the floor's within a pair of batches (bench/report.py checks the same goals).
JUDGED = (("runs_per_s", 0.9, True), ("server_cpu_per_run_ms", 1.10, False))


def paired_ratios(
    rows: list[dict[str, Any]], n: int, key: str, profile: str | None = None, engine: str = "temporal"
) -> list[float]:
    """Ours / the floor's `key`, one ratio per pair of batches at `n` on `profile` (any, if None)."""
    pairs: dict[tuple[Any, Any], dict[str, dict[str, Any]]] = {}
    for row in rows:
        if row.get("n") == n and row.get("engine") in (engine, "floor") and profile in (None, row.get("profile")):
            pairs.setdefault((row.get("profile"), row.get("rep")), {})[row["engine"]] = row
    return [
        pair[engine][key] / pair["floor"][key]
        for pair in pairs.values()
        if engine in pair and "floor" in pair and pair[engine].get(key) and pair["floor"].get(key)
    ]


def undecided(rows: list[dict[str, Any]], n: int, profile: str | None = None) -> bool:
    """Whether some goal at `n` is neither met nor missed by the 90 % interval of the pairs so far."""
    return any(
        judged(ratio_interval(paired_ratios(rows, n, key, profile)), goal, at_least=at_least) is None
        for key, goal, at_least in JUDGED
    )


@asynccontextmanager
async def _fresh_stack(target: Target, workdir: Path, kind: str) -> AsyncIterator[Stack]:
    """A stack of `target`'s profile (and its PostgreSQL, for that row) for one batch, deleted after it."""
    try:
        url = target.database_url if kind == POSTGRES else None
        async with temporal_stack(workdir, floor=kind in FLOORS, profile=target.profile, database_url=url) as own:
            yield own
    finally:
        shutil.rmtree(workdir, ignore_errors=True)  # a server database of 30 MB per 1,000 runs


async def _reported_batch(
    stack: Stack, kind: str, n: int, rep: int, config: ThroughputConfig, say: Callable[[str], None]
) -> dict[str, Any]:
    with _pinned(stack, kind) if config.pin_cores else nullcontext():
        if config.warmup:
            await temporal_batch(stack, kind, config.warmup, config.steps, config.timeout)
        row = await _measured_batch(stack, kind, n, config)
    row["pinned"] = config.pin_cores
    row["profile"], row["rep"], row["server_pid"] = stack.profile.name, rep, stack.server.process.pid
    if rep == 0 and config.history_sample:
        row["history"] = await history_by_type(stack.client, row["batch"], min(n, config.history_sample))
    stores = (
        f"; per step: {_ms(row['store_rows_per_step'])} store rows, {_ms(row['store_writes_per_step'])} store writes"
        if kind not in FLOORS
        else ""
    )
    say(
        f"  throughput {kind} ({stack.profile.name}) n={n} rep {rep + 1}/{config.reps}: {_rate(row)} runs/s"
        f" ({row['completed']}/{n} completed; CPU per run: server {_ms(row['server_cpu_per_run_ms'])}"
        f" ms, worker {_ms(row['worker_cpu_per_run_ms'])} ms, client {_ms(row['client_cpu_per_run_ms'])} ms{stores})"
    )
    return row


SERVER_CPU, WORKER_CPU = 0, 1  # `--pin-cores`: the server's CPU; the worker's and this process's


@contextmanager
def _pinned(stack: Stack, kind: str) -> Iterator[None]:
    """The server on CPU 0, the worker of `kind` and this process on CPU 1 while inside; this process's mask
    restored after (the stack's processes end with their batch; this process runs the next one and the report)."""
    available = os.sched_getaffinity(0)
    if not {SERVER_CPU, WORKER_CPU} <= available:
        raise ValueError(
            f"--pin-cores needs CPUs {SERVER_CPU} and {WORKER_CPU}; this process may use {sorted(available)}"
        )
    pin(stack.server.process.pid, {SERVER_CPU})
    pin(worker_of(stack, kind).pid, {WORKER_CPU})
    before = pin(os.getpid(), {WORKER_CPU})
    try:
        yield
    finally:
        pin(os.getpid(), before)


async def _measured_batch(stack: Stack, kind: str, n: int, config: ThroughputConfig) -> dict[str, Any]:
    """One batch, with the CPU seconds the server, the worker process and this process (the client: starts
    and visibility polls) used per run: during it, and until the server is back to its idle rate after it (it
    works for up to a minute after 1,000 runs have closed; that work is this batch's, not the next one's)."""
    server = stack.server.process.pid
    idle = await _cpu_rate(server, WINDOW)
    pids = {"server": server, "worker": worker_of(stack, kind).pid, "client": os.getpid()}
    before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    row = await temporal_batch(stack, kind, n, config.steps, config.timeout)
    # Each process's share of the machine while the batch ran (CPU seconds per second, before settling): on a
    # machine the batch saturates it stays the same whatever the engine, and the CPU per run is then that share
    # over the rate — a process that is not the bottleneck shows the bottleneck's cost per run, not its own.
    ended = {name: cpu_seconds(pid) for name, pid in pids.items()}
    for name in ("server", "worker"):
        used, earlier = ended[name], before[name]
        row[f"{name}_cores"] = (used - earlier) / row["wall_s"] if used is not None and earlier is not None else None
    settling = time.monotonic()
    while time.monotonic() - settling < config.settle_timeout:
        rate = await _cpu_rate(server, WINDOW)
        if rate is None or idle is None or rate <= max(1.5 * idle, idle + 0.010):
            break
    row["server_settle_s"] = time.monotonic() - settling
    for name, pid in pids.items():
        after, earlier = cpu_seconds(pid), before[name]
        row[f"{name}_cpu_per_run_ms"] = (
            (after - earlier) / n * 1000 if after is not None and earlier is not None else None
        )
    return row


WINDOW = 2.0  # seconds over which the server's CPU rate is sampled, idle or settling


async def _cpu_rate(pid: int, seconds: float) -> float | None:
    """CPU seconds per second `pid` used over the next `seconds`."""
    before = cpu_seconds(pid)
    await asyncio.sleep(seconds)
    after = cpu_seconds(pid)
    return (after - before) / seconds if after is not None and before is not None else None


async def history_by_type(client: Client, batch: str, sample: int) -> dict[str, dict[str, float]]:
    """What the server stored per run, by event type: events and bytes (each event serialized, payloads
    included), averaged over the batch's first `sample` runs. The server's work per run follows these."""
    totals: dict[str, dict[str, float]] = {}
    for i in range(sample):
        history = await client.get_workflow_handle(f"{batch}-{i}").fetch_history()
        for event in history.events:
            name = EventType.Name(event.event_type).removeprefix("EVENT_TYPE_").lower()
            entry = totals.setdefault(name, {"events": 0.0, "bytes": 0.0})
            entry["events"] += 1 / sample
            entry["bytes"] += event.ByteSize() / sample
    return dict(sorted(totals.items(), key=lambda item: -item[1]["bytes"]))


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


def _rate(row: dict[str, Any]) -> str:
    return f"{row['runs_per_s']:.1f}" if row["runs_per_s"] else "n/a"

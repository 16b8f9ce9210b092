"""`bench knobs`: what each knob of the tuned server profile buys and costs, one server per variant.

    python -m bench knobs                       # --n 100 --reps 3 --load-reps 3 --idle-seconds 60

Variants: the dev server as it comes (`default`), as we ship it (`tuned`), `tuned` without each of its knobs
in turn, and `tuned` plus each candidate we measured and left out (`CANDIDATES`). All servers run at once,
each with the bare floor's worker (and ours, idle); every measurement is taken on each server in turn
(in an order drawn afresh each rep: `bench.turns`), so load from elsewhere hits all alike:

- idle: the server's CPU (% of one core) and its database requests per second (the server's own
  `persistence_requests` metric), with the worker polling and nothing to do;
- latency: the floor's step median and its workflow tasks' dispatch (median and p90: a rate-limited queue
  shows in the p90 — its limiter lets an idle server's saved-up tokens through first, so runs are long,
  `--steps` 50), and how late a 100 ms durable timer fires (median);
- load: N concurrent 2-step floor runs, `--load-reps` batches per server, turns drawn the same way — medians of
  runs/s, and per run the server's CPU ms and database requests.

Writes results/knobs.json and results/knobs.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from temporalio.api.workflowservice.v1 import GetSystemInfoRequest
from temporalio.client import Client

from bench import machine
from bench.cli import Command, register
from bench.machine import cpu_seconds
from bench.stack import Stack, temporal_stack
from bench.stats import percentile, summarize
from bench.temporal_runs import run_floor
from bench.throughput import temporal_batch
from bench.turns import turns
from duragent._ops.devstack import devserver
from duragent._ops.devstack.server_profile import DEFAULT, TUNED, ServerProfile

# Knobs we measured and did not ship: docs/operations.md says what each showed.
CANDIDATES: dict[str, dict[str, Any]] = {
    "history.timerProcessorMaxPollRPS=1000": {"history.timerProcessorMaxPollRPS": 1000},
    "history.visibilityProcessorMaxPollRPS=1000": {"history.visibilityProcessorMaxPollRPS": 1000},
    "matching: 1 task queue partition": {
        "matching.numTaskqueueReadPartitions": 1,
        "matching.numTaskqueueWritePartitions": 1,
    },
}
TIMER_MILLIS = 100


def variants() -> list[ServerProfile]:
    out = [DEFAULT, TUNED]
    if TUNED.pragmas:
        out.append(replace(TUNED, name="tuned without the SQLite pragmas", pragmas=()))
    for key in TUNED.dynamic_config:
        without = {k: v for k, v in TUNED.dynamic_config.items() if k != key}
        if key == "system.enableActivityEagerExecution":
            without[key] = False  # the server's default may be on: "without" means off
        out.append(replace(TUNED, name=f"tuned without {key}", dynamic_config=without))
    for key in TUNED.embedded_dynamic_config:  # the dev server's own behaviour without it: the key left out
        without = {k: v for k, v in TUNED.embedded_dynamic_config.items() if k != key}
        out.append(replace(TUNED, name=f"tuned without {key}", embedded_dynamic_config=without))
    for name, extra in CANDIDATES.items():
        out.append(replace(TUNED, name=f"tuned + {name}", dynamic_config=TUNED.dynamic_config | extra))
    return out


@dataclass
class Server:
    profile: ServerProfile
    stack: Stack
    metrics_port: int

    @property
    def client(self) -> Client:
        return self.stack.client

    @property
    def queue(self) -> str:
        return self.stack.floor_queue

    def cpu(self) -> float:
        return cpu_seconds(self.stack.server.process.pid) or 0.0

    def database_requests(self) -> float:
        """The server's `persistence_requests` counter, summed over operations."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=10) as response:
            text = response.read().decode()
        return sum(
            float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith("persistence_requests{")
        )


@asynccontextmanager
async def server(workdir: Path, profile: ServerProfile, index: int) -> AsyncIterator[Server]:
    """A bench stack (the server, our worker idle, the floor's worker) with the server's metrics exposed."""
    metrics_port = devserver.free_port()
    async with temporal_stack(
        workdir / f"variant-{index}", profile=profile, server_flags=["--metrics-port", str(metrics_port)]
    ) as stack:
        yield Server(profile, stack, metrics_port)


async def measure(
    servers: list[Server],
    n: int,
    reps: int,
    load_reps: int,
    idle_seconds: float,
    say: Callable[[str], None],
    steps_per_run: int = 50,
) -> list[dict[str, Any]]:
    rows = {s.profile.name: {"variant": s.profile.name, "flags": s.profile.dev_server_flags()} for s in servers}
    for s in servers:  # warm: the first run on a server pays for caches and task queue creation
        await run_floor(s.client, s.queue, f"warm-{uuid.uuid4().hex[:8]}", 3)
    await asyncio.sleep(5)
    before = {s.profile.name: (s.cpu(), s.database_requests()) for s in servers}
    await asyncio.sleep(idle_seconds)
    for s in servers:
        cpu, requests = before[s.profile.name]
        rows[s.profile.name]["idle_cpu_percent"] = 100 * (s.cpu() - cpu) / idle_seconds
        rows[s.profile.name]["idle_db_requests_per_s"] = (s.database_requests() - requests) / idle_seconds
    say(f"  idle: {idle_seconds:g} s measured")
    steps: dict[str, list[float]] = {s.profile.name: [] for s in servers}
    dispatch: dict[str, list[float]] = {s.profile.name: [] for s in servers}
    late: dict[str, list[float]] = {s.profile.name: [] for s in servers}
    for rep, order in turns(servers, reps):
        for s in order:
            run = await run_floor(s.client, s.queue, f"f-{uuid.uuid4().hex[:8]}", steps_per_run)
            steps[s.profile.name] += run.step_seconds
            dispatch[s.profile.name] += run.phases["workflow task dispatch"]
            late[s.profile.name] += await s.client.execute_workflow(
                "BenchTimerWorkflow", args=[5, TIMER_MILLIS], id=f"t-{uuid.uuid4().hex[:8]}", task_queue=s.queue
            )
        say(f"  latency rep {rep + 1}/{reps}")
    for s in servers:
        rows[s.profile.name]["floor_step"] = summarize(steps[s.profile.name])
        rows[s.profile.name]["dispatch"] = summarize(dispatch[s.profile.name])
        rows[s.profile.name]["dispatch_p90"] = percentile(dispatch[s.profile.name], 90)
        rows[s.profile.name]["timer_late"] = summarize(late[s.profile.name])
    if n:
        load: dict[str, dict[str, list[float]]] = {s.profile.name: {} for s in servers}
        for _, order in turns(servers, load_reps):
            for s in order:
                await asyncio.sleep(2)  # the previous server's batch settles
                cpu, requests = s.cpu(), s.database_requests()
                batch = await temporal_batch(s.stack, "floor", n, 2, 600)
                await asyncio.sleep(2)  # metrics of the batch's tail are flushed
                measured = {
                    "runs_per_s": batch["runs_per_s"] or 0.0,
                    "server_cpu_ms_per_run": 1000 * (s.cpu() - cpu) / n,
                    "db_requests_per_run": (s.database_requests() - requests) / n,
                    "completed": batch["completed"],
                }
                for key, value in measured.items():
                    load[s.profile.name].setdefault(key, []).append(value)
                say(f"  load {rep + 1}/{load_reps} {s.profile.name}: {measured['runs_per_s']:.1f} runs/s")
        for name, values in load.items():
            rows[name]["n"] = n
            rows[name]["load_reps"] = load_reps
            for key, series in values.items():
                rows[name][key] = summarize(series)["median"] if key != "completed" else int(min(series))
    return list(rows.values())


async def run_all(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    profiles = variants()
    async with AsyncExitStack() as exits:
        servers = [await exits.enter_async_context(server(workdir, p, i)) for i, p in enumerate(profiles)]
        info = await servers[0].client.workflow_service.get_system_info(GetSystemInfoRequest())
        rows = await measure(
            servers,
            args.n,
            args.reps,
            args.load_reps,
            args.idle_seconds,
            lambda text: print(text, flush=True),
            args.steps,
        )
    return {"server_version": info.server_version, "rows": rows}


def markdown(results: dict[str, Any]) -> str:
    def num(value: float | None, digits: int = 1) -> str:
        return "n/a" if value is None else f"{value:,.{digits}f}"

    lines = [
        "### Server knobs, one server per variant (`python -m bench knobs`; load: medians of"
        f" {results['rows'][0].get('load_reps', 1)} batches)",
        "",
        "| variant | idle CPU (% of a core) | idle DB requests/s | floor step median (ms) |"
        " workflow task dispatch, median / p90 (ms) |"
        f" {TIMER_MILLIS} ms timer fires late by, median (ms) | N | runs/s | server CPU/run (ms) | DB requests/run |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in results["rows"]:
        step, late = row["floor_step"]["median"], row["timer_late"]["median"]
        dispatch, p90 = (row.get("dispatch") or {}).get("median"), row.get("dispatch_p90")
        lines.append(
            f"| {row['variant']} | {num(row['idle_cpu_percent'], 2)} | {num(row['idle_db_requests_per_s'])} |"
            f" {num(step and step * 1000)} | {num(dispatch and dispatch * 1000)} / {num(p90 and p90 * 1000)} |"
            f" {num(late and late * 1000)} | {row.get('n', '—')} |"
            f" {num(row.get('runs_per_s'))} | {num(row.get('server_cpu_ms_per_run'))} |"
            f" {num(row.get('db_requests_per_run'))} |"
        )
    return "\n".join(lines) + "\n"


def cmd(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    workdir = Path(tempfile.mkdtemp(prefix="bench-knobs-"))
    results: dict[str, Any] = {"command": "python -m bench " + " ".join(sys.argv[1:]), "machine": machine.facts()}
    try:
        results |= asyncio.run(run_all(args, workdir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    results["machine"]["load_average_end"] = machine.load()
    results["seconds"] = time.perf_counter() - started
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "knobs.json").write_text(json.dumps(results, indent=2, default=str))
    text = markdown(results)
    (args.out / "knobs.md").write_text(text)
    print()
    print(
        f"Load average at start {results['machine']['load_average']}, at end {results['machine']['load_average_end']}."
    )
    print(text, flush=True)
    print(f"wrote {args.out / 'knobs.json'}, {args.out / 'knobs.md'}", flush=True)
    return 0


def configure(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--n", type=int, default=100, help="concurrent runs in the load measurement (0: skip it)")
    sub.add_argument("--reps", type=int, default=3, help="latency rounds (each: one floor run, 5 timers)")
    sub.add_argument("--steps", type=int, default=50, help="steps of each floor run in the latency rounds")
    sub.add_argument("--load-reps", type=int, default=3, help="load batches per server (medians shown)")
    sub.add_argument("--idle-seconds", type=float, default=60.0)
    sub.add_argument("--out", type=Path, default=Path("results"))


register(Command("knobs", "each server knob's effect and cost: idle CPU and DB load, latency, load", configure, cmd))

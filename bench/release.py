"""`python -m bench release`: what a starting worker's release of the stepping runs costs
(`duragent/_sticky.py`). N `migration` runs are left stepping on one worker (each inside a long tool call, so
their status stays `running`), then `release_sticky_runs` is called as a starting worker calls it, `--reps`
times: how long it takes, and the CPU the server spends on it, per run released.

Prints one line per repetition, `release: runs=N released=R seconds=S server_cpu_ms_per_run=C`.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from pathlib import Path

from bench.cli import Command, register
from bench.machine import cpu_seconds, load
from bench.stack import our_worker
from duragent._client import AgentClient
from duragent._config.settings import Settings
from duragent._connection import connect
from duragent._ops.devstack import devserver
from duragent._ops.devstack.server_profile import TUNED
from duragent._sticky import release_sticky_runs, stepping_runs

STEP_SECONDS = 600  # each run's tool call: longer than the measurement, so every run stays stepping


async def measure(runs: int, reps: int) -> int:
    with tempfile.TemporaryDirectory(prefix="bench-release-") as scratch:
        work = Path(scratch)
        server = devserver.start_on_free_ports(work / "dev.db", log=work / "server.log", profile=TUNED)
        worker = None
        try:
            await devserver.wait_until_serving(server.address)
            queue = f"bench-release-{uuid.uuid4().hex[:6]}"
            settings = Settings(address=server.address, task_queue=queue, data_dir=work, ledger_path=work / "l.db")
            worker = our_worker(settings, work / "worker.log").wait_ready()
            client = await connect(settings)
            agents = AgentClient(client)  # the settings of the plugin `connect` used
            gate = asyncio.Semaphore(100)

            async def start(i: int) -> None:
                async with gate:
                    options = {"records": 1, "step_delay": STEP_SECONDS}
                    await agents.start("migration", run_id=f"release-{i}", options=options)

            await asyncio.gather(*(start(i) for i in range(runs)))
            while (await client.count_workflows(stepping_runs(queue))).count < runs:
                await asyncio.sleep(0.5)
            print(f"release: {runs} runs stepping; load average {load()}", flush=True)
            for _ in range(reps):
                cpu, started = cpu_seconds(server.process.pid) or 0.0, time.perf_counter()
                released = await release_sticky_runs(client, queue)
                took = time.perf_counter() - started
                used = (cpu_seconds(server.process.pid) or 0.0) - cpu
                print(
                    f"release: runs={runs} released={released} seconds={took:.2f} "
                    f"server_cpu_ms_per_run={1000 * used / max(released, 1):.2f}",
                    flush=True,
                )
        finally:
            if worker is not None:
                worker.kill()  # its runs are abandoned with the scratch server
            server.stop()
    return 0


def configure(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--runs", type=int, default=500, help="runs left stepping (default 500)")
    sub.add_argument("--reps", type=int, default=3, help="releases measured (default 3)")


def run(args: argparse.Namespace) -> int:
    return asyncio.run(measure(args.runs, args.reps))


register(Command("release", "what a starting worker's release of the stepping runs costs", configure, run))

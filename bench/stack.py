"""The Temporal side of a bench run: a dev server on a persistent database in a scratch directory, our
worker (`worker.py`, a subprocess, serving `bench.agents` and `examples`), the bare floor's worker
(`bench.floor_worker`, a subprocess with the same worker settings), a client, and an `AgentClient` on it —
how the bench starts and waits for our runs, as a user's code would. With a database URL, a second worker of
ours on a queue of its own keeps its stores in PostgreSQL (`AGENT_DATABASE_URL`), with its own `AgentClient`.
Everything is stopped by its handle.

The server runs with a profile (`duragent/_ops/devstack/server_profile.py`): `tuned`, as we ship it, or `default`, the
dev server
as it comes; `temporal_stacks` starts one stack per profile, so a bench can interleave runs across them."""

from __future__ import annotations

import sys
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from temporalio.api.workflowservice.v1 import GetSystemInfoRequest
from temporalio.client import Client

from bench.served import worker_env
from duragent._client import AgentClient
from duragent._config.settings import Settings
from duragent._connection import connect
from duragent._ops.devstack import devserver
from duragent._ops.devstack.server_profile import TUNED, ServerProfile
from duragent._ops.devstack.worker_process import WorkerProcess


def our_worker(settings: Settings, log: Path, extra_env: dict[str, str] | None = None) -> WorkerProcess:
    """`python worker.py` serving the bench's agents, its transcripts in `settings.data_dir`."""
    return WorkerProcess(settings, log=log, extra_env=worker_env(settings.data_dir) | (extra_env or {}))


def floor_worker(settings: Settings, log: Path) -> WorkerProcess:
    """`python -m bench.floor_worker` in its own process, managed like our worker."""
    return WorkerProcess(settings, log=log, command=[sys.executable, "-m", "bench.floor_worker"])


@dataclass
class Stack:
    workdir: Path
    server: devserver.DevServer
    settings: Settings  # our worker's
    floor_queue: str
    client: Client  # raw: the floor's runs, histories, visibility
    agents: AgentClient  # ours: start, approve, wait
    worker: WorkerProcess
    floor: WorkerProcess | None
    server_version: str
    postgres: PostgresWorker | None = None
    profile: ServerProfile = TUNED

    def new_worker(self, name: str = "worker") -> WorkerProcess:
        """Start another worker process of ours on the same queue (after a kill, say)."""
        self.worker = our_worker(self.settings, self.workdir / f"{name}.log").wait_ready()
        return self.worker


@dataclass
class PostgresWorker:
    """Our worker with the PostgreSQL stores, and the client that starts runs on its queue."""

    url: str
    settings: Settings
    worker: WorkerProcess
    agents: AgentClient


@asynccontextmanager
async def temporal_stack(
    workdir: Path,
    *,
    floor: bool = True,
    profile: ServerProfile = TUNED,
    database_url: str | None = None,
    server_flags: list[str] | None = None,
) -> AsyncIterator[Stack]:
    workdir.mkdir(parents=True, exist_ok=True)
    server = devserver.start(
        devserver.free_port(),
        None,
        workdir / "dev.db",
        log=workdir / "server.log",
        extra=server_flags,
        profile=profile,
    )
    worker: WorkerProcess | None = None
    floor_process: WorkerProcess | None = None
    postgres: PostgresWorker | None = None
    try:
        await devserver.wait_until_serving(server.address)
        queue = f"bench-{uuid.uuid4().hex[:8]}"
        settings = Settings(
            address=server.address,
            namespace="default",
            task_queue=queue,
            data_dir=workdir,
            ledger_path=workdir / "ledger.db",
        )
        worker = our_worker(settings, workdir / "worker.log").wait_ready()
        if floor:
            floor_process = floor_worker(replace(settings, task_queue=f"{queue}-floor"), workdir / "floor.log")
            floor_process.wait_ready()
        client = await connect(settings)
        info = await client.workflow_service.get_system_info(GetSystemInfoRequest())
        agents = AgentClient(client)
        if database_url:
            pg_settings = replace(
                settings, task_queue=f"{queue}-pg", data_dir=workdir / "pg-worker", database_url=database_url
            )
            pg_worker = our_worker(pg_settings, workdir / "worker-postgres.log")
            postgres = PostgresWorker(
                database_url,
                pg_settings,
                pg_worker,
                AgentClient(client, task_queue=pg_settings.task_queue, ui_url=pg_settings.ui_url),
            )
            pg_worker.wait_ready()
        stack = Stack(
            workdir,
            server,
            settings,
            f"{queue}-floor",
            client,
            agents,
            worker,
            floor_process,
            info.server_version,
            postgres,
            profile,
        )
        try:
            yield stack
        finally:
            worker = stack.worker
    finally:
        if worker is not None:
            worker.stop()
        if floor_process is not None:
            floor_process.stop()
        if postgres is not None:
            postgres.worker.stop()
        server.stop()


@asynccontextmanager
async def temporal_stacks(
    workdir: Path, profiles: Sequence[ServerProfile], *, floor: bool = True, database_url: str | None = None
) -> AsyncIterator[dict[str, Stack]]:
    """One stack per profile, all up at once (an idle one costs about 1 % of a core), keyed by name; the
    PostgreSQL worker, when asked for, only on the last profile's (the one we ship)."""
    async with AsyncExitStack() as exits:
        stacks = {}
        for i, profile in enumerate(profiles):
            last = i == len(profiles) - 1
            stacks[profile.name] = await exits.enter_async_context(
                temporal_stack(
                    workdir / profile.name, floor=floor, profile=profile, database_url=database_url if last else None
                )
            )
        yield stacks

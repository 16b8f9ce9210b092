"""Chaos on Temporal: a dev server on a persistent SQLite file, one worker process, runs of every demo
agent; the worker is SIGKILLed at random moments and restarted, the dev server is SIGKILLed a few times
and restarted on the same database. Runs are started, approved and read through `AgentClient` /
`RunHandle`, as a user's code would. Everything is stopped by its handle (pid), never by name."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench.chaos.invariants import TERMINAL, EffectRow, RunSpec
from bench.chaos.plan import gaps
from bench.stack import our_worker
from duragent._client import AgentClient, RunHandle
from duragent._config.settings import Settings
from duragent._errors import ApprovalRejected, NoPendingApproval, RunClosed, TemporalUnavailable, UnknownRun
from duragent._ops.devstack import devserver
from duragent._ops.devstack.worker_process import WorkerProcess
from duragent._stores.ledger import EffectsLedger
from duragent._workflows.inputs import Timeouts

HEARTBEAT_SECONDS = 2.0
MODEL_SECONDS = 10.0  # a bound on one model call (which heartbeats: a kill is noticed within HEARTBEAT_SECONDS)


@dataclass
class Outcome:
    statuses: dict[str, str | None]
    effects: list[EffectRow]
    kills: int = 0
    server_restarts: int = 0
    worker_exits: int = 0
    notes: list[str] = field(default_factory=list)


class TemporalChaos:
    def __init__(
        self,
        specs: list[RunSpec],
        workdir: Path,
        *,
        kills: int,
        server_restarts: int,
        seed: int,
        timeout: float,
        say: Callable[[str], None],
    ) -> None:
        self.specs, self.workdir, self.say, self.timeout = specs, workdir, say, timeout
        self.rng = random.Random(seed * 7919 + 1)
        self.plan = ["kill"] * kills + ["server"] * server_restarts
        self.rng.shuffle(self.plan)
        self.port = devserver.free_port()
        self.db = workdir / "dev.db"
        self.server: devserver.DevServer | None = None
        self.worker: WorkerProcess | None = None
        self.settings = Settings(
            address=f"127.0.0.1:{self.port}",
            namespace="default",
            task_queue=f"chaos-{seed}",
            data_dir=workdir,
            ledger_path=workdir / "ledger.db",
        )
        self.outcome = Outcome(statuses={}, effects=[])
        self.final: dict[str, str | None] = {}
        self.generation = 0

    # -- processes ------------------------------------------------------------------------------------

    async def start_server(self) -> None:
        self.server = await asyncio.to_thread(
            devserver.start, self.port, None, self.db, log=self.workdir / "server.log"
        )
        await devserver.wait_until_serving(self.server.address, timeout=120)

    async def start_worker(self) -> None:
        self.generation += 1
        worker = our_worker(self.settings, self.workdir / f"worker-{self.generation}.log")
        self.worker = worker
        await asyncio.to_thread(worker.wait_ready, 120)

    async def keep_worker_alive(self) -> None:
        """A supervisor's job: a worker that exited on its own (not one we killed) is started again."""
        if self.worker is not None and self.worker.process.poll() is not None:
            self.outcome.worker_exits += 1
            self.say(f"the worker exited on its own (code {self.worker.process.returncode}); restarting it")
            await self.start_worker()

    def stop_all(self) -> None:
        if self.worker is not None:
            self.worker.kill()
        if self.server is not None:
            self.server.stop()

    # -- the session ----------------------------------------------------------------------------------

    async def run(self) -> Outcome:
        try:
            await self.start_server()
            await self.start_worker()
            client = await AgentClient.connect(self.settings)
            timeouts = Timeouts(heartbeat_seconds=HEARTBEAT_SECONDS, model_seconds=MODEL_SECONDS)
            started = time.monotonic()
            for spec in self.specs:
                await client.start(spec.agent, run_id=spec.run_id, options=spec.options, timeouts=timeouts)
            self.say(f"started {len(self.specs)} runs on {self.settings.address}")
            approvals = [
                asyncio.create_task(self.approve(client.handle(spec.run_id), spec, started))
                for spec in self.specs
                if spec.agent == "refund"
            ]
            await self.strike(client)
            await self.settle(client, started)
            for task in approvals:
                task.cancel()
            self.outcome.statuses = self.final
            self.outcome.effects = [EffectRow.of(e) for e in EffectsLedger(self.settings.ledger_path).effects()]
            return self.outcome
        finally:
            self.stop_all()

    async def strike(self, client: AgentClient) -> None:
        for event, gap in zip(self.plan, gaps(self.rng, len(self.plan), 0.5, 2.5), strict=True):
            await asyncio.sleep(gap)
            await self.keep_worker_alive()
            await self.refresh(client)
            if all(s in TERMINAL for s in self.final.values()) and len(self.final) == len(self.specs):
                self.say("every run ended before the chaos plan did")
                return
            if event == "kill":
                assert self.worker is not None
                self.worker.kill()
                self.outcome.kills += 1
                self.say(f"kill {self.outcome.kills}: SIGKILL worker pid {self.worker.pid}")
                await asyncio.sleep(self.rng.uniform(0.0, 1.0))
                await self.start_worker()
            else:
                assert self.server is not None
                self.server.kill()
                self.outcome.server_restarts += 1
                self.say(
                    f"server restart {self.outcome.server_restarts}: SIGKILL dev server pid {self.server.process.pid}"
                )
                await asyncio.sleep(self.rng.uniform(0.5, 2.0))
                await self.start_server()

    async def settle(self, client: AgentClient, started: float) -> None:
        """Keep the worker alive (restart it if it exited on its own) until every run ended or time is up."""
        while time.monotonic() - started < self.timeout:
            await self.refresh(client)
            if len(self.final) == len(self.specs) and all(s in TERMINAL for s in self.final.values()):
                return
            await self.keep_worker_alive()
            await asyncio.sleep(0.5)
        self.outcome.notes.append(f"timed out after {self.timeout:.0f}s with runs still active")

    async def refresh(self, client: AgentClient) -> None:
        for spec in self.specs:
            if self.final.get(spec.run_id) in TERMINAL:
                continue
            try:
                self.final[spec.run_id] = await status_of(client.handle(spec.run_id))
            except TemporalUnavailable:
                continue  # the server is restarting

    async def approve(self, run: RunHandle, spec: RunSpec, started: float) -> None:
        """Approve the refund's pending call, as the approver saw it (its arguments hash), once its delay has
        passed. `RunHandle.approve` answers at once through an update, or queues the decision as a signal
        while no worker answers; a server that is down is tried again."""
        await asyncio.sleep(max(0.0, spec.approve_after - (time.monotonic() - started)))
        while True:
            try:
                waiting = await run.pending()
                if waiting:
                    target = waiting[0]
                    outcome = await run.approve(
                        target.call_id,
                        by="chaos",
                        reason="auto-approved by the chaos driver",
                        arguments_hash=target.arguments_hash,
                    )
                    self.say(f"approved {spec.run_id} (call {target.call_id}, {outcome.decision} via {outcome.via})")
                    return
                if not await run.is_running():
                    return
            except (RunClosed, ApprovalRejected) as exc:
                self.say(f"could not approve {spec.run_id}: {exc}")
                return
            except (TemporalUnavailable, NoPendingApproval):
                pass  # the server is restarting, or the call was decided meanwhile: look again
            await asyncio.sleep(0.3)


async def status_of(run: RunHandle) -> str | None:
    """Our status of a run (completed, compensated, compensation_failed, ...; `running` while open), None
    for a run the server does not know. Read without a worker: a closed run's result or search attributes."""
    try:
        if await run.is_running():
            return "running"
        return (await run.progress()).status
    except UnknownRun:
        return None


async def run(
    specs: list[RunSpec],
    workdir: Path,
    *,
    kills: int,
    server_restarts: int,
    seed: int,
    timeout: float,
    say: Callable[[str], None],
) -> Outcome:
    chaos = TemporalChaos(
        specs, workdir, kills=kills, server_restarts=server_restarts, seed=seed, timeout=timeout, say=say
    )
    return await chaos.run()

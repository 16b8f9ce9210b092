"""`demo`: the README's main job. Embedded server (unless one answers), a worker process, the scenarios —
including a worker killed with SIGKILL mid-run and replaced — each result with its Web UI link."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from temporalio.client import Client, WorkflowHandle

from agentic.approvals import Decision, PendingApproval
from agentic.ledger import EffectsLedger
from ops import devserver
from ops.cli.approvals import pending_approvals
from ops.cli.output import emit
from ops.cli.runs import result_summary, start_run, wait_result
from ops.connection import connect
from ops.settings import Settings
from ops.signals import stops_on_signals
from ops.worker_process import WorkerProcess
from scenarios import ScenarioOptions
from workflows.agent import AgentWorkflow
from workflows.inputs import AgentInput, AgentResult, Timeouts

Handle = WorkflowHandle[Any, AgentResult]


def say(as_json: bool, text: str) -> None:
    if not as_json:
        print(text, flush=True)


async def until(check: Callable[[], Awaitable[bool]], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        await asyncio.sleep(0.2)


class Demo:
    def __init__(self, settings: Settings, as_json: bool) -> None:
        self.settings = settings
        self.as_json = as_json
        self.ledger = EffectsLedger(settings.ledger_path)
        self.worker: WorkerProcess | None = None
        self.results: list[dict[str, Any]] = []
        self.stamp = f"{time.strftime('%H%M%S')}-{uuid.uuid4().hex[:4]}"

    def start_worker(self) -> WorkerProcess:
        self.worker = WorkerProcess(self.settings, log=self.settings.data_dir / "demo-worker.log").wait_ready()
        return self.worker

    async def report(self, handle: Handle, note: str = "") -> AgentResult:
        result = await wait_result(handle)
        effects = self.ledger.effects(handle.id)
        summary = result_summary(result) | {"url": self.settings.run_url(handle.id), "effects": len(effects)}
        summary["note"] = note
        self.results.append(summary)
        say(self.as_json, f"  {result.status} ({result.stop.value}): {result.output or result.stop_detail}")
        say(self.as_json, f"  trajectory {result.trajectory()}, {len(effects)} effect(s) in the ledger")
        if note:
            say(self.as_json, f"  {note}")
        say(self.as_json, f"  {summary['url']}")
        return result

    async def billing(self, client: Client) -> None:
        say(self.as_json, "\n[billing] lesson 000's agent: charge inv-9 once, then answer")
        handle = await start_run(client, self.settings, AgentInput(scenario="billing"), f"demo-billing-{self.stamp}")
        await self.report(handle)

    async def migration_with_crash(self, client: Client) -> None:
        say(self.as_json, "\n[migration] 5 mutating steps; the worker is killed with SIGKILL after step 2")
        handle = await start_run(
            client,
            self.settings,
            AgentInput(
                scenario="migration",
                options=ScenarioOptions(step_delay=1.0),
                timeouts=Timeouts(heartbeat_seconds=3.0),
            ),
            f"demo-migration-{self.stamp}",
        )

        async def two_steps_done() -> bool:
            return len(self.ledger.effects(handle.id)) >= 2

        await until(two_steps_done, 60, "step 2 of the migration")
        assert self.worker is not None
        killed = self.worker.pid
        self.worker.kill()
        say(
            self.as_json,
            f"  killed worker pid {killed} (SIGKILL) with {len(self.ledger.effects(handle.id))} steps done",
        )
        started = self.start_worker()
        say(self.as_json, f"  started a new worker, pid {started.pid}; it resumes the run from history")
        result = await self.report(handle, note=f"worker {killed} was killed mid-run")
        records = [e.args["record"] for e in self.ledger.effects(handle.id)]
        say(self.as_json, f"  records migrated, in ledger order: {records} (each exactly once)")
        assert result.trajectory().count("migrate_record") == 5

    async def refund_with_approval(self, client: Client) -> None:
        say(self.as_json, "\n[refund] a tool that needs a human: the run waits (durable timer, 24 h deadline)")
        handle = await start_run(client, self.settings, AgentInput(scenario="refund"), f"demo-refund-{self.stamp}")
        waiting: list[PendingApproval] = []

        async def is_waiting() -> bool:
            nonlocal waiting
            waiting = await pending_approvals(client, handle.id)
            return bool(waiting)

        await until(is_waiting, 30, "the refund's approval request")
        [pending] = waiting
        say(
            self.as_json,
            f"  waiting: {pending.tool}({pending.arguments}), deadline {pending.deadline:%Y-%m-%d %H:%M} UTC",
        )
        say(self.as_json, f"  approving it as 'demo-approver' with hash {pending.arguments_hash[:12]}…")
        decision = Decision(
            call_id=pending.call_id,
            approve=True,
            approver="demo-approver",
            reason="demo",
            arguments_hash=pending.arguments_hash,
        )
        await handle.execute_update(AgentWorkflow.decide, decision)
        await self.report(handle, note="approved by demo-approver")

    async def trip_with_saga(self, client: Client) -> None:
        say(self.as_json, "\n[trip] flight, hotel, car; the car fails permanently: undo the rest, newest first")
        handle = await start_run(client, self.settings, AgentInput(scenario="trip"), f"demo-trip-{self.stamp}")
        result = await self.report(handle)
        for c in result.compensations:
            say(self.as_json, f"  undid {c.tool}: {c.result}")

    async def run(self) -> None:
        client = await connect(self.settings)
        self.start_worker()
        await self.billing(client)
        await self.migration_with_crash(client)
        await self.refund_with_approval(client)
        await self.trip_with_saga(client)


@stops_on_signals  # SIGTERM/SIGHUP stop the server and worker it started, as Ctrl-C does
async def cmd_demo(args: argparse.Namespace, settings: Settings) -> int:
    host, port = devserver.split_address(settings.address)
    server = None
    if not devserver.port_open(host, port):
        say(args.json, f"no Temporal server at {settings.address}; starting the embedded dev server…")
        server = devserver.start(port, 8233, devserver.default_db(), log=settings.data_dir / "demo-server.log")
        await devserver.wait_until_serving(settings.address)
        say(args.json, f"Temporal dev server pid {server.process.pid}, database {server.db}")
    say(args.json, f"Web UI: {settings.ui_url}/namespaces/{settings.namespace}/workflows")
    demo = Demo(settings, args.json)
    try:
        await demo.run()
        emit(args.json, {"runs": demo.results, "ui": settings.ui_url})
        if sys.stdin.isatty() and sys.stdout.isatty() and not args.json:
            print(f"\nThe Web UI stays up at {settings.ui_url} — press Ctrl-C to stop the worker and server.")
            while True:
                await asyncio.sleep(3600)
    finally:
        if demo.worker:
            demo.worker.stop()
        if server:
            server.stop()
    return 0

"""`demo`: the README's main job. Embedded server (unless one answers), a worker process, the demo agents —
including a worker killed with SIGKILL mid-run and replaced — each result with its Web UI link. Every run
is started, approved and awaited through `AgentClient`, as a user's code would."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from activities.inputs import AgentResult
from agentic.approvals import PendingApproval
from config.settings import Settings
from durable_agents.client import AgentClient, RunHandle
from ops.cli.output import emit
from ops.cli.runs import result_summary
from ops.demo.delegation import support_with_delegation
from ops.devstack import devserver
from ops.devstack.signals import stops_on_signals
from ops.devstack.worker_process import WorkerProcess
from stores import configured as stores
from workflows.inputs import Timeouts


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
        self.ledger = stores.open_ledger(settings.database_url, settings.ledger_path)
        self.worker: WorkerProcess | None = None
        self.results: list[dict[str, Any]] = []
        self.stamp = f"{time.strftime('%H%M%S')}-{uuid.uuid4().hex[:4]}"

    def say(self, text: str) -> None:
        say(self.as_json, text)

    def start_worker(self) -> WorkerProcess:
        self.worker = WorkerProcess(self.settings, log=self.settings.data_dir / "demo-worker.log").wait_ready()
        return self.worker

    async def report(self, handle: RunHandle, note: str = "") -> AgentResult:
        result = await handle.result()
        effects = self.ledger.effects(handle.run_id)
        summary = result_summary(result) | {"url": handle.url, "effects": len(effects)}
        summary["note"] = note
        self.results.append(summary)
        say(self.as_json, f"  {result.status} ({result.stop.value}): {result.output or result.stop_detail}")
        say(self.as_json, f"  trajectory {result.trajectory()}, {len(effects)} effect(s) in the ledger")
        if note:
            say(self.as_json, f"  {note}")
        say(self.as_json, f"  {summary['url']}")
        return result

    async def billing(self, client: AgentClient) -> None:
        say(self.as_json, "\n[billing] lesson 000's agent: charge inv-9 once, then answer")
        handle = await client.start("billing", run_id=f"demo-billing-{self.stamp}")
        await self.report(handle)

    async def migration_with_crash(self, client: AgentClient) -> None:
        say(self.as_json, "\n[migration] 5 mutating steps; the worker is killed with SIGKILL after step 2")
        handle = await client.start(
            "migration",
            run_id=f"demo-migration-{self.stamp}",
            options={"step_delay": 1.0},
            timeouts=Timeouts(heartbeat_seconds=3.0),
        )

        async def two_steps_done() -> bool:
            return len(self.ledger.effects(handle.run_id)) >= 2

        await until(two_steps_done, 60, "step 2 of the migration")
        assert self.worker is not None
        killed = self.worker.pid
        self.worker.kill()
        say(
            self.as_json,
            f"  killed worker pid {killed} (SIGKILL) with {len(self.ledger.effects(handle.run_id))} steps done",
        )
        started = self.start_worker()
        say(self.as_json, f"  started a new worker, pid {started.pid}; it resumes the run from history")
        result = await self.report(handle, note=f"worker {killed} was killed mid-run")
        records = [e.args["record"] for e in self.ledger.effects(handle.run_id)]
        say(self.as_json, f"  records migrated, in ledger order: {records} (each exactly once)")
        assert result.trajectory().count("migrate_record") == 5

    async def refund_with_approval(self, client: AgentClient) -> None:
        say(self.as_json, "\n[refund] a tool that needs a human: the run waits (durable timer, 24 h deadline)")
        handle = await client.start("refund", run_id=f"demo-refund-{self.stamp}")
        waiting: list[PendingApproval] = []

        async def is_waiting() -> bool:
            nonlocal waiting
            waiting = await handle.pending()
            return bool(waiting)

        await until(is_waiting, 30, "the refund's approval request")
        [pending] = waiting
        say(
            self.as_json,
            f"  waiting: {pending.tool}({pending.arguments}), deadline {pending.deadline:%Y-%m-%d %H:%M} UTC",
        )
        say(self.as_json, f"  approving it as 'demo-approver' with hash {pending.arguments_hash[:12]}…")
        await handle.approve(pending.call_id, by="demo-approver", reason="demo", arguments_hash=pending.arguments_hash)
        await self.report(handle, note="approved by demo-approver")

    async def trip_with_saga(self, client: AgentClient) -> None:
        say(self.as_json, "\n[trip] flight, hotel, car; the car fails permanently: undo the rest, newest first")
        handle = await client.start("trip", run_id=f"demo-trip-{self.stamp}")
        result = await self.report(handle)
        for c in result.compensations:
            say(self.as_json, f"  undid {c.tool}: {c.result}")

    async def run(self) -> None:
        client = await AgentClient.connect(settings=self.settings)
        self.start_worker()
        await self.billing(client)
        await self.migration_with_crash(client)
        await self.refund_with_approval(client)
        await self.trip_with_saga(client)
        await support_with_delegation(self, client)


def demo_for(args: argparse.Namespace) -> type[Demo]:
    """`--model local`: the same server and worker, runs answered by the real local model (demo_llm.py)."""
    if getattr(args, "model", None) is None:
        return Demo
    from ops.demo.local_model import LocalModelDemo  # it builds on Demo

    return LocalModelDemo


def _embedded_server(port: int, settings: Settings) -> devserver.DevServer:
    """The embedded dev server, its Web UI on the usual 8233 when free — else, or when another server took 8233
    while this one started (two demos at once), on a free port."""
    log = settings.data_dir / "demo-server.log"
    if devserver.port_free(8233):
        try:
            return devserver.start(port, 8233, devserver.default_db(), log=log)
        except RuntimeError:
            if devserver.port_free(8233):
                raise  # not the UI port: a failure of its own
    return devserver.start(port, devserver.free_port(), devserver.default_db(), log=log)


@stops_on_signals  # SIGTERM/SIGHUP stop the server and worker it started, as Ctrl-C does
async def cmd_demo(args: argparse.Namespace, settings: Settings) -> int:
    host, port = devserver.split_address(settings.address)
    server = None
    if not devserver.port_open(host, port):
        say(args.json, f"no Temporal server at {settings.address}; starting the embedded dev server…")
        server = _embedded_server(port, settings)
        await devserver.wait_until_serving(settings.address)
        say(args.json, f"Temporal dev server pid {server.process.pid}, database {server.db}")
        if not os.environ.get("TEMPORAL_UI_URL"):  # link to the UI of the server it started
            settings = dataclasses.replace(settings, ui_url=server.ui_url)
    say(args.json, f"Web UI: {settings.ui_url}/namespaces/{settings.namespace}/workflows")
    demo = demo_for(args)(settings, args.json)
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

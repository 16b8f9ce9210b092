"""`demo`: the README's main job. Embedded server (unless one answers), a worker process, the demo agents —
including a worker killed with SIGKILL mid-run and replaced — each result with its Web UI link. Every run
is started, approved and awaited through `AgentClient`, as a user's code would."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from agentic.approvals import PendingApproval
from duragent._activities.inputs import AgentResult
from duragent._client import AgentClient, RunHandle
from duragent._config.settings import Settings
from duragent._ops.cli.runs import result_summary
from duragent._ops.devstack.worker_process import WorkerProcess
from duragent._stores import configured as stores
from duragent._workflows.inputs import Timeouts


def say(as_json: bool, text: str) -> None:
    if not as_json:
        print(text, flush=True)


async def until(check: Callable[[], Awaitable[bool]], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        await asyncio.sleep(0.2)


class DemoApplication(Protocol):
    """An entry point's own application, served by its own worker program and shown after the agents (the
    repository's `starter.py` gives its OrderRefund workflow)."""

    worker_command: list[str]  # the worker program serving the application and the agents

    def worker_env(self, settings: Settings) -> dict[str, str]:
        """What its worker needs in its environment (services started here, before the worker)."""
        ...

    async def run(self, demo: Demo, client: AgentClient) -> None:
        """Its act, after the agents'."""
        ...

    def stop(self) -> None: ...


class Demo:
    def __init__(
        self,
        settings: Settings,
        as_json: bool,
        *,
        agents: Sequence[str] = (),
        application: DemoApplication | None = None,
    ) -> None:
        self.settings = settings
        self.as_json = as_json
        self.agents = list(agents)  # the agents modules its worker serves (the entry point's: the demo agents)
        self.application = application
        self.ledger = stores.open_ledger(settings.database_url, settings.ledger_path)
        self.worker: WorkerProcess | None = None
        self.results: list[dict[str, Any]] = []
        self.stamp = f"{time.strftime('%H%M%S')}-{uuid.uuid4().hex[:4]}"

    def say(self, text: str) -> None:
        say(self.as_json, text)

    def start_worker(self) -> WorkerProcess:
        app = self.application
        env = {"AGENT_MODULES": ",".join(self.agents)} if self.agents else {}
        self.worker = WorkerProcess(
            self.settings,
            log=self.settings.data_dir / "demo-worker.log",
            extra_env=env | (app.worker_env(self.settings) if app else {}),
            command=app.worker_command if app else None,
        ).wait_ready()
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
        say(self.as_json, "\n[billing] the simplest agent: charge inv-9 once, under its key, then answer")
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
        client = await AgentClient.connect(self.settings)
        self.start_worker()
        await self.billing(client)
        await self.migration_with_crash(client)
        await self.refund_with_approval(client)
        await self.trip_with_saga(client)
        await self.support_with_delegation(client)
        if self.application is not None:
            await self.application.run(self, client)

    async def support_with_delegation(self, client: AgentClient) -> None:
        """`support` hands a refund to `billing-desk` (examples/support.py): the refund waits for a human; the
        approval is found among the support run's pending approvals (path support → billing-desk) and approved
        there; one budget: the support run's consumption includes its child's (a child workflow in the UI)."""
        say = self.say
        say(
            "\n[support] hands the refund to the billing desk's agent: a child workflow, one budget, one approvals list"
        )
        handle = await client.start("support", run_id=f"demo-support-{self.stamp}")
        [waiting] = await handle.wait_for_approval(timeout=60)
        say(f"  the child {waiting.run_id} waits: {waiting.tool}({waiting.arguments})")
        say(f"  listed in the support run's pending approvals, path {' → '.join(waiting.path)}")
        say("  approving it through the support run as 'demo-approver'; the decision reaches the billing desk's run")
        await handle.approve(waiting.address, by="demo-approver", reason="demo", arguments_hash=waiting.arguments_hash)
        result = await self.report(handle, note=f"delegated to billing-desk: run {waiting.run_id}")
        child = await client.handle(waiting.run_id).result()
        say(
            f"  one budget: the billing desk used {child.step_count} of the support run's {result.step_count} steps "
            f"and {child.input_tokens + child.output_tokens} of its {result.input_tokens + result.output_tokens} tokens"
        )
        say(f"  the child in the Web UI (linked from the support run): {client.run_url(waiting.run_id)}")

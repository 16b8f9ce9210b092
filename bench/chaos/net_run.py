"""One fault's runs in the network fault matrix (bench/chaos/network.py): the matrix's size, the runs it starts,
approves and waits for through `AgentClient`, and what it gathers for the checker (`net_invariants.Record`) from
the engine, the PostgreSQL ledger and transcripts, and the orders service."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from bench.chaos.invariants import TERMINAL, EffectRow, RunSpec
from bench.chaos.net_invariants import Approval, Record
from bench.chaos.net_stack import NetStack
from bench.chaos.temporal import status_of
from duragent._client import RunHandle
from duragent._errors import ApprovalRejected, NoPendingApproval, RunClosed, TemporalUnavailable
from duragent._stores.postgres import PostgresLedger
from duragent._stores.postgres.pool import Database
from duragent._workflows.inputs import Timeouts

TIMEOUTS = Timeouts(heartbeat_seconds=2.0, model_seconds=10.0)


@dataclass(frozen=True)
class Matrix:
    """How big: demo runs per fault, how long a fault holds, and each fault's deadline (from its heal)."""

    runs: int
    hold: float
    deadline: float
    seed: int = 1


SHORT = Matrix(runs=5, hold=6.0, deadline=40.0)  # every demo agent and outcome once, and an orders run
LONG = Matrix(runs=20, hold=30.0, deadline=240.0)


@dataclass
class FaultRun:
    stack: NetStack
    fault: str
    specs: list[RunSpec]
    orders: list[str]
    say: Callable[[str], None]
    approvals: list[Approval] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    approvers: list[asyncio.Task[None]] = field(default_factory=list)

    def handle(self, run_id: str) -> RunHandle:
        return self.stack.agents.handle(run_id)

    async def start(self) -> None:
        """Start every run, and the approvers of the gated ones: each fault calls it at its own moment (a cut
        armed for the first append or request is armed before)."""
        for spec in self.specs:
            await self.stack.agents.start(spec.agent, run_id=spec.run_id, options=spec.options, timeouts=TIMEOUTS)
        for run_id in self.orders:
            await self.stack.agents.start("orders", run_id=run_id, timeouts=TIMEOUTS)
        gated = [s.run_id for s in self.specs if s.agent == "refund"] + self.orders
        self.approvers = [asyncio.create_task(self.approve(run_id)) for run_id in gated]

    async def approve(self, run_id: str) -> None:
        """Approve the run's one gated call as soon as it waits, exactly once (the server may be unreachable
        meanwhile: then look again)."""
        run = self.handle(run_id)
        while True:
            try:
                waiting = await run.pending()
                if waiting:
                    target = waiting[0]
                    given = Approval(run_id, target.call_id, target.tool)
                    if given not in self.approvals:  # counted once, whether or not this answer reaches us
                        self.approvals.append(given)
                    await run.approve(target.call_id, by="netfaults", arguments_hash=target.arguments_hash)
                    return
                if not await run.is_running():
                    return
            except (RunClosed, ApprovalRejected) as exc:
                self.failures.append(f"{run_id}: could not approve: {exc}")
                return
            except (TemporalUnavailable, NoPendingApproval):
                pass
            await asyncio.sleep(0.3)

    async def settle(self, deadline: float) -> dict[str, str | None]:
        """Every run's status once all ended, or when `deadline` (monotonic) passed."""
        statuses: dict[str, str | None] = {}
        ids = [s.run_id for s in self.specs] + self.orders
        while True:
            for run_id in ids:
                if statuses.get(run_id) not in TERMINAL:
                    try:
                        statuses[run_id] = await status_of(self.handle(run_id))
                    except TemporalUnavailable:
                        continue
            if all(statuses.get(r) in TERMINAL for r in ids) or time.monotonic() > deadline:
                return statuses
            await asyncio.sleep(0.5)

    async def record(self, statuses: dict[str, str | None], late: list[str]) -> Record:
        ids = [s.run_id for s in self.specs] + self.orders
        database = Database(self.stack.settings.database_url or "")
        try:
            effects = [EffectRow.of(e) for e in PostgresLedger(database).effects() if e.run_id in ids]
            chains = {run_id: transcript_nodes(database, run_id) for run_id in ids}
        finally:
            database.close()
        audits: dict[str, list[tuple[str, str]]] = {}
        for run_id in ids:
            if statuses.get(run_id) in TERMINAL:
                result = await self.handle(run_id).result()
                audits[run_id] = [(entry.call_id, entry.event) for entry in result.audit]
        return Record(
            self.specs,
            self.orders,
            statuses,
            effects,
            provider_refunds(self.stack, ids),
            self.approvals,
            audits,
            chains,
            late=late,
            failures=self.failures,
        )


def transcript_nodes(database: Database, run_id: str) -> list[tuple[str, str]]:
    with database.connection() as db:
        rows = db.execute(
            "SELECT n.ref, n.previous FROM transcript_owners o JOIN transcript_nodes n ON n.ref = o.ref"
            " WHERE o.run_id = %s",
            (run_id,),
        ).fetchall()
    return [(str(ref), str(previous)) for ref, previous in rows]


def provider_refunds(stack: NetStack, run_ids: list[str]) -> list[tuple[str, str]]:
    """The orders service's refunds of these runs (its SQLite file, read directly: it is on this machine)."""
    if not stack.provider_db.exists():
        return []
    with sqlite3.connect(stack.provider_db) as db:
        rows = db.execute("SELECT key, order_id FROM refunds").fetchall()
    return [(key, order) for key, order in rows if key.partition(":")[0] in run_ids]


async def until(check: Callable[[], Awaitable[object]], timeout: float, interval: float = 0.1) -> object:
    """`check()`'s first truthy answer, or None once `timeout` seconds passed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = await check()
        if found:
            return found
        await asyncio.sleep(interval)
    return None

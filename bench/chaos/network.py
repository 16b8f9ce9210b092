"""The network fault matrix: runs of the demo agents and of the orders agent (whose refund goes over HTTP to the
orders service) while the lab's wire cuts, slows down and drops what goes between hosts — then the invariants
of `net_invariants`, one row per fault. Runs are started, approved and read through `AgentClient`, as a
user's code would. The faults, each healed before its runs are waited for:

* `frontend-cut`: the worker running the orders refund loses the Temporal frontend while the provider holds
  the answer (`--slow-after-effect`): the activity misses its heartbeats, the other worker runs it again under
  the same key (the provider answers with the first refund), and the cut-off worker's late completion — sent
  once the cut heals — is refused by the server: the history's completion is the other worker's.
* `postgres-cut`: a worker loses PostgreSQL at the first packet of a transcript append it sends (that packet
  dropped: the append is in flight, unanswered); the cut holds, then heals.
* `provider-cut`: the orders service loses both workers at the first refund request one of them sends (that
  request dropped: sent, never answered); the cut holds, then heals, and the refund is made once.
* `slow-lossy`: 200 ms each way and 5 % of packets dropped, on every link between any two hosts.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import psycopg
from temporalio.api.enums.v1 import EventType, PendingActivityState

from bench.chaos.invariants import TERMINAL, EffectRow, RunSpec
from bench.chaos.net_invariants import Approval, Record, Row, evaluate
from bench.chaos.net_stack import WORKERS, NetStack
from bench.chaos.plan import plan
from bench.chaos.temporal import status_of
from durable_agents.client import RunHandle
from durable_agents.errors import ApprovalRejected, NoPendingApproval, RunClosed, TemporalUnavailable
from stores.postgres import PostgresLedger
from stores.postgres.pool import Database
from workflows.inputs import Timeouts

TIMEOUTS = Timeouts(heartbeat_seconds=2.0, model_seconds=10.0)
REFUND_REQUEST = b"POST /orders/"  # the orders agent's refund, over plain HTTP
# What only a transcript append sends to PostgreSQL (the lab's traffic is plaintext): the shared advisory lock its
# transaction takes first (stores/postgres/transcripts.py: reads take none, a release takes it exclusively) and its
# INSERTs — as text until psycopg prepared them, on a connection's fifth run — and always its message bodies, which
# the `bytea[]` parameter carries hex-encoded: `"role":"` below. Several, as one can straddle two packets.
APPEND = (b"pg_advisory_xact_lock_shared", b"INSERT INTO transcript_", b'"role":"'.hex().encode())


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


# -- the faults: each strikes, holds, and heals (also when it fails) ---------------------------------------


async def frontend_cut(f: FaultRun, m: Matrix) -> None:
    run_id, lab = f.orders[0], f.stack.lab
    await f.start()

    async def refunded() -> bool:
        return bool(provider_refunds(f.stack, [run_id]))

    async def running_refund() -> tuple[str, str] | None:
        description = await f.handle(run_id).describe()
        for activity in description.raw_description.pending_activities:
            if activity.activity_type.name == "run_tool" and activity.last_worker_identity:
                return activity.activity_id, activity.last_worker_identity
        return None

    if not await until(refunded, m.deadline):
        f.failures.append(f"{run_id}: the provider never saw the refund")
        return
    found = await until(running_refund, 5.0)
    victim = f.stack.worker_of(found[1]) if isinstance(found, tuple) else None
    if not isinstance(found, tuple) or victim is None:
        f.failures.append(f"{run_id}: no worker was found running the refund ({found})")
        return
    activity_id = found[0]
    f.say(f"frontend-cut: {victim} (running {run_id}'s refund, activity {activity_id}) cut off from temporal")
    trail: list[str] = []  # each attempt the server started, and on which worker (as it believes)

    async def completion_or_trail() -> tuple[str, int] | None:
        done = await completed_by(f.handle(run_id), activity_id)
        if done is None:
            for activity in (await f.handle(run_id).describe()).raw_description.pending_activities:
                started = activity.state == PendingActivityState.PENDING_ACTIVITY_STATE_STARTED
                if activity.activity_id == activity_id and started:
                    seen = f"{activity.attempt} on {f.stack.worker_of(activity.last_worker_identity)}"
                    if seen not in trail:
                        trail.append(seen)
        return done

    lab.cut(victim, "temporal")
    try:
        completion = await until(completion_or_trail, m.deadline, 0.5)
    finally:
        lab.heal()
    if isinstance(completion, tuple):
        trail.append(f"{completion[1]} on {f.stack.worker_of(completion[0])}, completed")
    f.say(f"frontend-cut: healed; the refund's attempts: {'; '.join(trail)}")
    if not isinstance(completion, tuple):
        f.failures.append(f"{run_id}: the refund never completed while {victim} was cut off")
    elif f.stack.worker_of(completion[0]) == victim or completion[1] < 2:
        f.failures.append(f"{run_id}: the refund was completed by {completion} (cut off: {victim})")


async def completed_by(run: RunHandle, activity_id: str) -> tuple[str, int] | None:
    """(identity, attempt) of the worker whose completion of activity `activity_id` the history holds."""
    scheduled: int | None = None
    attempt = 0
    async for event in run.workflow.fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            if event.activity_task_scheduled_event_attributes.activity_id == activity_id:
                scheduled = event.event_id
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            if event.activity_task_started_event_attributes.scheduled_event_id == scheduled:
                attempt = event.activity_task_started_event_attributes.attempt
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            attributes = event.activity_task_completed_event_attributes
            if attributes.scheduled_event_id == scheduled:
                return attributes.identity, attempt
    return None


async def postgres_cut(f: FaultRun, m: Matrix) -> None:
    lab = f.stack.lab
    before = lab.packets()
    for worker in WORKERS:  # whichever appends first: the other disarms
        lab.cut_on(worker, "postgres", *APPEND)
    try:
        await f.start()

        async def tripped() -> list[str]:
            return lab.tripped()

        cut = await until(tripped, m.deadline)
        if not isinstance(cut, list):
            seen = {pair: n - before.get(pair, 0) for pair, n in lab.packets().items() if pair.endswith(">postgres")}
            f.failures.append(f"postgres-cut: no worker sent a transcript append to cut (packets since: {seen})")
            return
        worker = cut[0].partition(">")[0]
        f.say(f"postgres-cut: {worker} cut off from postgres in the middle of an append; holding {m.hold:g}s")
        await asyncio.sleep(m.hold)
    finally:
        lab.heal()


async def provider_cut(f: FaultRun, m: Matrix) -> None:
    lab = f.stack.lab
    for worker in WORKERS:
        lab.cut_on(worker, "provider", REFUND_REQUEST)
    try:
        await f.start()

        async def tripped() -> list[str]:
            return lab.tripped()

        first = await until(tripped, m.deadline)
        if not first:
            f.failures.append("provider-cut: no worker sent the refund request to cut")
            return
        for worker in WORKERS:  # the other worker's retry must not get through either
            lab.cut(worker, "provider")
        f.say(f"provider-cut: the provider cut off from the workers at a refund request ({first}); holding {m.hold:g}s")
        await asyncio.sleep(m.hold)
    finally:
        lab.heal()


async def slow_lossy(f: FaultRun, m: Matrix) -> None:
    f.stack.lab.degrade(delay_ms=200, loss=0.05)
    f.say(f"slow-lossy: 200 ms each way and 5 % loss on every link for {m.hold:g}s")
    try:
        await f.start()  # over the degraded network too
        await asyncio.sleep(m.hold)
    finally:
        f.stack.lab.heal()


FAULTS: dict[str, Callable[[FaultRun, Matrix], Awaitable[None]]] = {
    "frontend-cut": frontend_cut,
    "postgres-cut": postgres_cut,
    "provider-cut": provider_cut,
    "slow-lossy": slow_lossy,
}


async def run_fault(stack: NetStack, name: str, m: Matrix, say: Callable[[str], None]) -> Row:
    started = time.monotonic()
    prefix = f"net-{name}-{m.seed}-{int(time.time() * 1000) % 10**8}"
    specs = plan(m.runs, m.seed, prefix)
    f = FaultRun(stack, name, specs, [f"{prefix}-orders"], say)
    try:
        await FAULTS[name](f, m)
        statuses = await f.settle(time.monotonic() + m.deadline)
    finally:
        for task in f.approvers:
            task.cancel()
    late = [run_id for run_id, status in statuses.items() if status not in TERMINAL]
    try:
        record = await f.record(statuses, late)
    except (psycopg.Error, OSError) as exc:
        record = Record(specs, f.orders, statuses, [], [], f.approvals, {}, {}, late, [*f.failures, str(exc)])
    row = evaluate(name, record)
    row.seconds = time.monotonic() - started
    return row

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
import time
from collections.abc import Awaitable, Callable

import psycopg
from temporalio.api.enums.v1 import EventType, PendingActivityState

from bench.chaos.invariants import TERMINAL
from bench.chaos.net_invariants import Record, Row, evaluate
from bench.chaos.net_run import FaultRun, Matrix, provider_refunds, until
from bench.chaos.net_stack import WORKERS, NetStack
from bench.chaos.plan import plan
from duragent._client import RunHandle

REFUND_REQUEST = b"POST /orders/"  # the orders agent's refund, over plain HTTP
# What only a transcript append sends to PostgreSQL (the lab's traffic is plaintext): the shared advisory lock its
# transaction takes first (duragent/_stores/postgres/transcripts.py: reads take none, a release takes it exclusively)
# and its INSERTs — as text until psycopg prepared them, on a connection's fifth run — and always its message bodies,
# which the `bytea[]` parameter carries hex-encoded: `"role":"` below. Several, as one can straddle two packets.
APPEND = (b"pg_advisory_xact_lock_shared", b"INSERT INTO transcript_", b'"role":"'.hex().encode())


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

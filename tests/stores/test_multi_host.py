"""Two worker hosts, simulated honestly: two `python worker.py` processes with different data directories
(nothing shared on disk) on one dev server, with several runs whose model and tool activities land on both.

With one shared PostgreSQL (`AGENT_DATABASE_URL`) a SIGKILL of one host mid-run changes nothing: every run
completes, each effect once in the shared ledger, every transcript whole in the shared store. With each host's
own SQLite files the same scenario fails loudly — an activity on one host cannot read the transcript the
other stored, and says what to configure — and never hangs or completes with a transcript pieced wrongly.

Who served what is read from each run's history: the identity (`pid@host`) of the worker that completed each
activity.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import NamedTuple

import psycopg
from temporalio.api.enums.v1 import PendingActivityState
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from agentic import Message, Stop
from duragent._activities.inputs import AgentResult
from duragent._ops.devstack.worker_process import WorkerProcess
from duragent._stores.postgres import Database, PostgresLedger, PostgresTranscriptStore
from duragent._stores.transcripts import SqliteTranscriptStore, TranscriptNotFound, Transcripts
from duragent._workflows.agent import AgentWorkflow
from duragent._workflows.inputs import AgentInput, Timeouts
from tests.conftest import dev_settings, eventually

RUNS = 4
RECORDS = 8
# Each migration step records its effect first, then waits this long before it returns: the window where
# the effect is committed and nobody knows yet — where the kill lands.
AFTER_EFFECT = 1.5
NOT_HERE = "not found in this worker's store; configure a shared AGENT_DATABASE_URL"


class Hosts:
    """Two worker processes, "a" and "b", each with its own data directory, on one task queue."""

    def __init__(self, env: WorkflowEnvironment, task_queue: str, tmp_path: Path, database_url: str | None) -> None:
        self.settings = {
            name: dataclasses.replace(
                dev_settings(env, task_queue, tmp_path / f"host-{name}"), database_url=database_url
            )
            for name in "ab"
        }
        # Eager activities would keep each run's activities on the worker that holds its workflow; without
        # them the task queue hands every activity to whichever host polls first, as on a busy deployment.
        spread = {"AGENT_EAGER_ACTIVITIES": "false"}
        self.workers = {
            name: WorkerProcess(settings, log=tmp_path / f"worker-{name}.log", extra_env=spread)
            for name, settings in self.settings.items()
        }
        for worker in self.workers.values():
            worker.wait_ready()
        self.by_pid = {str(worker.pid): name for name, worker in self.workers.items()}

    def name_of(self, identity: str) -> str:
        return self.by_pid.get(identity.split("@", 1)[0], identity)

    def stop(self) -> None:
        for worker in self.workers.values():
            worker.stop()


async def start_runs(client: Client, task_queue: str) -> list[WorkflowHandle[AgentWorkflow, AgentResult]]:
    batch = uuid.uuid4().hex[:6]
    return [
        await client.start_workflow(
            AgentWorkflow.run,
            AgentInput(
                agent="migration",
                options={"records": RECORDS, "after_effect_delay": AFTER_EFFECT},
                timeouts=Timeouts(heartbeat_seconds=2.0),
            ),
            id=f"two-hosts-{batch}-{i}",
            task_queue=task_queue,
        )
        for i in range(RUNS)
    ]


class Served(NamedTuple):
    """A run's history so far: which host completed each activity and on which attempt, in order, and
    whether the run failed."""

    in_order: list[tuple[str, str, int]]  # (activity type, host, attempt)
    failed: bool

    def hosts(self, activity: str) -> set[str]:
        return set(self.hosts_of(activity))

    def hosts_of(self, activity: str) -> list[str]:
        return [host for kind, host, _ in self.in_order if kind == activity]

    def interleaved(self) -> bool:
        """Both hosts completed model calls AND tool calls of this run."""
        return self.hosts("call_model") >= {"a", "b"} and self.hosts("run_tool") >= {"a", "b"}

    def steps_to_go(self) -> int:
        return RECORDS - len(self.hosts_of("run_tool"))


async def served(handle: WorkflowHandle, hosts: Hosts) -> Served:
    history = await handle.fetch_history()
    types: dict[int, str] = {}
    attempts: dict[int, int] = {}
    in_order: list[tuple[str, str, int]] = []
    failed = False
    for event in history.events:
        if event.HasField("activity_task_scheduled_event_attributes"):
            types[event.event_id] = event.activity_task_scheduled_event_attributes.activity_type.name
        elif event.HasField("activity_task_started_event_attributes"):
            attempts[event.event_id] = event.activity_task_started_event_attributes.attempt
        elif event.HasField("activity_task_completed_event_attributes"):
            done = event.activity_task_completed_event_attributes
            in_order.append(
                (types[done.scheduled_event_id], hosts.name_of(done.identity), attempts[done.started_event_id])
            )
        failed = failed or event.HasField("workflow_execution_failed_event_attributes")
    return Served(in_order, failed)


async def tool_started_on(handle: WorkflowHandle, hosts: Hosts, host: str) -> float | None:
    """Seconds since the run's tool call now running on `host` started; None when none is."""
    description = await handle.describe()
    for pending in description.raw_description.pending_activities:
        if (
            pending.activity_type.name == "run_tool"
            and pending.state == PendingActivityState.PENDING_ACTIVITY_STATE_STARTED
            and hosts.name_of(pending.last_worker_identity) == host
        ):
            return time.time() - pending.last_started_time.ToDatetime().timestamp()
    return None


async def first_run_where(
    handles: list[WorkflowHandle], hosts: Hosts, wanted: Callable[[WorkflowHandle, Served], Awaitable[bool]], what: str
) -> WorkflowHandle:
    """The first run whose state satisfies `wanted`, polled until one does."""
    found: list[WorkflowHandle] = []
    seen: dict[str, Served] = {}

    async def look() -> bool:
        for handle in handles:
            seen[handle.id] = await served(handle, hosts)
            if await wanted(handle, seen[handle.id]):
                found.append(handle)
                return True
        return False

    try:
        await eventually(look, timeout=120, what=what)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; so far: {seen}") from None
    return found[0]


def assert_whole(messages: list[Message], output: str | None, effect_results: list[str]) -> None:
    """Well formed: the system prompt and the task first, every requested call answered by its own tool
    message before the next model turn, the tool outputs the ledger's results in order, the answer last."""
    assert [m.role for m in messages[:2]] == ["system", "user"]
    asked: list[str] = []
    for message in messages[2:]:
        if message.role == "assistant":
            assert not asked, f"a model turn before calls {asked} were answered"
            asked = [call.id for call in message.tool_calls]
        else:
            assert message.role == "tool" and message.tool_call_id == asked.pop(0), message
    assert not asked, "a call was never answered"
    assert messages[-1].role == "assistant" and not messages[-1].tool_calls and messages[-1].content == output
    assert [m.content for m in messages if m.role == "tool"] == effect_results


async def outcome(handle: WorkflowHandle) -> AgentResult | WorkflowFailureError:
    try:
        return await handle.result()
    except WorkflowFailureError as failure:
        return failure


def failure_text(failure: WorkflowFailureError) -> str:
    texts, cause = [], failure.cause
    while cause is not None:
        texts.append(str(cause))
        cause = cause.__cause__
    return " <- ".join(texts)


async def settle(runs: list[Awaitable[object]]) -> list[object]:
    """Every run closes: none hangs (three minutes covers a heartbeat timeout and 8 steps many times over)."""
    return await asyncio.wait_for(asyncio.gather(*runs), 180)


async def test_two_hosts_sharing_postgresql_survive_a_sigkill_with_each_effect_once_and_transcripts_whole(
    dev_env, task_queue, tmp_path, postgres_url
):
    database = Database(postgres_url)  # the test's own look at the shared stores
    ledger = PostgresLedger(database)
    hosts = Hosts(dev_env, task_queue, tmp_path, postgres_url)
    try:
        handles = await start_runs(dev_env.client, task_queue)
        # Kill host a once the runs are interleaved, at the worst moment of some run: its tool call on a has
        # committed the effect to the shared ledger and is still running — the retry lands on b.
        interleaved: list[str] = []

        async def effect_committed_on_a(handle: WorkflowHandle, run: Served) -> bool:
            if run.interleaved():
                interleaved.append(handle.id)
            if not interleaved or run.steps_to_go() < 2:
                return False
            running_since = await tool_started_on(handle, hosts, "a")
            committed = len(ledger.effects(handle.id))
            # Just started (the kill lands well inside the window) and its effect already in the ledger.
            return (
                running_since is not None
                and running_since < AFTER_EFFECT / 2
                and committed == len(run.hosts_of("run_tool")) + 1
            )

        victim = await first_run_where(handles, hosts, effect_committed_on_a, "interleaved runs, an effect on a")
        hosts.workers["a"].kill()
        results: list[AgentResult] = await settle([h.result() for h in handles])  # type: ignore[assignment]
        tallies = [await served(h, hosts) for h in handles]
    finally:
        hosts.stop()
    try:
        shared = Transcripts(PostgresTranscriptStore(database))
        with psycopg.connect(postgres_url) as db:
            rows = db.execute("SELECT run_id, key, args, result FROM effects ORDER BY seq").fetchall()
        for handle, result, tally in zip(handles, results, tallies, strict=True):
            assert result.stop is Stop.ANSWERED and result.output == f"Migrated {RECORDS} records."
            mine = [(key, args, bytes(body).decode()) for run, key, args, body in rows if run == handle.id]
            records = [f'{{"record": "rec-{i}"}}' for i in range(1, RECORDS + 1)]
            assert [args for _, args, _ in mine] == records, "each record once, in order, in the shared ledger"
            assert len({key for key, _, _ in mine}) == RECORDS
            assert result.transcript_ref is not None
            assert_whole(shared.load(result.transcript_ref), result.output, [body for _, _, body in mine])
            assert tally.hosts("run_tool") | tally.hosts("call_model") <= {"a", "b"} and not tally.failed
        assert interleaved, "some run had model and tool calls on both hosts before the kill"
        retried = [(kind, host) for kind, host, attempt in tallies[handles.index(victim)].in_order if attempt > 1]
        assert ("run_tool", "b") in retried, "the tool call killed on a after its effect was finished by b"
        assert len(rows) == RUNS * RECORDS
    finally:
        database.close()
    for name in "ab":  # nothing on either host's disk: both stores are in PostgreSQL
        assert not list((tmp_path / f"host-{name}").glob("*.db*"))


async def test_two_hosts_with_their_own_sqlite_files_fail_loudly_and_never_hang(dev_env, task_queue, tmp_path):
    hosts = Hosts(dev_env, task_queue, tmp_path, None)
    try:
        handles = await start_runs(dev_env.client, task_queue)

        # Once host a has stored something only this run has (a tool result names its run; the first reply
        # is the same in every run), the rest of the run cannot be read on host b: kill a while steps remain.
        # (A run may have failed already, where an activity moved between hosts on its own.)
        async def only_a_can_read(handle: WorkflowHandle, run: Served) -> bool:
            return run.failed or ("a" in [host for _, host, _ in run.in_order[1:]] and run.steps_to_go() >= 2)

        victim = await first_run_where(
            handles,
            hosts,
            only_a_can_read,
            "a run with something only host a stored, or one failed already",
        )
        hosts.workers["a"].kill()
        outcomes = await settle([outcome(h) for h in handles])
    finally:
        hosts.stop()

    stores = {name: Transcripts(SqliteTranscriptStore(tmp_path / f"host-{name}" / "transcripts.db")) for name in "ab"}
    failures = {h.id: o for h, o in zip(handles, outcomes, strict=True) if isinstance(o, WorkflowFailureError)}
    assert victim.id in failures, "the run that crossed hosts completed without its transcript"
    for run_id, failure in failures.items():
        assert NOT_HERE in failure_text(failure), f"{run_id} failed otherwise: {failure_text(failure)}"
    for result in outcomes:
        if isinstance(result, AgentResult):  # a run that happened to stay readable: its transcript is whole
            assert result.transcript_ref is not None and result.output == f"Migrated {RECORDS} records."
            readable = []
            for store in stores.values():
                try:
                    readable.append(store.load(result.transcript_ref))
                except TranscriptNotFound:
                    continue
            assert readable, "a completed run's transcript is in one of the hosts' stores"
            tool_outputs = [m.content for m in readable[0] if m.role == "tool"]
            assert_whole(readable[0], result.output, tool_outputs)
            assert [o.split(" (")[0] for o in tool_outputs] == [
                f"migrated rec-{i} of {RECORDS}" for i in range(1, RECORDS + 1)
            ]

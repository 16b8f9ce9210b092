"""Durable memory across processes, on the real dev server: a fact written on one worker is recalled by a run
on another (PostgreSQL), a worker SIGKILLed between the write and the answer leaves one version, and the
`courier` example works from the command lines (`starter.py`, `job`) on both stores."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import uuid

from agentic import Stop
from duragent import AgentClient
from duragent._config.settings import Settings
from duragent._ops.cli.job import main as job_main
from duragent._ops.devstack.worker_process import WorkerProcess
from duragent._stores.facts import SqliteFactStore
from duragent._stores.postgres import Database, PostgresFactStore
from duragent._workflows.inputs import Timeouts
from starter import main as starter_main
from tests.conftest import dev_settings, eventually
from tests.support.in_process import run_main

TICKET = "Ticket T-1: customer C-7 prefers BlueDart"
QUESTION = "Which courier does C-7 prefer?"
MEMORY_AGENTS = {"AGENT_MODULES": "examples,tests.support.memory_agents"}


def worker_identities(history) -> set[str]:  # type: ignore[no-untyped-def]
    """The identities (`pid@host`) of the workers that ran a run's activities."""
    return {
        e.activity_task_started_event_attributes.identity
        for e in history.events
        if e.HasField("activity_task_started_event_attributes")
    }


async def test_a_fact_written_on_one_worker_is_recalled_by_a_run_on_another(
    dev_env, task_queue, tmp_path, postgres_url
):
    """Two worker processes with nothing local in common — each its own data directory — share memory
    through PostgreSQL: the second worker answers from what the first one's run remembered."""
    first_host = dataclasses.replace(dev_settings(dev_env, task_queue, tmp_path / "a"), database_url=postgres_url)
    second_host = dataclasses.replace(dev_settings(dev_env, task_queue, tmp_path / "b"), database_url=postgres_url)
    client = AgentClient(dev_env.client, task_queue=task_queue)
    c7 = {"namespace": "C-7"}

    first = WorkerProcess(first_host, log=tmp_path / "worker-a.log").wait_ready()
    try:
        noted = await client.start("courier", TICKET, options=c7)
        assert (
            await asyncio.wait_for(noted.result(), 60)
        ).output == "Noted: C-7 prefers BlueDart (source: ticket T-1)."
    finally:
        assert first.stop() == 0
    second = WorkerProcess(second_host, log=tmp_path / "worker-b.log").wait_ready()
    try:
        asked = await client.start("courier", QUESTION, options=c7)
        answer = await asyncio.wait_for(asked.result(), 60)
    finally:
        assert second.stop() == 0

    assert answer.output == "C-7 prefers BlueDart (from memory; source: ticket T-1)."
    noted_by = worker_identities(await noted.workflow.fetch_history())
    answered_by = worker_identities(await asked.workflow.fetch_history())
    assert {i.split("@")[0] for i in noted_by} == {str(first.pid)}
    assert {i.split("@")[0] for i in answered_by} == {str(second.pid)}
    database = Database(postgres_url)
    try:
        record = PostgresFactStore(database).namespace("C-7").record("preferred_courier")
    finally:
        database.close()
    assert record is not None and (record.run_id, record.source) == (noted.run_id, "ticket T-1")
    assert not list(tmp_path.rglob("facts.db"))  # neither host kept memory of its own


async def test_a_worker_killed_between_the_write_and_the_answer_leaves_one_version(dev_env, task_queue, tmp_path):
    settings = dev_settings(dev_env, task_queue, tmp_path)
    facts = SqliteFactStore(settings.data_dir / "facts.db")
    client = AgentClient(dev_env.client, task_queue=task_queue)
    run_id = f"remember-{uuid.uuid4().hex[:8]}"

    first = WorkerProcess(settings, log=tmp_path / "worker1.log", extra_env=MEMORY_AGENTS).wait_ready()
    try:
        handle = await client.start(
            "t-remember-slowly",
            run_id=run_id,
            options={"namespace": "C-7", "after_write_delay": 5.0},
            timeouts=Timeouts(heartbeat_seconds=2.0),
        )
        await eventually(lambda: facts.path.exists() and len(facts.namespace("C-7").history()) == 1, what="the write")
    finally:
        first.kill()
    description = await handle.describe()
    assert description.status is not None and description.status.name == "RUNNING"  # written, not answered

    second = WorkerProcess(settings, log=tmp_path / "worker2.log", extra_env=MEMORY_AGENTS).wait_ready()
    try:
        result = await asyncio.wait_for(handle.result(), 90)
        history = await handle.workflow.fetch_history()
    finally:
        second.stop()

    assert result.stop is Stop.ANSWERED
    assert result.output is not None and 'preferred_courier = "BlueDart"' in result.output
    [version] = facts.namespace("C-7").history()
    assert (version.run_id, version.write_key, version.forgotten_at) == (run_id, f"{run_id}:1.1", None)
    attempts = [
        e.activity_task_started_event_attributes.attempt
        for e in history.events
        if e.HasField("activity_task_started_event_attributes")
    ]
    assert max(attempts) >= 2  # the remember activity really ran again, on the second worker


def command(program: str, *args: str, settings: Settings) -> tuple[int, str, str]:
    """`starter.py ...` or `job ...` as a user runs it, configured like the worker by the environment: its `main`
    in this process with that environment (tests/support/in_process.py; the worker is the process here)."""
    env = {k: v for k, v in os.environ.items() if k != "AGENT_DATABASE_URL"} | {
        "TEMPORAL_ADDRESS": settings.address,
        "TEMPORAL_NAMESPACE": settings.namespace,
        "TEMPORAL_TASK_QUEUE": settings.task_queue,
        "AGENT_DATA_DIR": str(settings.data_dir),
        "AGENT_LEDGER": str(settings.ledger_path),
    }
    if settings.database_url:
        env["AGENT_DATABASE_URL"] = settings.database_url
    return run_main(starter_main if program == "starter" else job_main, args, env)


async def test_the_courier_example_from_the_command_line(dev_env, task_queue, tmp_path, backend):
    url = backend.url  # None: the SQLite files in the data directory
    settings = dataclasses.replace(dev_settings(dev_env, task_queue, tmp_path), database_url=url)

    async def cli(*args: str, program: str = "starter") -> str:
        code, out, err = await asyncio.to_thread(command, program, *args, settings=settings)
        assert code == 0, err
        return out

    async def ask(task: str) -> str:
        out = await cli("run", "courier", "--task", task, "--namespace", "C-7", "--wait", "--json")
        return json.loads(out)["output"]

    worker = WorkerProcess(settings, log=tmp_path / "worker.log").wait_ready()
    try:
        assert await ask(TICKET) == "Noted: C-7 prefers BlueDart (source: ticket T-1)."
        assert await ask(QUESTION) == "C-7 prefers BlueDart (from memory; source: ticket T-1)."

        [listed] = json.loads(await cli("facts", "--namespace", "C-7", "--json"))
        assert (listed["key"], listed["value"], listed["source"], listed["writer"]) == (
            "preferred_courier",
            "BlueDart",
            "ticket T-1",
            "courier",
        )
        assert listed["run_id"].startswith("courier-") and listed["call_id"] == "1.1"
        text = await cli("facts", "--namespace", "C-7")
        assert 'preferred_courier = "BlueDart"' in text and "source: ticket T-1; written by courier" in text

        said = await cli("facts", "forget", "--namespace", "C-7", "--source", "ticket T-1")
        assert said.strip() == "forgot 1 fact taught by 'ticket T-1' in C-7: preferred_courier"
        assert await ask(QUESTION) == "I don't know which courier C-7 prefers: nothing is remembered about it."
    finally:
        assert worker.stop() == 0

    # The checkpoint runner, on the same store: `job run` teaches it again, `job facts` shows the new source.
    job_db = str(tmp_path / "baseline.db")
    await cli("run", "--agent", "courier", "--task", TICKET, "--namespace", "C-7", "--db", job_db, program="job")
    [again] = json.loads(await cli("facts", "--namespace", "C-7", "--json", program="job"))
    assert (again["value"], again["source"], again["call_id"]) == ("BlueDart", "ticket T-1", "1.1")
    assert again["run_id"] != listed["run_id"]
    versions = backend.fact_store().namespace("C-7").history()
    assert [v.forgotten_at is None for v in versions] == [False, True]  # the forgotten version, and the new one
    assert (settings.data_dir / "facts.db").exists() is (url is None)  # PostgreSQL: no local memory

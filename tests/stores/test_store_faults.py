"""PostgreSQL going away under the stores: a clear, retryable `StoreUnavailable` instead of a hang, and
calls that succeed again once the server is back (the pool reconnects) — in a call, in a running migration
on a real worker process, and at worker start (one error line, a non-zero exit). The server is a real one
this module started, stopped and started again by its pid; never the session's shared server."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import psycopg
import pytest
from temporalio.testing import WorkflowEnvironment

from agentic import Message, Stop
from duragent._config.settings import ROOT
from duragent._ops.devstack.worker_process import WorkerProcess
from duragent._stores import configured as stores
from duragent._stores.postgres import Database, PostgresLedger, PostgresTranscriptStore, StoreUnavailable, describe
from duragent._stores.transcripts import EMPTY, Transcripts
from duragent._workflows.agent import AgentWorkflow
from duragent._workflows.inputs import AgentInput, Timeouts
from tests.conftest import dev_settings, eventually
from tests.support.backends import POSTGRES_TABLES
from tests.support.postgres_server import HOW_TO_GET_ONE, LocalPostgres, scratch_database

# Processes of its own: PostgreSQL servers it stops and starts, and workers.
pytestmark = pytest.mark.system

T = TypeVar("T")
PASSWORD = "s3cret-never-shown"


@pytest.fixture
def server(own_postgres: LocalPostgres) -> Iterator[LocalPostgres]:
    yield own_postgres
    if own_postgres.pid() is None:  # the next test finds it running
        own_postgres.start()


@pytest.fixture
def url(server: LocalPostgres) -> Iterator[str]:
    """A fresh database, reached with a password in the URL (the server trusts local users and ignores it):
    error messages must never show it."""
    with scratch_database(server.url) as plain:
        yield plain.replace("user=postgres", f"user=postgres password={PASSWORD}")


@pytest.fixture
def database(url: str) -> Iterator[Database]:
    database = Database(url, timeout=2.0)
    yield database
    database.close()


def until_it_works(call: Callable[[], T], timeout: float = 90.0) -> T:
    """The server is back: retry as Temporal would retry the activity, until the pool has reconnected."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return call()
        except StoreUnavailable:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def unavailable(call: Callable[[], object], where: str) -> StoreUnavailable:
    with pytest.raises(StoreUnavailable) as caught:
        call()
    message = str(caught.value)
    assert f"PostgreSQL at {where} is unavailable" in message and PASSWORD not in message
    return caught.value


def test_a_stopped_server_is_a_named_retryable_error_and_the_stores_recover(server, database, url) -> None:
    ledger = PostgresLedger(database)
    transcripts = Transcripts(PostgresTranscriptStore(database))
    head = transcripts.append(EMPTY, [Message("user", "before the restart")])
    assert ledger.apply("r/1", run_id="r", tool="t", args={}, perform=lambda: "one") == ("one", True)
    where = database.where
    assert where == f"127.0.0.1:{server.port}/{psycopg.conninfo.conninfo_to_dict(url)['dbname']}"

    server.stop()
    performed: list[str] = []

    def charge() -> str:
        performed.append("charged")
        return "two"

    unavailable(lambda: ledger.apply("r/2", run_id="r", tool="t", args={}, perform=charge), where)
    assert performed == []  # the ledger could not record it, so the effect was not performed
    unavailable(lambda: ledger.effects("r"), where)
    unavailable(lambda: transcripts.append(head, [Message("assistant", "lost?")]), where)
    unavailable(lambda: Transcripts(PostgresTranscriptStore(database)).load(head), where)
    error = unavailable(database.check, where)
    assert "refused" in str(error) or "connect" in str(error)

    server.start()
    result = until_it_works(lambda: ledger.apply("r/2", run_id="r", tool="t", args={}, perform=charge))
    assert result == ("two", True) and performed == ["charged"]
    assert [e.result for e in ledger.effects("r")] == ["one", "two"]  # nothing lost, nothing doubled
    longer = transcripts.append(head, [Message("assistant", "after the restart")])
    assert [m.content for m in Transcripts(PostgresTranscriptStore(database)).load(longer)] == [
        "before the restart",
        "after the restart",
    ]
    database.check()


def test_a_server_down_from_the_start_fails_clearly_and_works_once_it_is_up(server, url) -> None:
    server.stop()
    database = Database(url, timeout=2.0)  # constructing never fails: a worker may start before its database
    try:
        unavailable(database.check, database.where)
        unavailable(lambda: PostgresLedger(database).effects(), database.where)
        with pytest.raises(StoreUnavailable):
            stores.check(url)  # what a worker calls at start: one clear line, then a non-zero exit
        server.start()
        assert until_it_works(lambda: PostgresLedger(database).effects()) == []  # and the tables were created
    finally:
        database.close()
        stores.close_all()


def test_a_refused_connection_fails_the_call_without_waiting_out_the_pool(server, url) -> None:
    """The pool's wait is for a busy pool; a server that refuses connections is answered by the server itself,
    straight away (what `StoreUnavailable` says comes from the refusal, not from the pool giving up)."""
    database = Database(url, timeout=600.0)  # were the call to wait out the pool, this test would take 10 min
    try:
        assert PostgresLedger(database).effects() == []
        server.stop()
        for _ in range(3):  # each call asks again (or is told the answer of a moment ago)
            error = unavailable(lambda: PostgresLedger(database).effects(), database.where)
            assert isinstance(error.__cause__, psycopg.OperationalError), repr(error.__cause__)
            assert "refused" in str(error) or "connect" in str(error)
        server.start()
        assert until_it_works(lambda: PostgresLedger(database).effects()) == []  # a restart still recovers
    finally:
        database.close()


def test_the_schema_is_created_once_even_by_workers_starting_together(server, url) -> None:
    databases = [Database(url, timeout=10.0) for _ in range(4)]
    start = threading.Barrier(len(databases))
    errors: list[BaseException] = []

    def first_use(database: Database) -> None:
        start.wait()
        try:
            database.migrate()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=first_use, args=(d,)) for d in databases]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for d in databases:
        d.close()
    assert errors == []
    with psycopg.connect(url) as db:
        tables = {r[0] for r in db.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
    assert tables == set(POSTGRES_TABLES)


def test_stores_factory_chooses_by_url(server, url, tmp_path: Path) -> None:
    from duragent._config.codec import KeyRing, new_key
    from duragent._stores.encrypted import EncryptedTranscriptStore
    from duragent._stores.facts import SqliteFactStore
    from duragent._stores.ledger import EffectsLedger
    from duragent._stores.postgres import PostgresFactStore
    from duragent._stores.transcripts import SqliteTranscriptStore

    try:
        assert isinstance(stores.open_ledger(None, tmp_path / "ledger.db"), EffectsLedger)
        assert isinstance(stores.open_transcripts(None, tmp_path).store, SqliteTranscriptStore)
        assert (tmp_path / "transcripts.db").exists()
        ledger = stores.open_ledger(url, tmp_path / "unused.db")
        sealed = stores.open_transcripts(url, tmp_path / "unused", KeyRing.parse(f"k1:{new_key()}"))
        assert isinstance(ledger, PostgresLedger) and isinstance(sealed.store, EncryptedTranscriptStore)
        assert ledger.database is sealed.store.inner.database  # type: ignore[attr-defined]  # one pool
        facts = stores.open_facts(url, tmp_path / "unused")
        assert isinstance(facts, PostgresFactStore) and facts.database is ledger.database
        local_facts = stores.open_facts(None, tmp_path)
        assert isinstance(local_facts, SqliteFactStore) and not (tmp_path / "facts.db").exists()  # until used
        assert not (tmp_path / "unused.db").exists() and not (tmp_path / "unused").exists()
        assert stores.migrate(url).created == list(POSTGRES_TABLES)  # opening is lazy
        stores.close_all()  # another process, later: the tables are there
        assert str(stores.migrate(url)).endswith(f"PostgreSQL at {describe(url)}: nothing to do")
        stores.check(url)
        stores.check(None)
    finally:
        stores.close_all()


def test_the_database_url_is_a_setting_whose_password_is_never_printed(monkeypatch) -> None:
    from duragent._config.settings import Settings

    monkeypatch.setenv("AGENT_DATABASE_URL", f"postgresql://agent:{PASSWORD}@db:5432/agents")
    settings = Settings()
    assert settings.database_url == f"postgresql://agent:{PASSWORD}@db:5432/agents"
    assert PASSWORD not in repr(settings)
    monkeypatch.setenv("AGENT_DATABASE_URL", "  ")
    assert Settings().database_url is None  # blank (compose's ${X:-}) means unset: the SQLite files


def test_the_effects_command_reads_the_shared_ledger_and_says_when_it_is_down(server, url, tmp_path: Path) -> None:
    database = Database(url)
    PostgresLedger(database).apply("r/1", run_id="r", tool="charge", args={"n": 1}, perform=lambda: "charged")
    database.close()
    env = {"AGENT_DATABASE_URL": url, "AGENT_DATA_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}

    def effects() -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "starter.py", "effects", "--json"]
        return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)

    shown = effects()
    assert shown.returncode == 0, shown.stderr
    assert [(e["key"], e["result"]) for e in json.loads(shown.stdout)] == [("r/1", "charged")]
    server.stop()
    down = effects()
    assert down.returncode == 1 and down.stdout == ""
    assert down.stderr.startswith(f"error: PostgreSQL at {describe(url)} is unavailable: ")
    assert len(down.stderr.splitlines()) == 1 and PASSWORD not in down.stderr


def test_without_a_server_the_postgres_tests_skip_saying_how_to_get_one(tmp_path: Path) -> None:

    env = {k: v for k, v in os.environ.items() if k != "AGENT_TEST_DATABASE_URL"}
    env["AGENT_TEST_POSTGRES_BIN"] = str(tmp_path / "no-binaries-here")
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/stores/test_ledger.py"]
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    said = [line for line in done.stdout.splitlines() if HOW_TO_GET_ONE in line]
    assert said == [f"NOT RUN: 6 PostgreSQL tests. {HOW_TO_GET_ONE}"], done.stdout  # one line, never silent
    assert "6 passed, 6 deselected" in done.stdout.splitlines()[-1]  # the SQLite half ran


def _worker_env(url: str, env: WorkflowEnvironment, task_queue: str, data_dir: Path) -> dict[str, str]:
    return os.environ | {
        "AGENT_DATABASE_URL": url,
        "TEMPORAL_ADDRESS": env.client.service_client.config.target_host,
        "TEMPORAL_TASK_QUEUE": task_queue,
        "AGENT_DATA_DIR": str(data_dir),
        "PYTHONUNBUFFERED": "1",
    }


async def test_a_worker_whose_database_is_down_at_start_says_so_in_one_line_and_exits_non_zero(
    server, url, dev_env, task_queue, tmp_path: Path
) -> None:
    server.stop()
    done = subprocess.run(
        [sys.executable, "worker.py"],
        cwd=ROOT,
        env=_worker_env(url, dev_env, task_queue, tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith(f"error: PostgreSQL at {describe(url)} is unavailable: ") and "refused" in line
    assert done.stdout == "", "nothing else: no traceback, no reconnection warnings, no 'worker ready'"
    assert PASSWORD not in done.stderr
    assert not list(tmp_path.iterdir()), "and no SQLite file made instead"


async def test_postgresql_restarted_mid_run_the_run_completes_with_each_effect_once(
    server, url, dev_env, task_queue, tmp_path: Path
) -> None:
    """The database goes away under a running migration: its activities fail retryably, naming the database,
    and once it is back the run completes — no record skipped, none migrated twice."""
    database = Database(url)
    ledger = PostgresLedger(database)
    settings = dataclasses.replace(dev_settings(dev_env, task_queue, tmp_path), database_url=url)
    worker = WorkerProcess(settings, log=tmp_path / "worker.log").wait_ready()
    try:
        handle = await dev_env.client.start_workflow(
            AgentWorkflow.run,
            AgentInput(
                agent="migration", options={"records": 6, "step_delay": 1.0}, timeouts=Timeouts(heartbeat_seconds=2)
            ),
            id=f"pg-restart-{uuid.uuid4().hex[:8]}",
            task_queue=task_queue,
        )
        await eventually(lambda: len(ledger.effects(handle.id)) >= 2, what="two records migrated")
        server.stop()

        async def failed_on_the_database() -> bool:
            pending = (await handle.describe()).raw_description.pending_activities
            return any(f"PostgreSQL at {describe(url)} is unavailable" in p.last_failure.message for p in pending)

        await eventually(failed_on_the_database, what="an activity failing retryably on the stopped database")
        server.start()
        result = await asyncio.wait_for(handle.result(), 180)
        history = await handle.fetch_history()
    finally:
        worker.stop()

    assert result.stop is Stop.ANSWERED and result.output == "Migrated 6 records."
    effects = until_it_works(lambda: ledger.effects(handle.id))
    database.close()
    assert [e.args["record"] for e in effects] == [f"rec-{i}" for i in range(1, 7)]  # each once, in order
    assert len({e.key for e in effects}) == 6
    retried = [
        e.activity_task_started_event_attributes.attempt
        for e in history.events
        if e.HasField("activity_task_started_event_attributes")
    ]
    assert max(retried) >= 2, "an activity was retried across the restart"

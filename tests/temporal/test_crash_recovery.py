"""kill -9 proofs on the real dev server: a worker process dies mid-run, a new one finishes the run, and
the effects ledger shows every step's effect exactly once, in order, none skipped."""

from __future__ import annotations

import asyncio
import signal
import uuid

from agentic import Stop
from duragent._ops.devstack.worker_process import WorkerProcess
from duragent._stores.ledger import EffectsLedger
from duragent._workflows.agent import AgentWorkflow
from duragent._workflows.inputs import AgentInput, Timeouts
from tests.conftest import dev_settings, eventually


async def test_migration_survives_sigkill_after_step_two(dev_env, task_queue, tmp_path):
    settings = dev_settings(dev_env, task_queue, tmp_path)
    ledger = EffectsLedger(settings.ledger_path)
    run_id = f"migration-{uuid.uuid4().hex[:8]}"
    first = WorkerProcess(settings, log=tmp_path / "worker1.log").wait_ready()
    try:
        handle = await dev_env.client.start_workflow(
            AgentWorkflow.run,
            AgentInput(
                scenario="migration",
                options=dict(step_delay=1.0),
                timeouts=Timeouts(heartbeat_seconds=2.0),
            ),
            id=run_id,
            task_queue=task_queue,
        )
        await eventually(lambda: len(ledger.effects(run_id)) >= 2, what="step 2's effect")
    finally:
        first.kill()
    assert first.process.returncode == -signal.SIGKILL
    at_kill = ledger.effects(run_id)
    assert 2 <= len(at_kill) < 5, "the kill must land mid-run"

    second = WorkerProcess(settings, log=tmp_path / "worker2.log").wait_ready()
    try:
        result = await asyncio.wait_for(handle.result(), 90)
    finally:
        second.stop()

    effects = ledger.effects(run_id)
    assert result.stop is Stop.ANSWERED
    assert result.output == "Migrated 5 records."
    assert [e.args["record"] for e in effects] == ["rec-1", "rec-2", "rec-3", "rec-4", "rec-5"]
    assert len({e.key for e in effects}) == 5
    assert effects[: len(at_kill)] == at_kill  # steps done before the kill were not executed again
    assert result.trajectory() == ["migrate_record"] * 5


async def test_billing_survives_sigkill_right_after_the_charge(dev_env, task_queue, tmp_path):
    """The worst moment: the charge committed, the worker dies before anyone learns of it."""
    settings = dev_settings(dev_env, task_queue, tmp_path)
    ledger = EffectsLedger(settings.ledger_path)
    run_id = f"billing-{uuid.uuid4().hex[:8]}"
    first = WorkerProcess(settings, log=tmp_path / "worker1.log").wait_ready()
    try:
        handle = await dev_env.client.start_workflow(
            AgentWorkflow.run,
            AgentInput(
                scenario="billing",
                options=dict(after_effect_delay=5.0),
                timeouts=Timeouts(heartbeat_seconds=2.0),
            ),
            id=run_id,
            task_queue=task_queue,
        )
        await eventually(lambda: len(ledger.effects(run_id)) == 1, what="the charge")
    finally:
        first.kill()
    description = await handle.describe()
    assert description.status is not None and description.status.name == "RUNNING"  # no answer yet

    second = WorkerProcess(settings, log=tmp_path / "worker2.log").wait_ready()
    try:
        result = await asyncio.wait_for(handle.result(), 90)
        history = await handle.fetch_history()
    finally:
        second.stop()

    assert result.stop is Stop.ANSWERED
    assert result.output == "Invoice inv-9 is settled."
    assert [e.tool for e in ledger.effects(run_id)] == ["charge"]  # retried, not repeated
    retried = [
        e.activity_task_started_event_attributes.attempt
        for e in history.events
        if e.HasField("activity_task_started_event_attributes")
    ]
    assert max(retried) >= 2  # the charge activity really ran again on the new worker


async def test_the_worker_drains_and_exits_cleanly_on_sigterm(dev_env, task_queue, tmp_path):
    """SIGTERM (a deploy) is not a crash: the worker finishes what it holds, says so, and exits 0."""
    settings = dev_settings(dev_env, task_queue, tmp_path)
    worker = WorkerProcess(settings, log=tmp_path / "worker.log").wait_ready()
    handle = await dev_env.client.start_workflow(
        AgentWorkflow.run, AgentInput(agent="billing"), id=f"term-{uuid.uuid4().hex[:8]}", task_queue=task_queue
    )
    result = await asyncio.wait_for(handle.result(), 60)
    assert result.stop is Stop.ANSWERED
    assert worker.stop() == 0
    assert any(line.startswith("worker stopped") for line in worker.output)


async def test_a_worker_with_a_database_url_keeps_effects_and_transcripts_in_postgres(
    dev_env, task_queue, tmp_path, postgres_url
):
    """AGENT_DATABASE_URL: the worker process writes its ledger and transcripts to PostgreSQL (no SQLite file),
    and a SIGKILLed worker's replacement finishes the run with each effect once."""
    import dataclasses

    import psycopg

    from duragent._stores.postgres import Database, PostgresLedger

    settings = dataclasses.replace(dev_settings(dev_env, task_queue, tmp_path), database_url=postgres_url)
    database = Database(postgres_url)
    ledger = PostgresLedger(database)
    run_id = f"migration-pg-{uuid.uuid4().hex[:8]}"
    first = WorkerProcess(settings, log=tmp_path / "worker1.log").wait_ready()
    try:
        handle = await dev_env.client.start_workflow(
            AgentWorkflow.run,
            AgentInput(agent="migration", options={"step_delay": 1.0}, timeouts=Timeouts(heartbeat_seconds=2.0)),
            id=run_id,
            task_queue=task_queue,
        )
        await eventually(lambda: len(ledger.effects(run_id)) >= 2, what="step 2's effect in PostgreSQL")
    finally:
        first.kill()
    second = WorkerProcess(settings, log=tmp_path / "worker2.log").wait_ready()
    try:
        result = await asyncio.wait_for(handle.result(), 90)
    finally:
        second.stop()

    assert result.output == "Migrated 5 records."
    assert [e.args["record"] for e in ledger.effects(run_id)] == ["rec-1", "rec-2", "rec-3", "rec-4", "rec-5"]
    database.close()
    with psycopg.connect(postgres_url) as db:
        nodes = db.execute("SELECT count(*) FROM transcript_nodes").fetchone()[0]  # type: ignore[index]
    assert nodes >= 10  # the run's transcript, by reference, lives there
    assert not (tmp_path / "ledger.db").exists() and not (tmp_path / "transcripts.db").exists()

"""A dev server stopped and started again on the same database file while runs wait for approvals (the
runbook: docs/operations.md, "Operator actions with the temporal CLI"): the runs still wait, with
the same requests and deadlines; an approval sent after the restart is honoured once; a deadline that falls
after the restart expires when it was due. The worker process keeps running throughout and reconnects by
itself."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentic.approvals import ApprovalPolicy
from duragent import AgentClient, RunHandle
from duragent._config.settings import Settings
from duragent._connection import connect
from duragent._errors import ApprovalRejected, NoPendingApproval
from duragent._ops.devstack import devserver
from duragent._ops.devstack.worker_process import WorkerProcess
from duragent._stores.ledger import EffectsLedger

# Processes of its own: a dev server it stops and starts, and a worker.
pytestmark = pytest.mark.system

DEADLINE = 30  # seconds: far enough to outlast the restart, near enough to see it expire


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[list[devserver.DevServer]]:
    started: list[devserver.DevServer] = []
    yield started
    for server in started:
        server.stop()


async def waiting(run: RunHandle) -> list[tuple[str, str, str]]:
    return [(p.call_id, p.arguments_hash, p.deadline.isoformat()) for p in await run.pending()]


async def test_runs_waiting_for_approvals_outlive_a_dev_server_restart(servers, tmp_path: Path) -> None:
    db = tmp_path / "temporal" / "dev.db"
    servers.append(server := devserver.start_on_free_ports(db, log=tmp_path / "server.log"))
    await devserver.wait_until_serving(server.address)
    settings = Settings(
        address=server.address,
        namespace="default",
        task_queue="agents",
        ledger_path=tmp_path / "ledger.db",
        data_dir=tmp_path,
    )
    ledger = EffectsLedger(settings.ledger_path)
    worker = WorkerProcess(settings, log=tmp_path / "worker.log").wait_ready()
    try:
        agents = AgentClient(await connect(settings))
        approved = await agents.start("refund", approvals=ApprovalPolicy(timeout_seconds=600))
        expiring = await agents.start("refund", approvals=ApprovalPolicy(timeout_seconds=DEADLINE))
        await approved.wait_for_approval()
        await expiring.wait_for_approval()
        before = {run.run_id: await waiting(run) for run in (approved, expiring)}

        server.stop()  # SIGTERM, as an operator stops it; its database file stays
        assert server.process.returncode is not None
        servers.append(restarted := devserver.start(server.port, None, db, log=tmp_path / "server-2.log"))
        await devserver.wait_until_serving(restarted.address)

        agents = AgentClient(await connect(settings))
        approved, expiring = agents.handle(approved.run_id), agents.handle(expiring.run_id)
        assert {run.run_id: await waiting(run) for run in (approved, expiring)} == before, "the same requests"
        assert ledger.effects() == []

        [asked] = await approved.wait_for_approval()
        outcome = await approved.approve(asked.call_id, by="maria", arguments_hash=asked.arguments_hash)
        assert outcome.decision == "approved"
        with pytest.raises((NoPendingApproval, ApprovalRejected)):  # a second approval: refused, never applied
            await approved.approve(asked.call_id, by="maria", arguments_hash=asked.arguments_hash)
        result = await asyncio.wait_for(approved.result(), 60)
        expired = await asyncio.wait_for(expiring.result(), DEADLINE + 60)
        assert worker.process.poll() is None, "one worker throughout: it reconnected by itself"
    finally:
        worker.stop()

    assert result.output == "Refunded order 4471."
    assert [(a.event, a.approver) for a in result.audit] == [("approved", "maria")]
    assert [(e.run_id, e.tool) for e in ledger.effects()] == [(approved.run_id, "refund")], "once"
    [deadline] = [d for _, _, d in before[expiring.run_id]]
    [entry] = expired.audit
    assert entry.event == "expired" and entry.at.isoformat()[:19] == deadline[:19], "when it was due"
    assert expired.blocked_tools() == ["refund"]

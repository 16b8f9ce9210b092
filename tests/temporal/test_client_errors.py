"""`AgentClient` errors are typed: a program tells an unknown run, an agent no worker serves, a
rejected approval, a closed run, a taken id and an unreachable server apart by exception class, each with a
message a person can act on — and none of them changes anything."""

from __future__ import annotations

import dataclasses
import socket
import uuid

import pytest

from agentic import Agent, FakeModel, Registry
from duragent import AgentClient, Settings
from duragent._errors import (
    AgentClientError,
    ApprovalRejected,
    RunAlreadyExists,
    RunClosed,
    RunFailed,
    TemporalUnavailable,
    UnknownAgent,
    UnknownRun,
)
from tests.conftest import new_worker


async def test_an_unknown_run_id_is_unknown_run_for_every_call(skipping_env) -> None:
    agents = AgentClient(skipping_env.client)
    with pytest.raises(UnknownRun, match="no run with id 'nope-"):
        await agents.get(f"nope-{uuid.uuid4().hex[:6]}")
    handle = agents.handle(f"nope-{uuid.uuid4().hex[:6]}")
    for call in (handle.progress, handle.result, handle.cancel):
        with pytest.raises(UnknownRun):
            await call()


async def test_an_agent_no_worker_serves_fails_the_run_as_unknown_agent_naming_the_served_ones(
    skipping_env, ledger, task_queue
) -> None:
    ghost = Agent(FakeModel(["boo"]), Registry(), name="ghost")
    async with new_worker(skipping_env.client, task_queue, ledger):
        run = await AgentClient(skipping_env.client, task_queue=task_queue).start(ghost, "Haunt.")
        with pytest.raises(UnknownAgent) as failed:
            await run.result()
    assert isinstance(failed.value, RunFailed)  # a program catching RunFailed catches it too
    assert "unknown agent 'ghost'" in str(failed.value) and "refund" in str(failed.value)  # names the served


async def test_a_wrong_hash_is_rejected_a_closed_run_is_closed_and_a_taken_id_is_refused(
    skipping_env, ledger, task_queue
) -> None:
    agents = AgentClient(skipping_env.client, task_queue=task_queue)
    run_id = f"refund-{uuid.uuid4().hex[:8]}"
    async with new_worker(skipping_env.client, task_queue, ledger):
        run = await agents.start("refund", run_id=run_id)
        [waiting] = await run.wait_for_approval()
        with pytest.raises(ApprovalRejected, match="hash"):
            await run.approve(waiting.call_id, by="maria", arguments_hash="0" * 64)
        assert [p.call_id for p in await run.pending()] == [waiting.call_id]  # still waiting, undecided
        with pytest.raises(RunAlreadyExists, match="never reused"):
            await agents.start("refund", run_id=run_id)
        await run.approve(waiting.call_id, by="maria", arguments_hash=waiting.arguments_hash)
        result = await run.result()
    assert result.status == "completed" and [e.tool for e in ledger.effects(run_id)] == ["refund"]
    # The audit names the approver and, next to it, the client identity Temporal was told.
    [entry] = result.audit
    assert (entry.event, entry.approver, entry.client) == ("approved", "maria", skipping_env.client.identity)
    assert entry.client  # the SDK's default identity: pid@host
    with pytest.raises(RunClosed, match="already ended"):
        await run.approve(waiting.call_id, by="maria", arguments_hash=waiting.arguments_hash)
    with pytest.raises(RunClosed, match="already ended"):
        await run.cancel()
    assert [e.tool for e in ledger.effects(run_id)] == ["refund"]  # none of it changed anything


async def test_an_unreachable_server_is_temporal_unavailable() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(TemporalUnavailable, match=f"127.0.0.1:{port}") as failed:
        await AgentClient.connect(dataclasses.replace(Settings.from_env(), address=f"127.0.0.1:{port}"))
    assert isinstance(failed.value, AgentClientError)

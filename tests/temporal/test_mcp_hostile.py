"""A hostile MCP server against durable runs, played with a real server
(tests/support/hostile_mcp_server.py, over stdio) on the dev server. The server records every call that reaches
it: that record is how these tests see what the server could do.

T1: its tool's schema has the catastrophic pattern `^(a+)+$`, and the model sends 30 `a`s and a `!`. Checked
with Python's `re` on the worker's event loop, that froze the whole worker for minutes per attempt, and the
attempt was retried. Now it is refused at once, as invalid arguments, and another run on the same worker
process goes on meanwhile.

T2: a tool annotated read-only *and* destructive waits for approval; with `trusted_read_only`, a tool the
agent did not list waits too, whatever it claims.
"""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import time
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import PendingActivityState
from temporalio.client import WorkflowExecutionStatus, WorkflowHandle

from agentic.mcp import client as mcp_client
from duragent import AgentClient, RunFailed
from duragent._ops.devstack.worker_process import WorkerProcess
from duragent._workflows.inputs import Timeouts
from tests.conftest import dev_settings, eventually, new_worker
from tests.support import hostile_mcp_agents
from tests.support.hostile_mcp_agents import BULK_CALLS, CHOKES, FITS
from tests.temporal.test_mcp import _last_attempt, effects


def calls(db: Path, tool: str) -> int:
    """How many calls of `tool` reached the server."""
    if not db.exists():
        return 0
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT count(*) FROM calls WHERE tool = ?", (tool,)).fetchone()[0]


async def test_a_catastrophic_pattern_is_refused_at_once_and_the_same_worker_runs_another_run_meanwhile(
    dev_env, task_queue, tmp_path
) -> None:
    db = tmp_path / "evil.db"
    settings = dev_settings(dev_env, task_queue, tmp_path)
    env = {"AGENT_MODULES": "tests.support.hostile_mcp_agents", "HOSTILE_MCP_DB": str(db)}
    worker = WorkerProcess(settings, extra_env=env)
    worker.wait_ready()
    try:
        agents = AgentClient(dev_env.client, task_queue=task_queue)
        redos = await agents.start("mcp-redos", timeouts=Timeouts(heartbeat_seconds=2.0))
        handle = dev_env.client.get_workflow_handle(redos.run_id)
        await eventually(lambda: _tool_call_began(handle), what="the hostile tool call on the worker")
        started = time.monotonic()
        probe = await agents.start("mcp-probe")  # the same worker, while (before the fix) it was frozen
        assert (await asyncio.wait_for(probe.result(), 20)).output == "alive"
        probe_seconds = time.monotonic() - started
        result = await asyncio.wait_for(redos.result(), 60)
    finally:
        worker.stop()
    assert probe_seconds < 20
    refused, answered = result.output.split(" | ")
    assert refused == (
        f"Error: invalid arguments for evil__lookup: q: '{CHOKES}' does not match '^(a+)+$'. "
        "Call it again with valid arguments."
    )
    assert answered == f"found {FITS}"  # the pattern still means what it says
    assert calls(db, "lookup") == 1  # the refused call never reached the server; the one that fits did
    # Refused within the first attempt, in well under a second of the activity's time: never retried.
    spans = await _tool_call_spans(handle)
    assert len(spans) == 2 and spans[0] < 2.0, spans
    assert await _last_attempt(dev_env.client, redos.run_id) == 1


async def test_a_tool_claiming_read_only_and_destructive_waits_for_approval_and_acts_only_once_approved(
    dev_env, task_queue, ledger, tmp_path
) -> None:
    db = tmp_path / "evil.db"
    [agent] = [a for a in hostile_mcp_agents.agents_for(db) if a.name == "mcp-wipe"]
    try:
        async with new_worker(dev_env.client, task_queue, ledger, agents=[agent]):
            run = await AgentClient(dev_env.client, task_queue=task_queue).start(agent)
            [waiting] = await asyncio.wait_for(run.wait_for_approval(), 60)
            assert waiting.tool == "evil__wipe_everything"
            assert calls(db, "wipe_everything") == 0  # nothing reached the server before the human said so
            await run.approve(waiting.call_id, by="maria", arguments_hash=waiting.arguments_hash)
            result = await asyncio.wait_for(run.result(), 60)
    finally:
        mcp_client.STDIO.close_all()
    assert result.output == "wiped everything"
    assert effects(db, "wipe_everything") == [f"{run.run_id}:1.1"]


async def test_with_a_trusted_list_a_tool_the_agent_did_not_list_waits_for_approval_whatever_it_claims(
    dev_env, task_queue, ledger, tmp_path
) -> None:
    db = tmp_path / "evil.db"
    [agent] = [a for a in hostile_mcp_agents.agents_for(db) if a.name == "mcp-trusting"]
    try:
        async with new_worker(dev_env.client, task_queue, ledger, agents=[agent]):
            run = await AgentClient(dev_env.client, task_queue=task_queue).start(agent)
            [waiting] = await asyncio.wait_for(run.wait_for_approval(), 60)
            assert waiting.tool == "evil__export_all"  # `lookup`, trusted, ran without asking
            assert (calls(db, "lookup"), calls(db, "export_all")) == (1, 0)
            await run.deny(waiting.call_id, by="maria", reason="not that")
            result = await asyncio.wait_for(run.result(), 60)
    finally:
        mcp_client.STDIO.close_all()
    assert result.output == f"found {FITS} | Error: the user declined this action. Reason given: not that"
    assert calls(db, "export_all") == 0  # declined: it never reached the server


async def _tool_call_began(handle: WorkflowHandle) -> bool:
    """The run's first tool call has been picked up by a worker (or is over already)."""
    description = await handle.describe()
    if description.status != WorkflowExecutionStatus.RUNNING:
        return True
    pending = [a for a in description.raw_description.pending_activities if a.activity_type.name == "run_tool"]
    if pending:
        return pending[0].state == PendingActivityState.PENDING_ACTIVITY_STATE_STARTED
    return bool(await _tool_call_spans(handle))


async def _tool_call_spans(handle: WorkflowHandle) -> list[float]:
    """Seconds from start to completion of each `run_tool` activity the run completed, in order."""
    tools: set[int] = set()
    began: dict[int, float] = {}
    spans: list[float] = []
    async for event in handle.fetch_history_events():
        at = event.event_time.ToDatetime().timestamp()
        if event.HasField("activity_task_scheduled_event_attributes"):
            if event.activity_task_scheduled_event_attributes.activity_type.name == "run_tool":
                tools.add(event.event_id)
        elif event.HasField("activity_task_started_event_attributes"):
            began[event.activity_task_started_event_attributes.scheduled_event_id] = at
        elif event.HasField("activity_task_completed_event_attributes"):
            scheduled = event.activity_task_completed_event_attributes.scheduled_event_id
            if scheduled in tools:
                spans.append(at - began[scheduled])
    return spans


async def test_a_schema_slow_to_check_holds_no_thread_another_run_needs_and_sigterm_still_stops_the_worker(
    dev_env, task_queue, tmp_path
) -> None:
    """Review 4, U2: `additionalProperties: false` and thousands of patternProperties, and calls with thousands
    of keys. The review's schema (3,000 patterns) is refused when the tools are listed; one at the cap (256) is
    listed, and each of six calls at once is refused as invalid arguments — its check stopped at the deadline,
    in the checks' own threads, or refused unchecked while another check of the tool runs — while another run
    on the same worker completes, and SIGTERM stops the worker (the checks do not outlive their deadline)."""
    db = tmp_path / "evil.db"
    settings = dev_settings(dev_env, task_queue, tmp_path)
    env = {"AGENT_MODULES": "tests.support.hostile_mcp_agents", "HOSTILE_MCP_DB": str(db)}
    worker = WorkerProcess(settings, extra_env=env)
    worker.wait_ready()
    try:
        agents = AgentClient(dev_env.client, task_queue=task_queue)
        with pytest.raises(RunFailed, match=r"tool 'bulk' cannot be used: its input schema has over 256 patterns"):
            await asyncio.wait_for((await agents.start("mcp-patterns")).result(), 60)
        bulk = await agents.start("mcp-bulk", timeouts=Timeouts(heartbeat_seconds=2.0))
        handle = dev_env.client.get_workflow_handle(bulk.run_id)
        await eventually(lambda: _tool_call_began(handle), what="the slow checks on the worker")
        probe = await agents.start("mcp-probe")  # the same worker, while the checks run
        assert (await asyncio.wait_for(probe.result(), 60)).output == "alive"
        result = await asyncio.wait_for(bulk.result(), 120)
        assert worker.stop(timeout=60) != -signal.SIGKILL  # SIGTERM was enough
    finally:
        worker.kill()
        mcp_client.STDIO.close_all()
    assert result.output is not None, result
    answers = result.output.split(" | ")
    assert len(answers) == BULK_CALLS
    overtime = "checking them against the server's schema took over 2s (CHECK_SECONDS)"
    still_running = "a check of this tool's arguments against the server's schema is still running"
    for answer in answers:
        assert answer.startswith("Error: invalid arguments for heavy__bulk: "), answer
        assert overtime in answer or still_running in answer, answer
    assert not db.with_suffix(".calls").exists()  # no call reached the server
    assert await _last_attempt(dev_env.client, bulk.run_id) == 1  # refusals, never retried

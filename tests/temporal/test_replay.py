"""Histories recorded from the demo agents (tests/histories/*.json) replay without non-determinism with
the current workflow code — what a deploy does to every run in flight."""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from agentic.approvals import ApprovalPolicy, Decision
from duragent._workflows.agent import AgentWorkflow
from duragent._workflows.inputs import AgentInput
from tests.conftest import eventually, new_worker

HISTORIES = sorted((Path(__file__).parent.parent / "histories").glob("*.json"))


def test_there_are_recorded_histories():
    assert len(HISTORIES) >= 4


def started_with(path: Path) -> dict[str, Any]:
    """The input a recorded run started with, as its history holds it (JSON)."""
    started = json.loads(path.read_text())["events"][0]["workflowExecutionStartedEventAttributes"]
    return json.loads(base64.b64decode(started["input"]["payloads"][0]["data"]))


def test_among_them_runs_started_with_the_fields_that_moved_to_the_worker():
    """What runs in flight at a deploy may look like: an input that kept the transcript inline, and one with
    its own handover policy — which its chain followed (replaying it needs that policy: duragent/_workflows/agent.py,
    ENGINE_PATCH). Both replay below, by today's code."""
    by_name = {path.stem: path for path in HISTORIES}
    assert started_with(by_name["trip-inline"])["transcript"] == "inline"
    for run in ("migration-continued-run1", "migration-continued-run2", "migration-continued-run3"):
        assert started_with(by_name[run])["continue_as_new"] == {"max_history_events": 40}


@pytest.mark.parametrize("path", HISTORIES, ids=lambda p: p.stem)
async def test_recorded_history_replays(path: Path):
    history = WorkflowHistory.from_json(f"recorded-{path.stem.split('-run')[0]}", path.read_text())
    replayer = Replayer(workflows=[AgentWorkflow], data_converter=pydantic_data_converter)
    result = await replayer.replay_workflow(history, raise_on_replay_failure=True)
    assert result.replay_failure is None
    assert len(history.events) > 10


# AgentWorkflow runs unsandboxed (the sandbox's per-run re-import was 40 % of the worker's Python CPU).
# The sandbox's guard moves here: every history is also replayed inside it, where a non-deterministic call
# (the clock, randomness, I/O) or an import the sandbox restricts, added to the workflow's code, fails the replay.
def _sandboxed_replayer() -> Replayer:
    return Replayer(
        workflows=[AgentWorkflow],
        data_converter=pydantic_data_converter,
        unsandboxed_workflow_runner=SandboxedWorkflowRunner(),
    )


def test_the_agent_workflow_runs_unsandboxed_and_the_sandboxed_replayer_sandboxes_it():
    assert AgentWorkflow.__temporal_workflow_definition.sandboxed is False  # type: ignore[attr-defined]


@pytest.mark.parametrize("path", HISTORIES, ids=lambda p: p.stem)
async def test_recorded_history_replays_inside_the_sandbox(path: Path):
    history = WorkflowHistory.from_json(f"recorded-{path.stem.split('-run')[0]}", path.read_text())
    result = await _sandboxed_replayer().replay_workflow(history, raise_on_replay_failure=True)
    assert result.replay_failure is None


@pytest.mark.parametrize("agent", ["t-book-then-pay", "t-give-up", "t-big-output"])
async def test_a_fresh_run_replays_inside_the_sandbox(skipping_env, ledger, task_queue, agent: str):
    """Histories made by today's code — an approval declined, a saga's compensations, claim checks — replay
    in the sandbox."""
    input = AgentInput(agent=agent, approvals=ApprovalPolicy(on_decline="abandon"))
    async with new_worker(skipping_env.client, task_queue, ledger):
        handle = await skipping_env.client.start_workflow(
            AgentWorkflow.run, input, id=f"replay-{uuid.uuid4().hex[:10]}", task_queue=task_queue
        )
        if agent == "t-book-then-pay":

            async def pending() -> list[Any]:
                return (await handle.query(AgentWorkflow.approvals)).pending

            await eventually(pending, what="the payment approval")
            [p] = await pending()
            decline = Decision(call_id=p.call_id, approve=False, approver="cfo", arguments_hash=p.arguments_hash)
            await handle.signal(AgentWorkflow.decision, decline)
        await handle.result()
    history = await handle.fetch_history()
    result = await _sandboxed_replayer().replay_workflow(history, raise_on_replay_failure=True)
    assert result.replay_failure is None
    assert len(history.events) > 10

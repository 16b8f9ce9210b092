"""How a worker executes runs is its configuration (`build_worker(engine=EngineOptions(...))`), never a run's
input: each run records its worker's options with its agent's spec, and decides from that record — so a replay
on a worker configured otherwise, or on none, decides the same. Inputs an older client sent may still carry the
fields that moved (`transcript`, `limits`, `continue_as_new`): they are accepted, never sent again, and a new
run ignores them; only a run started with them before they moved replays by them (tests/temporal/test_replay.py)."""

from __future__ import annotations

import uuid
from typing import Any

from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client, WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from agentic import Message, ToolStatus
from duragent._activities.inputs import AgentResult, ContinueAsNewPolicy, DescribedAgent, EngineOptions, TranscriptPart
from duragent._stores.transcripts import EMPTY
from duragent._workflows.agent import ENGINE_PATCH, AgentWorkflow
from duragent._workflows.inputs import AgentInput
from duragent._workflows.transcript import WorkflowTranscript
from tests.conftest import new_worker
from tests.temporal.test_long_runs import runs_of

OLD_CLIENTS_FIELDS = {
    "transcript": "inline",
    "limits": {"tool_output_bytes": 1, "hard_cap_bytes": 2},
    "continue_as_new": {"max_history_events": 12},
}


def is_patch(event: HistoryEvent, patch_id: str) -> bool:
    """A `workflow.patched(patch_id)` marker (the SDK core's: its details name the patch)."""
    marker = event.marker_recorded_event_attributes
    if not event.HasField("marker_recorded_event_attributes") or marker.marker_name != "core_patch":
        return False
    return any(patch_id.encode() in p.data for payloads in marker.details.values() for p in payloads.payloads)


async def recorded_engine(client: Client, history: WorkflowHistory) -> EngineOptions:
    """The engine options the run's describe marker recorded."""
    for event in history.events:
        details = event.marker_recorded_event_attributes.details
        if event.HasField("marker_recorded_event_attributes") and "result" in details:
            [described] = await client.data_converter.decode(details["result"].payloads, [DescribedAgent])
            return described.engine
    raise AssertionError("no describe marker")


async def replays(histories: list[WorkflowHistory]) -> bool:
    replayer = Replayer(workflows=[AgentWorkflow], data_converter=pydantic_data_converter)
    for history in histories:
        result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        if result.replay_failure is not None:
            return False
    return True


async def test_a_run_hands_over_where_its_workers_recorded_options_say(skipping_env, ledger, task_queue) -> None:
    """A worker that hands over at 40 events: the run records that, continues as new by it, and replays on a
    replayer that has no options at all."""
    often = EngineOptions(continue_as_new=ContinueAsNewPolicy(max_history_events=40))
    run_id = f"engine-{uuid.uuid4().hex[:8]}"
    async with new_worker(skipping_env.client, task_queue, ledger, engine=often):
        result: AgentResult = await skipping_env.client.execute_workflow(
            AgentWorkflow.run, AgentInput(agent="migration", options={"records": 12}), id=run_id, task_queue=task_queue
        )
    histories = await runs_of(skipping_env.client, run_id)
    assert result.continued >= 2 and len(histories) == result.continued + 1
    assert [await recorded_engine(skipping_env.client, h) for h in histories] == [often] * len(histories)
    assert all(len(h.events) <= 40 + 30 for h in histories)
    assert not any(is_patch(e, ENGINE_PATCH) for h in histories for e in h.events)  # nothing to tell apart
    assert await replays(histories)


async def test_an_older_clients_input_with_the_moved_fields_runs_as_the_worker_says(
    skipping_env, ledger, task_queue
) -> None:
    """What an older client sent — the whole transcript in state, a 1-byte claim check, a handover at 12 events
    — starts a run like any other: by reference, the worker's limits, its handover policy (5,000 events)."""
    run_id = f"engine-old-{uuid.uuid4().hex[:8]}"
    old_input: dict[str, Any] = {"agent": "migration", "options": {"records": 12}} | OLD_CLIENTS_FIELDS
    async with new_worker(skipping_env.client, task_queue, ledger):
        raw = await skipping_env.client.start_workflow("AgentWorkflow", old_input, id=run_id, task_queue=task_queue)
        result = await skipping_env.client.get_workflow_handle(run_id, result_type=AgentResult).result()
    [history] = await runs_of(skipping_env.client, raw.id)
    assert result.status == "completed" and result.continued == 0
    assert result.transcript_ref is not None and not result.messages  # all of it stored, by reference
    assert len(result.records) == 12 and all(r.status is ToolStatus.OK for r in result.records)  # no 2-byte cap
    # The run asked which rule to follow, and its history says: the new one (a replay follows it again).
    assert [e for e in history.events if is_patch(e, ENGINE_PATCH)]
    assert await replays([history])


def test_the_moved_fields_are_read_but_never_sent_again() -> None:
    input = AgentInput.model_validate({"agent": "billing"} | OLD_CLIENTS_FIELDS)
    assert input.legacy_continue_as_new == ContinueAsNewPolicy(max_history_events=12)
    assert input.model_dump(mode="json") == {"agent": "billing"}
    assert AgentInput(agent="billing").model_dump(mode="json") == {"agent": "billing"}  # defaults are not written


def test_a_transcript_an_older_run_kept_inline_is_handed_whole_to_its_next_activity() -> None:
    """An older run carried its whole transcript in state (`mode: inline`, nothing stored): its next model or tool
    call gets all of it as not stored yet, stores it, and the run goes on by reference."""
    messages = [Message("system", "s"), Message("user", "task"), Message("assistant", "done")]
    carried = WorkflowTranscript.model_validate(
        {"mode": "inline", "messages": [m.model_dump(mode="json") for m in messages], "count": 3}
    )
    assert carried.part() == TranscriptPart(head=EMPTY, unsaved=messages)
    carried.advance("sha256:head", [Message("tool", "result", tool_call_id="1"), Message("user", "go on")])
    assert (carried.head, carried.messages, carried.count) == ("sha256:head", [Message("user", "go on")], 5)

"""What a run recorded: the tool calls its own workflow scheduled, read from its history as the server keeps
it — the record a compensation checks before it undoes anything.

A workflow's `ActivityTaskScheduled` events are commands its own code issued; no client can add one to
another workflow's history. So "run R called tool T with arguments A as call U" is a fact the server
vouches for, once R is known to be an agents' run (`duragent._activities.caller`). The walk goes back along the
run's continue-as-new chain (each run's start event names the one before it) until the call is found.
"""

from __future__ import annotations

from temporalio import activity
from temporalio.api.enums.v1 import EventType

from duragent._activities.inputs import ToolCallInput

RUN_TOOL = "run_tool"


async def recorded_tool_call(workflow_id: str, run_id: str, call_uid: str) -> ToolCallInput | None:
    """The `run_tool` input run `workflow_id` scheduled for call `call_uid`, looking in its execution
    `run_id` and then back along its chain; None if it never scheduled that call."""
    client = activity.client()
    while run_id:
        history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
        activity.heartbeat()
        for event in history.events:
            if event.event_type != EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
                continue
            scheduled = event.activity_task_scheduled_event_attributes
            if scheduled.activity_type.name != RUN_TOOL:
                continue
            [recorded] = await client.data_converter.decode(list(scheduled.input.payloads), [ToolCallInput])
            if recorded.call.identity == call_uid:
                return recorded
        started = history.events[0].workflow_execution_started_event_attributes if history.events else None
        run_id = started.continued_execution_run_id if started is not None else ""
    return None

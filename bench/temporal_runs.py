"""Starting runs on Temporal (ours through `AgentClient`, the floor's raw) and reading step timings and
sizes back from their histories."""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import History, HistoryEvent
from temporalio.client import Client, WorkflowHistory

from agentic import Agent
from duragent._activities.inputs import AgentResult
from duragent._client import AgentClient


@dataclass
class TemporalRun:
    run_id: str
    wall: float  # from the start request to the result, seconds (this process's perf_counter)
    history: WorkflowHistory
    result: Any  # AgentResult for ours, the step count for the floor

    @property
    def step_seconds(self) -> list[float]:
        return step_intervals(self.history.events)

    @property
    def phases(self) -> dict[str, list[float]]:
        return step_phases(self.history.events)


def event_seconds(event: HistoryEvent) -> float:
    """An event's server timestamp, epoch seconds."""
    return event.event_time.seconds + event.event_time.nanos / 1e9


def step_intervals(events: Any) -> list[float]:
    """One agent step = from one model call's scheduling to the next's. The model call is the first
    activity a run schedules (`call_model` in ours, the floor's stand-in in the floor), so the step
    boundaries are the scheduling times of every activity of that type."""
    scheduled = [e for e in events if e.HasField("activity_task_scheduled_event_attributes")]
    if not scheduled:
        return []
    model_type = scheduled[0].activity_task_scheduled_event_attributes.activity_type.name
    marks = [
        event_seconds(e)
        for e in scheduled
        if e.activity_task_scheduled_event_attributes.activity_type.name == model_type
    ]
    return [b - a for a, b in itertools.pairwise(marks)]


# Where a step's time goes, from pairs of events (server clock): a step is two workflow tasks and two
# activities. "Dispatch" is the server handing a task to the worker (transfer queue, matching, the poll);
# "worker" is the worker's own time between picking a task up and reporting it done, round trip included.
PHASES = {
    "workflow task dispatch": (
        EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
        EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
    ),
    "workflow task in the worker": (
        EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
        EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
    ),
    "activity dispatch": (EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED),
    "activity in the worker": (
        EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED,
        EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
    ),
}


def step_phases(events: Any) -> dict[str, list[float]]:
    """Durations of each phase in `PHASES`, from each start event to the next end event after it."""
    out: dict[str, list[float]] = {name: [] for name in PHASES}
    opened: dict[str, float] = {}
    for event in events:
        for name, (begin, end) in PHASES.items():
            if event.event_type == end and name in opened:
                out[name].append(event_seconds(event) - opened.pop(name))
            if event.event_type == begin:
                opened[name] = event_seconds(event)
    return out


def history_bytes(history: WorkflowHistory) -> int:
    """The history as the server serves it: the protobuf `History` of all its events, serialized."""
    return History(events=history.events).ByteSize()


def model_input_bytes(history: WorkflowHistory) -> int:
    """Bytes of the model activities' inputs (the transcript sent with each call) within the history."""
    total = 0
    for event in history.events:
        if event.HasField("activity_task_scheduled_event_attributes"):
            attributes = event.activity_task_scheduled_event_attributes
            if attributes.activity_type.name == "call_model":
                total += attributes.input.ByteSize()
    return total


async def run_ours(
    agents: AgentClient, run_id: str, agent: Agent, options: dict[str, Any], **start: Any
) -> TemporalRun:
    """A run of `agent` on our workers, started and awaited as a user would (`start`: more of
    `AgentClient.start`'s arguments); RunFailed if it fails."""
    started = time.perf_counter()
    run = await agents.start(agent, run_id=run_id, options=options, **start)
    result: AgentResult = await run.result()
    wall = time.perf_counter() - started
    return TemporalRun(run_id, wall, await run.workflow.fetch_history(), result)


async def run_floor(
    client: Client, queue: str, run_id: str, steps: int, workflow: str = "BenchFloorWorkflow"
) -> TemporalRun:
    started = time.perf_counter()
    handle = await client.start_workflow(workflow, steps, id=run_id, task_queue=queue, result_type=int)
    result = await handle.result()
    wall = time.perf_counter() - started
    return TemporalRun(run_id, wall, await handle.fetch_history(), result)

"""A Temporal run's actions, read from its event history: each model call, tool call and undo is one activity,
scheduled with the label the workflow showed (its summary) and closed with a time.

`StepLog` takes events one at a time — all of a run's history at once for `GET /runs/{id}`, or as a long poll
hands them over for the progress stream — so both count steps the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.converter import DataConverter

from duragent._ops.http.views import StepView

# Activity type -> step name (a tool's and an undo's get the tool's name appended).
ACTIONS = {"call_model": "model_call", "run_tool": "tool:", "compensate": "compensate:", "list_mcp_tools": "mcp_tools"}
_CLOSED = {
    EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED: "completed",
    EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED: "failed",
    EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT: "failed",
    EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED: "cancelled",
}
RUN_CLOSED = {
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
}


def event_time(event: HistoryEvent) -> str:
    return event.event_time.ToDatetime(tzinfo=UTC).isoformat(timespec="milliseconds")


@dataclass
class StepLog:
    converter: DataConverter
    steps: list[StepView] = field(default_factory=list)
    started_input: dict[str, Any] | None = None  # the first run's AgentInput, as JSON
    started_at: str | None = None
    cancel_requested: bool = False
    _open: dict[tuple[int, int], int] = field(default_factory=dict)  # (run in chain, scheduled event id) -> index
    _run: int = 0

    @property
    def done(self) -> int:
        return sum(1 for s in self.steps if s.status == "completed")

    @property
    def in_flight(self) -> StepView | None:
        """The action running now (the newest one scheduled and not closed)."""
        return self.steps[max(self._open.values())] if self._open else None

    async def add(self, event: HistoryEvent) -> bool:
        """Take one event; True if the step list changed."""
        kind = event.event_type
        if kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED and self.started_input is None:
            attributes = event.workflow_execution_started_event_attributes
            self.started_at = event_time(event)
            values = await self._decode(list(attributes.input.payloads))
            self.started_input = values[0] if values and isinstance(values[0], dict) else {}
            return False
        if kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED:
            self.cancel_requested = True
            return False
        if kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
            self._run += 1
            return False
        if kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            return await self._scheduled(event)
        if kind == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            attributes = event.activity_task_started_event_attributes
            index = self._open.get((self._run, attributes.scheduled_event_id))
            if index is not None:
                step = self.steps[index]
                self.steps[index] = step.model_copy(
                    update={"started_at": event_time(event), "attempts": attributes.attempt}
                )
            return False
        if kind in _CLOSED:
            name = EventType.Name(kind).removeprefix("EVENT_TYPE_").lower() + "_event_attributes"
            scheduled = getattr(event, name).scheduled_event_id
            index = self._open.pop((self._run, scheduled), None)
            if index is None:
                return False
            update: dict[str, Any] = {"status": _CLOSED[kind], "finished_at": event_time(event)}
            if self.steps[index].started_at is None:
                update["started_at"] = update["finished_at"]
            self.steps[index] = self.steps[index].model_copy(update=update)
            return True
        return False

    async def _scheduled(self, event: HistoryEvent) -> bool:
        attributes = event.activity_task_scheduled_event_attributes
        action = ACTIONS.get(attributes.activity_type.name)
        if action is None:
            return False
        label = ""
        if event.HasField("user_metadata") and event.user_metadata.HasField("summary"):
            decoded = await self._decode([event.user_metadata.summary])
            label = str(decoded[0]) if decoded else ""
        arguments = (await self._decode(list(attributes.input.payloads[:1]))) or [{}]
        payload = arguments[0] if isinstance(arguments[0], dict) else {}
        name, key = _call_of(attributes.activity_type.name, payload)
        self._open[(self._run, event.event_id)] = len(self.steps)
        self.steps.append(
            StepView(
                step=len(self.steps) + 1,
                step_name=action + name if action.endswith(":") else action,
                status="in_progress",
                label=label,
                started_at=None,
                finished_at=None,
                attempts=0,
                idempotency_key=key,
            )
        )
        return True

    async def _decode(self, payloads: list[Any]) -> list[Any]:
        if not payloads:
            return []
        try:
            return list(await self.converter.decode(payloads))
        except Exception:  # a payload this process cannot decode (no codec key): show the step without it
            return []


def _call_of(activity: str, payload: dict[str, Any]) -> tuple[str, str | None]:
    """(tool name, idempotency key) of a tool call's or an undo's activity input."""
    if activity == "run_tool":
        return str(payload.get("call", {}).get("name", "?")), payload.get("idempotency_key")
    if activity == "compensate":
        step = payload.get("step", {})
        return str(step.get("call", {}).get("name", "?")), step.get("key")
    return "", None

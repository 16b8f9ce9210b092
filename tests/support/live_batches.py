"""How many batches the model activity may send a run's live stream (duragent/_activities/live.py), derived from
its schedule and how long the run took: the bound a test holds the batches to, whatever the load."""

from __future__ import annotations

from typing import Any

from temporalio.api.enums.v1 import EventType

from duragent._activities.live import LIVE_BATCH_MAX_SECONDS, LIVE_BATCH_SECONDS


def most_batches(seconds: float) -> int:
    """The most batches one model call writing for `seconds` sends: the first delta at once, one more each
    time the schedule's growing wait has passed, and the last at the call's end."""
    count, waited, wait = 1, 0.0, 0.0
    while True:
        wait = min(max(wait * 1.5, LIVE_BATCH_SECONDS), LIVE_BATCH_MAX_SECONDS)
        if waited + wait > seconds:
            return count + 1
        waited, count = waited + wait, count + 1


def model_calls(events: Any) -> int:
    """How many `call_model` attempts a history scheduled (each sends its own batches)."""
    return sum(
        1
        for e in events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and e.activity_task_scheduled_event_attributes.activity_type.name == "call_model"
    )


async def batch_bound(client: Any, run_id: str, seconds: float) -> int:
    """The most batches a run's model calls may have sent if none took longer than `seconds` (the test's own clock
    around the run: the time-skipping server's event times are not the activities' wall time)."""
    history = await client.get_workflow_handle(run_id).fetch_history()
    return model_calls(history.events) * most_batches(seconds)

"""Runs the peers' way (bench/peer_chat.py) for `python -m bench conversations`: one conversation of `turns` messages
on its own worker (in this process, plain temporalio: no plugin of ours), then its history read back — bytes and
events per execution and per turn, the largest payload, and whether it finished or where Temporal stopped it."""

from __future__ import annotations

import uuid
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.worker import Worker

from bench.peer_chat import SEND_UPDATE, CarriedHistoryChat, model_request, noop


async def measure_peers(target: str, turns_each: list[int]) -> dict[str, Any]:
    client = await Client.connect(target)
    task_queue = f"peer-chat-{uuid.uuid4().hex[:6]}"
    out: dict[str, Any] = {}
    async with Worker(client, task_queue=task_queue, workflows=[CarriedHistoryChat], activities=[model_request, noop]):
        for turns in turns_each:
            out[str(turns)] = figures = await _conversation(client, task_queue, turns)
            print(f"the peers' way, {turns} turns: {figures}", flush=True)
    return {"peers": out}


async def _conversation(client: Client, task_queue: str, turns: int) -> dict[str, Any]:
    workflow_id = f"peer-chat-{turns}-{uuid.uuid4().hex[:6]}"
    handle = await client.start_workflow(CarriedHistoryChat.run, id=workflow_id, task_queue=task_queue)
    answered, error = 0, None
    for n in range(turns):
        try:
            await handle.execute_update(SEND_UPDATE, f"message {n}", result_type=str)
        except Exception as exc:  # the server stopped it (a limit): what the figures report
            error = f"{type(exc).__name__}: {exc}"
            break
        answered += 1
    description = await handle.describe()
    if description.status == WorkflowExecutionStatus.RUNNING:
        await handle.signal(CarriedHistoryChat.close)
        await handle.result()
    history = await handle.fetch_history()
    events = history.events
    ended = events[-1]
    stopped = None
    if ended.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED:
        stopped = ended.workflow_execution_terminated_event_attributes.reason
    elif ended.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
        stopped = ended.workflow_execution_failed_event_attributes.failure.message
    largest_payload = max(
        (
            sum(p.ByteSize() for p in e.activity_task_scheduled_event_attributes.input.payloads)
            for e in events
            if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        ),
        default=0,
    )
    size = sum(e.ByteSize() for e in events)
    return {
        "turns": turns,
        "answered": answered,
        "finished": answered == turns and stopped is None,
        "stopped": stopped or error,
        "events": len(events),
        "bytes": size,
        "bytes_per_turn": size / max(answered, 1),
        "largest_payload_bytes": largest_payload,
    }

"""A delegated run's or a conversation turn's result, read by an activity on the workflow's behalf (Temporal's
child workflows cannot be awaited by id from workflow code: `attach_delegate`, `attach_turn`).

The server's parent link says who started the run; it does not say who answered it. A stranger's workflow worker
polling the agents' task queue can take the run's tasks and complete it with a result of its own choosing. With the
workers' keys, the agents' workers seal a delegated run's result for the run that started it and its own id and first
execution (duragent/_sealing.py), the same seal the parent checks when it awaits the child itself; a result without
that seal is not taken."""

from __future__ import annotations

from collections.abc import Callable

from temporalio import activity
from temporalio.api.workflow.v1 import WorkflowExecutionInfo
from temporalio.client import WorkflowHandle
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError

from duragent._activities.caller import AGENT_WORKFLOW
from duragent._activities.heartbeat import heartbeating
from duragent._activities.inputs import AgentResult
from duragent._activities.result_seal import CHILD_RESULT, STRANGER_ANSWER, result_text, seal_refusal
from duragent._config.worker_keys import WorkerKeys


async def child_result(
    keys: WorkerKeys | None,
    handle: WorkflowHandle[object, RawValue],
    execution: WorkflowExecutionInfo,
    on_cancel: Callable[[], None] | None = None,
) -> AgentResult:
    """The result of the run `handle` names (`execution`: its description, with the server's parent link), once it
    closes, heartbeating meanwhile; with `keys`, only if the agents' workers sealed it for that parent."""
    raw = await heartbeating(handle.result(), on_cancel)
    payload = raw.payload
    if keys is not None:
        parent = execution.parent_execution
        child = f"{handle.id}/{execution.first_run_id or execution.execution.run_id}"
        text = result_text(CHILD_RESULT, AGENT_WORKFLOW, parent.workflow_id, parent.run_id, child, payload)
        why = seal_refusal(keys, payload, text)
        if why is not None:
            raise ApplicationError(
                f"run {handle.id} ended with a result the agents' workers did not make ({why}); nothing of it is "
                "taken: whoever else polls this task queue answered it",
                type=STRANGER_ANSWER,
                non_retryable=True,
            )
    result: AgentResult = activity.payload_converter().from_payload(payload, AgentResult)
    return result

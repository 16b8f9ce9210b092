"""Attaching to a delegated run that already exists: the rare path where a parent's child id is taken when
the parent starts it (the parent was reset to before the child's start, say). Temporal's child workflows
cannot be awaited by id from workflow code, so this activity waits for that run's result through the
worker's client, heartbeating; a cancelled parent cancels it and waits for its compensation to finish.

A run under that id that this parent did not start (someone chose it as a run id) is never adopted: the
call fails, naming it. Who started a run is the server's record (its parent link), never a memo, which
whoever starts a workflow writes. The parent is the run the server reports as the
caller: a stranger's workflow can wait only for its own children. Who answered it is the result's seal
(duragent/_activities/child_result.py).
"""

from __future__ import annotations

import asyncio

from temporalio import activity
from temporalio.client import WorkflowFailureError
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError

from agentic.delegation import child_run_id
from duragent._activities.caller import calling_run, describe
from duragent._activities.child_result import child_result
from duragent._activities.inputs import AgentResult, AttachInput
from duragent._config.worker_keys import WorkerKeys

DELEGATED_BY = "delegated_by"
"""The memo key a child run carries from its start: the parent run and call that started it (for people
reading the run; never trusted: the server's parent link is)."""


def delegated_by(parent_run_id: str, call_id: str) -> dict[str, str]:
    return {"parent": parent_run_id, "call_id": call_id}


class DelegationActivities:
    def __init__(self, worker_keys: WorkerKeys | None = None) -> None:
        self.worker_keys = worker_keys  # with them, the child's result counts only under their seal

    @activity.defn(name="attach_delegate")
    async def attach_delegate(self, input: AttachInput) -> AgentResult:
        parent = calling_run(input.parent_run_id)
        if input.run_id != child_run_id(parent, input.call_id):
            raise ApplicationError(
                f"call {input.call_id} of {parent} delegates to run {child_run_id(parent, input.call_id)}, "
                f"not {input.run_id}; it is not adopted",
                type="DelegateIdTaken",
                non_retryable=True,
            )
        execution = (await describe(input.run_id)).raw_description.workflow_execution_info
        if execution.parent_execution.workflow_id != parent:
            raise ApplicationError(
                f"the run id {input.run_id} is taken by a run that call {input.call_id} of {parent} did not start; "
                "it is not adopted",
                type="DelegateIdTaken",
                non_retryable=True,
            )
        handle = activity.client().get_workflow_handle(input.run_id, result_type=RawValue)

        cancelling: list[asyncio.Future[None]] = []  # kept, so the request is not garbage-collected mid-flight

        def cancel() -> None:  # the parent is being cancelled: so is its child, which then compensates
            cancelling.append(asyncio.ensure_future(handle.cancel(reason="the delegating run was cancelled")))

        try:
            return await child_result(self.worker_keys, handle, execution, cancel)
        except WorkflowFailureError as exc:
            raise ApplicationError(
                f"delegated run {input.run_id} failed: {exc.cause or exc}",
                *getattr(exc.cause, "details", ()),
                type="DelegateFailed",
                non_retryable=True,
            ) from None

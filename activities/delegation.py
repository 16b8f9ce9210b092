"""Attaching to a delegated run that already exists: the rare path where a parent's child id is taken when
the parent starts it (the parent was reset to before the child's start, say). Temporal's child workflows
cannot be awaited by id from workflow code, so this activity waits for that run's result through the
worker's client, heartbeating; a cancelled parent cancels it and waits for its compensation to finish.

A run under that id that this parent's call did not start (someone chose it as a run id) is never adopted:
the call fails, naming it.
"""

from __future__ import annotations

import asyncio

from temporalio import activity
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ApplicationError

from activities.heartbeat import heartbeating
from activities.inputs import AgentResult, AttachInput

DELEGATED_BY = "delegated_by"
"""The memo key a child run carries from its start: the parent run and call that started it."""


def delegated_by(parent_run_id: str, call_id: str) -> dict[str, str]:
    return {"parent": parent_run_id, "call_id": call_id}


class DelegationActivities:
    @activity.defn(name="attach_delegate")
    async def attach_delegate(self, input: AttachInput) -> AgentResult:
        handle = activity.client().get_workflow_handle(input.run_id, result_type=AgentResult)
        description = await handle.describe()
        found = await description.memo_value(DELEGATED_BY, default=None)
        if found != delegated_by(input.parent_run_id, input.call_id):
            raise ApplicationError(
                f"the run id {input.run_id} is taken by a run that call {input.call_id} of {input.parent_run_id} "
                "did not start; it is not adopted",
                type="DelegateIdTaken",
                non_retryable=True,
            )

        cancelling: list[asyncio.Future[None]] = []  # kept, so the request is not garbage-collected mid-flight

        def cancel() -> None:  # the parent is being cancelled: so is its child, which then compensates
            cancelling.append(asyncio.ensure_future(handle.cancel(reason="the delegating run was cancelled")))

        try:
            return await heartbeating(handle.result(), cancel)
        except WorkflowFailureError as exc:
            raise ApplicationError(
                f"delegated run {input.run_id} failed: {exc.cause or exc}",
                *getattr(exc.cause, "details", ()),
                type="DelegateFailed",
                non_retryable=True,
            ) from None

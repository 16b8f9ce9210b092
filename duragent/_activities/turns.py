"""Waiting for a conversation's turn that a previous run of the conversation started: the conversation handed
over (continue-as-new) while the turn ran, and Temporal's child workflows cannot be awaited by id from workflow
code, so this activity awaits the turn's result through the worker's client, heartbeating.

Nothing a stranger sends is taken as a turn's answer: the caller is the conversation the server reports as
scheduling this activity, the run must carry that conversation's turn id, the server must record the
conversation as the run's parent (a link only the server writes, when a workflow starts a child), and — with the
workers' keys — its result must carry their seal (duragent/_activities/child_result.py).
"""

from __future__ import annotations

from pydantic import Field
from temporalio import activity
from temporalio.client import WorkflowFailureError, WorkflowHandle
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError

from agentic.omit_defaults import OmitDefaults
from duragent._activities.caller import calling_run, describe
from duragent._activities.child_result import child_result
from duragent._activities.inputs import AgentResult
from duragent._config.worker_keys import WorkerKeys

CONVERSATION_WORKFLOW = "ConversationWorkflow"  # the activities' own constant (they never import workflow code)


class AttachTurnInput(OmitDefaults):
    run_id: str = Field(description="The turn's run id: `{conversation_id}~turn-{n}`.")


class TurnActivities:
    def __init__(self, worker_keys: WorkerKeys | None = None) -> None:
        self.worker_keys = worker_keys  # with them, the turn's result counts only under their seal

    @activity.defn(name="attach_turn")
    async def attach_turn(self, input: AttachTurnInput) -> AgentResult:
        conversation = calling_run(workflow_type=CONVERSATION_WORKFLOW)
        if not input.run_id.startswith(f"{conversation}~turn-"):
            raise ApplicationError(
                f"run {input.run_id} is not a turn of conversation {conversation}",
                type="TurnIdTaken",
                non_retryable=True,
            )
        execution = (await describe(input.run_id)).raw_description.workflow_execution_info
        if execution.parent_execution.workflow_id != conversation:
            raise ApplicationError(
                f"the run id {input.run_id} is taken by a run that conversation {conversation} did not start; "
                "it is not taken as the turn's answer",
                type="TurnIdTaken",
                non_retryable=True,
            )
        # The SDK's own handle, not the client's subclass: a test environment's wraps `result()` in an unlock of
        # its time skipping, which an activity (itself holding the lock while it runs) must not touch.
        handle = WorkflowHandle(activity.client(), input.run_id, result_type=RawValue)
        try:
            return await child_result(self.worker_keys, handle, execution)
        except WorkflowFailureError as exc:
            raise ApplicationError(
                f"turn run {input.run_id} failed: {exc.cause or exc}", type="TurnFailed", non_retryable=True
            ) from None

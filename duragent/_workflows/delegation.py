"""A delegation on Temporal: the child workflow a run starts for one call, and what its parent records when
the child fails. `AgentWorkflow._delegate` decides (the reservation, the child's input); this starts it.

The child's id is derived from the parent's key for the call (`agentic.delegation.child_run_id`): the start
is in the parent's history, so a retry, a replay or a new worker never starts it again, and
`WorkflowIDReusePolicy.REJECT_DUPLICATE` refuses a second run under that id, open or closed. An id already
taken when the parent starts it (a parent reset to before the start, say) is **attached to**, never
duplicated: an activity awaits that run's result through the worker's client — provided its memo says this
parent's call started it (`duragent/_activities/delegation.py`).
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import ApplicationError, WorkflowAlreadyStartedError

with workflow.unsafe.imports_passed_through():
    from pydantic import ValidationError

    from agentic import Stop, ToolCall, ToolResult, ToolStatus, Usage
    from agentic.delegation import Delegated, failed_text
    from duragent._activities.delegation import DELEGATED_BY, DelegationActivities, delegated_by
    from duragent._activities.inputs import AgentResult, AttachInput
    from duragent._workflows.inputs import AgentInput
    from duragent._workflows.names import WORKFLOW_TYPE
    from duragent._workflows.policies import ATTACH_RETRY


async def run_child(child_id: str, child: AgentInput, parent_run_id: str, call: ToolCall) -> AgentResult:
    """Start the child workflow for `call` (or attach to the one already under its id) and await its result."""
    try:
        handle = await workflow.start_child_workflow(
            WORKFLOW_TYPE,
            child,
            id=child_id,
            result_type=AgentResult,
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
            # Cancelling the parent cancels the child and waits until it has compensated its effects:
            # children are undone before their parent's earlier effects.
            cancellation_type=workflow.ChildWorkflowCancellationType.WAIT_CANCELLATION_COMPLETED,
            # A parent terminated or timed out still leaves no child running: each is asked to stop and
            # undoes its own effects.
            parent_close_policy=workflow.ParentClosePolicy.REQUEST_CANCEL,
            memo={DELEGATED_BY: delegated_by(parent_run_id, call.identity)},
            static_summary=_shortened(f"{child.agent}: {child.task}"),  # the model wrote the task: bound it
            static_details=f"agent **{child.agent}**, delegated by {parent_run_id} (call {call.identity}, "
            f"tool {call.name})",
        )
    except WorkflowAlreadyStartedError:
        return await workflow.execute_activity_method(
            DelegationActivities.attach_delegate,
            AttachInput(run_id=child_id, parent_run_id=parent_run_id, call_id=call.identity),
            start_to_close_timeout=timedelta(days=3650),  # a child may wait days for an approval
            heartbeat_timeout=timedelta(seconds=child.timeouts.heartbeat_seconds),
            retry_policy=ATTACH_RETRY,
            cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
            summary=f"attach to {child_id}",
        )
    return await handle


def failed_child(call: ToolCall, child_id: str, agent: str, exc: BaseException) -> ToolResult:
    """The parent's result for a child that failed (its compensation kept failing, it could not start...):
    the model reads why, and what the child consumed before failing — in a `CompensationFailed` failure's
    details — is still charged; effects it could not undo are reported as not compensable."""
    partial = _partial_result(exc)
    outcome = Delegated(
        run_id=child_id,
        agent=agent,
        stop=partial.stop if partial else Stop.TOOL_FAILED,
        usage=partial.usage if partial else Usage(),
        not_compensable=[s.call.name for s in partial.compensations_remaining] if partial else [],
    )
    failure = _failure(exc)
    why = f"{failure.type}: {failure.message}" if failure is not None and failure.type else str(failure or exc)
    failed = ToolResult.of(call, ToolStatus.ERROR, failed_text(call.name, why))
    return failed.model_copy(update={"delegation": outcome})


def _failure(exc: BaseException) -> ApplicationError | None:
    """The child's own failure (its `CompensationFailed`, `RunRejected`...), the outermost in the chain."""
    inner: BaseException | None = exc
    while inner is not None:
        if isinstance(inner, ApplicationError):
            return inner
        inner = inner.__cause__ or getattr(inner, "cause", None)
    return None


def _partial_result(exc: BaseException) -> AgentResult | None:
    failure = _failure(exc)
    if failure is None or not failure.details:
        return None
    try:
        return AgentResult.model_validate(failure.details[0])
    except ValidationError:
        return None


def _shortened(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"

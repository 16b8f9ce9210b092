"""A conversation's turn as its run sees it: the run starts from the conversation's transcript (by reference)
instead of a transcript of its own — but only when the conversation that holds that transcript started it.

Who started a run is the server's record (`workflow.info().parent`), which no client can set; the turn's id
(`{conversation_id}~turn-{n}`) must name that parent. A client that starts a run with `history_ref` of its own
choosing is refused at the run's first task, before any step.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from duragent._activities.inputs import TranscriptPart
    from duragent._workflows.transcript import WorkflowTranscript


def turn_run_id(conversation_id: str, turn: int) -> str:
    """The run of a conversation's `turn`: deterministic, so a retry, a replay or a continuation never starts a
    second one, and its idempotency keys are unique across the conversation. `~` as in delegated runs' ids: safe
    in URLs (`/runs/{id}`) and on the command line."""
    return f"{conversation_id}~turn-{turn}"


def turn_origin_refusal(run_id: str, parent_id: str | None) -> str | None:
    """Why a run may not start from a conversation's transcript, or None when its parent is that conversation."""
    if parent_id is None:
        return "it names a conversation's transcript (`history_ref`), but a client started it, not a conversation"
    if not run_id.startswith(f"{parent_id}~turn-"):
        return f"it names a conversation's transcript, but run {parent_id!r} started it under another id"
    return None


def continued_transcript(run_id: str, info: workflow.Info, history_ref: TranscriptPart) -> WorkflowTranscript:
    """The turn's transcript: the conversation's so far (stored head, unsaved tail), once its origin is checked."""
    why = turn_origin_refusal(run_id, info.parent.workflow_id if info.parent else None)
    if why is not None:
        raise ApplicationError(f"run {run_id} cannot start: {why}", type="RunRejected", non_retryable=True)
    return WorkflowTranscript(head=history_ref.head, messages=list(history_ref.unsaved))

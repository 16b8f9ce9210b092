"""What `AgentClient` and `RunHandle` raise: one class per thing a caller can act on, each with a message
a person can read. None of them is a Temporal or gRPC exception (the functions at the end turn those into
these); the cause is chained for debugging."""

from __future__ import annotations

from temporalio.client import WorkflowExecutionDescription, WorkflowFailureError, WorkflowUpdateFailedError
from temporalio.exceptions import ActivityError, ApplicationError, ChildWorkflowError
from temporalio.service import RPCError, RPCStatusCode

from duragent._workflows import search_attributes as sa


class AgentClientError(Exception):
    """Base class of every error the client raises on purpose."""


class TemporalUnavailable(AgentClientError):
    """The Temporal server could not be reached (or refused the call)."""


class SearchAttributesMissing(AgentClientError):
    """The server is up but does not know our search attributes (`AgentStatus`, `AgentPendingApprovals`, ...),
    so it refuses a run started with them, or a query naming them. Retrying cannot help: register them, or
    start runs without them. The message says both."""


class UnknownRun(AgentClientError, LookupError):
    """No run with this id in the namespace."""


class RunAlreadyExists(AgentClientError):
    """A run id is forever: reusing one would make new tool calls collide with old idempotency keys."""


class TranscriptUnavailable(AgentClientError, LookupError):
    """A run's transcript is not in the transcript store this process can read (the workers' is elsewhere)."""


class RunClosed(AgentClientError):
    """The run has ended, so it can no longer be approved, denied or cancelled."""

    def __init__(self, message: str, status: str) -> None:
        super().__init__(message)
        self.status = status


class RunFailed(AgentClientError):
    """The run ended in failure (a compensation kept failing, the model call could not succeed...)."""

    def __init__(self, message: str, failure_type: str | None = None) -> None:
        super().__init__(message)
        self.failure_type = failure_type


class UnknownAgent(RunFailed):
    """The workers on the task queue do not serve the agent the run named."""


class WorkerUnavailable(AgentClientError):
    """No worker answered in time (a query or an update): is a worker running on the task queue?"""


class NoPendingApproval(AgentClientError):
    """The run has no pending approval (for that call)."""


class AmbiguousApproval(AgentClientError):
    """Several approvals wait in the run; choose one by call id."""

    def __init__(self, message: str, call_ids: list[str]) -> None:
        super().__init__(message)
        self.call_ids = call_ids


class ApprovalRejected(AgentClientError):
    """The run refused the decision (wrong hash, already decided, expired, unknown call); `reason` says why,
    the message what was refused and why. Nothing changed."""

    def __init__(self, reason: str, message: str | None = None) -> None:
        super().__init__(message or f"rejected: {reason}")
        self.reason = reason


class MessageRefused(AgentClientError, ValueError):
    """A conversation refused a message, nothing sent: `kind` names why (EmptyMessage, MessageTooLong,
    ConversationClosed, StaleTurn, ConversationBusy, OverBudget, UnknownTurn, UnknownModel), the message says it."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.reason = message


# -- from Temporal's exceptions -----------------------------------------------------------------------------


def closed(run_id: str, description: WorkflowExecutionDescription) -> RunClosed:
    ended = description.status.name.lower() if description.status else "closed"
    status = description.typed_search_attributes.get(sa.AGENT_STATUS) or ended
    return RunClosed(f"run {run_id} has already ended ({status}); nothing was changed", status)


def run_failed(run_id: str, exc: WorkflowFailureError) -> RunFailed:
    """The run's own failure (e.g. `CompensationFailed`, `RunRejected`), not the deepest activity error
    under it; UnknownAgent when that is what rejected the run."""
    cause: BaseException | None = exc.cause
    while isinstance(cause, ActivityError | ChildWorkflowError) and cause.cause is not None:
        cause = cause.cause
    types: list[str] = []
    inner: BaseException | None = cause
    while inner is not None:
        if isinstance(inner, ApplicationError) and inner.type:
            types.append(inner.type)
        inner = getattr(inner, "cause", None)
    failure_type = types[0] if types else None
    message = f"run {run_id} failed: {cause or exc}"
    if failure_type == "CompensationFailed":  # its status, as `status`, the runs API and visibility say it
        message = f"run {run_id} ended compensation_failed: {cause}"
    if "UnknownAgent" in types:
        return UnknownAgent(message, "UnknownAgent")
    return RunFailed(message, failure_type)


def refused(exc: WorkflowUpdateFailedError) -> ApprovalRejected:
    """The validator's refusal: its message says what was refused and why; its details, the reason alone."""
    cause = exc.cause
    if isinstance(cause, ApplicationError) and cause.type == "DecisionRejected" and cause.details:
        return ApprovalRejected(str(cause.details[0]), cause.message)
    return ApprovalRejected(str(cause) if cause else str(exc))


def from_rpc(exc: RPCError, what: str) -> AgentClientError:
    """A failed call to the server, as what a caller can act on; `what` says what was being done."""
    if exc.status == RPCStatusCode.INVALID_ARGUMENT and "search attribute" in exc.message.lower():
        return SearchAttributesMissing(
            f"{what}: the server does not know our search attributes ({exc.message}). Register them once per "
            "namespace (`duragent search-attributes`; `duragent.testing` does it for its servers), "
            "or start runs with `search_attributes=False` (their status, step and pending approvals are then "
            "not in visibility)"
        )
    if exc.status in (RPCStatusCode.UNAVAILABLE, RPCStatusCode.DEADLINE_EXCEEDED):
        return TemporalUnavailable(f"{what}: the Temporal server did not answer ({exc.message})")
    if exc.status == RPCStatusCode.NOT_FOUND:
        return UnknownRun(f"{what}: {exc.message}")
    return TemporalUnavailable(f"{what}: {exc.message}")

"""What `AgentClient` and `RunHandle` raise: one class per thing a caller can act on, each with a message
a person can read. Nothing here is a Temporal or gRPC exception; the cause is chained for debugging."""

from __future__ import annotations


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

"""Errors, classified by what a durable runner must do with them.

The classification is the contract with the runners: a *retryable* error is retried with the same
inputs (and the same idempotency key); a *non-retryable* one must end the attempt at once, because
retrying cannot fix it and a workflow that retries it would loop forever.
"""

from __future__ import annotations


class AgenticError(Exception):
    """Base class of every error this package raises on purpose."""


class ModelError(AgenticError):
    """A model call failed. `retryable` says whether the same request may succeed later."""

    retryable: bool = False

    def __init__(self, message: str, *, status: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


class RetryableModelError(ModelError):
    """Rate limits, timeouts, conflicts, server errors, dropped connections."""

    retryable = True


class NonRetryableModelError(ModelError):
    """Bad requests, authentication, unknown models: the same request fails the same way."""


class ContextOverflowError(NonRetryableModelError):
    """The transcript does not fit the model's context window: the same request can never succeed.

    `input_tokens` and `context_window` are the server's numbers when it gave them (else None)."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        input_tokens: int | None = None,
        context_window: int | None = None,
    ) -> None:
        super().__init__(message, status=status)
        self.input_tokens = input_tokens
        self.context_window = context_window


class ModelOutputError(NonRetryableModelError):
    """The model (or provider) answered with something that is not a valid reply."""


class ToolRetry(AgenticError):
    """Raised by a tool for a transient failure: the runner retries it with the same idempotency key."""


class ToolFatal(AgenticError):
    """Raised by a tool for a permanent failure that must abandon the run (not just inform the model)."""


class ToolDefinitionError(AgenticError):
    """A tool was declared wrongly (missing parameter docs, unsupported signature)."""


class ProtectedFactError(AgenticError):
    """A write to a fact key that the model must never be able to set."""

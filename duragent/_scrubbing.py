"""No secret of the worker's in anything its activities return or raise.

An activity's result and its failure become the run's history — what the Web UI, the CLI and a viewer of the
runs API read, what the workflow hands on to the next activity and the model. A provider, an MCP server or
the gateway before it, and a tool's own exception may quote a credential the worker sent (an echoed
`Authorization` header, an HTTP error whose URL carries `?api_key=`). Every activity passes through this
interceptor, so the rule holds for each, whatever it does inside:

- a result quoting a secret the worker holds (`duragent/_config/credentials.py`) is returned with `***` in its
  place, of the same type;
- a failure quoting one, or anything shaped like a credential (`agentic.scrub.shaped`), is raised again as an
  `ApplicationError` with the text masked and its classification kept (type, retryable or not, next retry
  delay), without the chain of causes that may repeat it.

Activities that store what they return before returning it (the transcript store) scrub it there too: what
the next model call reads is the store's copy.
"""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio.exceptions import ApplicationError, CancelledError
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

from agentic.scrub import Scrubber, shaped


class Scrubbing(Interceptor):
    def __init__(self, credentials: Scrubber) -> None:
        self.credentials = credentials

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _ScrubbedActivity(next, self.credentials)


class _ScrubbedActivity(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, credentials: Scrubber) -> None:
        super().__init__(next)
        self.credentials = credentials

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        try:
            result = await self.next.execute_activity(input)
        except (asyncio.CancelledError, CancelledError):
            raise
        except Exception as exc:
            if (masked := scrubbed_failure(exc, self.credentials)) is None:
                raise
            raise masked from None
        return self.credentials.deep(result)


def masked(text: str, credentials: Scrubber) -> str:
    """Error text with the worker's secrets and anything shaped like a credential masked."""
    return shaped(credentials(text))


def scrubbed_failure(exc: BaseException, credentials: Scrubber) -> ApplicationError | None:
    """The failure to raise instead of `exc` when its text (or its causes', or its details) would show a
    secret; None when it shows none."""
    texts = [str(e) for e in _chain(exc)]
    details = list(exc.details) if isinstance(exc, ApplicationError) else []
    if all(masked(t, credentials) == t for t in texts) and credentials.deep(details) is details:
        return None
    if isinstance(exc, ApplicationError):
        text = masked(exc.message, credentials)  # its str() is prefixed with its type
        # `details` may be anything a data converter takes: only its strings are masked (shaped too).
        kept = [masked(d, credentials) if isinstance(d, str) else credentials.deep(d) for d in details]
        return ApplicationError(
            text,
            *kept,
            type=exc.type,
            non_retryable=exc.non_retryable,
            next_retry_delay=exc.next_retry_delay,
            category=exc.category,
        )
    return ApplicationError(masked(str(exc), credentials), type=type(exc).__name__)


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen

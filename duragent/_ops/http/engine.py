"""What a backend implements for the runs API: the app, its tests and its pages use nothing else.

Both engines raise `duragent._ops.http.errors` (404 unknown run, 409 not now, 422 unusable input, 503 unreachable)
and return `duragent._ops.http.views` models, so a client cannot tell which engine answers, except by `engine`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Protocol

from duragent._ops.http.auth import Principal
from duragent._ops.http.views import (
    AuditView,
    DecisionRequest,
    EngineName,
    InboxItem,
    RunListItem,
    RunView,
    StartRequest,
)

# A stream event: ("progress", {step, total, label}) on every change, then ("end", {run_id, status, stop,
# output, error}) once; between them, under Temporal, the run's live events (agentic/live.py) as (type, data,
# offset): the offset is the SSE id a client resumes after.
StreamEvent = tuple[str, dict[str, Any]] | tuple[str, dict[str, Any], int | str]


def unknown_end(run_id: str, error: str) -> dict[str, Any]:
    """The `end` event's data when a stream cannot learn how its run ended: it ends saying why, never hangs."""
    return {"run_id": run_id, "status": "unknown", "stop": None, "output": None, "error": error}


class Engine(Protocol):
    name: EngineName

    async def list_runs(self, *, status: str | None, agent: str | None, limit: int) -> list[RunListItem]: ...

    async def get_run(self, run_id: str) -> RunView: ...

    async def require(self, run_id: str) -> None:
        """RunNotFound unless the run exists (before a stream starts: a 404 is not an event)."""
        ...

    def events(self, run_id: str, after: int | None = None) -> AsyncIterator[StreamEvent]:
        """`after`: the offset of the last live event the client has (its `Last-Event-ID`)."""
        ...

    async def start(self, request: StartRequest) -> str: ...

    async def cancel(self, run_id: str, by: Principal) -> None: ...

    async def decide(self, run_id: str, call_id: str, request: DecisionRequest, by: Principal) -> AuditView: ...

    async def pending(self) -> list[InboxItem]: ...

    async def close(self) -> None: ...

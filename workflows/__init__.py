"""The durable runner: `AgentWorkflow`, and how to reach it — `AgentClient` / `RunHandle` to start, watch,
approve, cancel and wait for runs, `DurableAgentsPlugin` to wire a Temporal client or worker.

The names are imported on first use: the workflow sandbox imports this package, and must not pay for the
client side on every run.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AgentClient",
    "AgentClientError",
    "AmbiguousApproval",
    "ApprovalRejected",
    "DecisionOutcome",
    "DurableAgentsPlugin",
    "NoPendingApproval",
    "RunAlreadyExists",
    "RunClosed",
    "RunFailed",
    "RunHandle",
    "RunSummary",
    "TemporalUnavailable",
    "UnknownAgent",
    "UnknownRun",
    "WorkerUnavailable",
]

_WHERE = {
    "AgentClient": "workflows.client",
    "RunHandle": "workflows.client",
    "DecisionOutcome": "workflows.client",
    "RunSummary": "workflows.client",
    "DurableAgentsPlugin": "workflows.plugin",
}


def __getattr__(name: str) -> Any:
    import importlib

    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    if name in __all__:
        return getattr(importlib.import_module("workflows.errors"), name)
    raise AttributeError(f"module 'workflows' has no attribute {name!r}")

"""Durable AI agents on Temporal: what a program imports to define agents, serve them and drive their runs.

    from duragent import Agent, FakeModel, Registry, tool, AgentClient, DurableAgentsPlugin, build_worker

One `Agent` runs in-process (`agent.run(task)`) and durably: your own `Worker` serves it with
`plugins=[DurableAgentsPlugin(agents=[...], deps=...)]`, beside your workflows (or `build_worker` makes a worker
for the agents alone); `AgentClient` starts, approves, cancels and waits. An agent as one step of your own
workflow: `duragent.workflow.run_agent`. The rest of the library (the agent core in `agentic`, the Temporal code
in `duragent._workflows`/`_activities`, the stores, the command line) sits behind these names.

Configuration comes from the environment (docs/operations.md), read once: `DurableAgentsPlugin()` and
`connect()` read it (`Settings.from_env()`) unless given `Settings`, and what is built from their client —
a worker's `DurableAgentsPlugin(agents=...)`, `build_worker`, `AgentClient` — takes its defaults from there.

A script that uses a client ends with `duragent.run(main())` rather than `asyncio.run(main())`: it exits
cleanly (duragent/_clean_exit.py). Testing agents on Temporal's test servers: `duragent.testing`
(its pytest fixture: `duragent.pytest_plugin`); replaying recorded histories against today's code
before a deploy: `duragent.replay`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Each public name is imported where it lives on first use (PEP 562): a program loads only what it touches.
# The checkpoint runner's `job` needs `run` and the client's errors, not Temporal's worker, the workflows and
# the activities, which `import duragent` loaded whole: a third of every `job` process's start-up CPU.
# tests/ops/test_cli_imports.py keeps it so; tests/temporal/test_public_names.py checks this table against the
# imports below, which are for type checkers and editors.
_HOMES: dict[str, str] = {
    "AgentResult": "duragent._activities.inputs",
    "ContinueAsNewPolicy": "duragent._activities.inputs",
    "EngineOptions": "duragent._activities.inputs",
    "PayloadLimits": "duragent._activities.inputs",
    "Agent": "agentic",
    "Budget": "agentic",
    "ContextOverflowError": "agentic",
    "FakeModel": "agentic",
    "Message": "agentic",
    "Model": "agentic",
    "ModelError": "agentic",
    "ModelOutputError": "agentic",
    "ModelReply": "agentic",
    "ModelSettings": "agentic",
    "NonRetryableModelError": "agentic",
    "Pricing": "agentic",
    "Refuse": "agentic",
    "Registry": "agentic",
    "RetryableModelError": "agentic",
    "Run": "agentic",
    "SendBack": "agentic",
    "Stop": "agentic",
    "Tool": "agentic",
    "ToolCall": "agentic",
    "ToolContext": "agentic",
    "ToolFatal": "agentic",
    "ToolResult": "agentic",
    "ToolRetry": "agentic",
    "ToolSchema": "agentic",
    "ToolStatus": "agentic",
    "Usage": "agentic",
    "final_answer": "agentic",
    "give_up": "agentic",
    "tool": "agentic",
    "tool_call": "agentic",
    "ApprovalPolicy": "agentic.approvals",
    "PendingApproval": "agentic.approvals",
    "MCPServer": "agentic.mcp",
    "Fact": "agentic.memory",
    "FactStore": "agentic.memory",
    "SagaPolicy": "agentic.saga",
    "Settings": "duragent._config.settings",
    "WorkerKeys": "duragent._config.worker_keys",
    "run": "duragent._clean_exit",
    "AgentClient": "duragent._client",
    "DecisionOutcome": "duragent._client",
    "RunHandle": "duragent._client",
    "ConversationHandle": "duragent._conversations",
    "HistoryPage": "duragent._conversations",
    "ConversationView": "duragent._workflows.conversation_inputs",
    "TurnResult": "duragent._workflows.conversation_inputs",
    "ConversationLimits": "agentic.conversation",
    "MessageRefused": "duragent._errors",
    "connect": "duragent._connection",
    "AgentClientError": "duragent._errors",
    "AmbiguousApproval": "duragent._errors",
    "ApprovalRejected": "duragent._errors",
    "NoPendingApproval": "duragent._errors",
    "RunAlreadyExists": "duragent._errors",
    "RunClosed": "duragent._errors",
    "RunFailed": "duragent._errors",
    "SearchAttributesMissing": "duragent._errors",
    "TemporalUnavailable": "duragent._errors",
    "TranscriptUnavailable": "duragent._errors",
    "UnknownAgent": "duragent._errors",
    "UnknownRun": "duragent._errors",
    "WorkerUnavailable": "duragent._errors",
    "DurableAgentsPlugin": "duragent._plugin",
    "RunSummary": "duragent._views",
    "build_worker": "duragent._worker",
    "facts_for": "duragent._stores.configured",
    "MemoryOptions": "duragent._stores.memory_tools",
    "memory_tools": "duragent._stores.memory_tools",
}

if TYPE_CHECKING:
    from agentic import (
        Agent,
        Budget,
        ContextOverflowError,
        FakeModel,
        Message,
        Model,
        ModelError,
        ModelOutputError,
        ModelReply,
        ModelSettings,
        NonRetryableModelError,
        Pricing,
        Refuse,
        Registry,
        RetryableModelError,
        Run,
        SendBack,
        Stop,
        Tool,
        ToolCall,
        ToolContext,
        ToolFatal,
        ToolResult,
        ToolRetry,
        ToolSchema,
        ToolStatus,
        Usage,
        final_answer,
        give_up,
        tool,
        tool_call,
    )
    from agentic.approvals import ApprovalPolicy, PendingApproval
    from agentic.conversation import ConversationLimits
    from agentic.mcp import MCPServer
    from agentic.memory import Fact, FactStore
    from agentic.saga import SagaPolicy
    from duragent._activities.inputs import AgentResult, ContinueAsNewPolicy, EngineOptions, PayloadLimits
    from duragent._clean_exit import run
    from duragent._client import AgentClient, DecisionOutcome, RunHandle
    from duragent._config.settings import Settings
    from duragent._config.worker_keys import WorkerKeys
    from duragent._connection import connect
    from duragent._conversations import ConversationHandle, HistoryPage
    from duragent._errors import (
        AgentClientError,
        AmbiguousApproval,
        ApprovalRejected,
        MessageRefused,
        NoPendingApproval,
        RunAlreadyExists,
        RunClosed,
        RunFailed,
        SearchAttributesMissing,
        TemporalUnavailable,
        TranscriptUnavailable,
        UnknownAgent,
        UnknownRun,
        WorkerUnavailable,
    )
    from duragent._plugin import DurableAgentsPlugin
    from duragent._stores.configured import facts_for
    from duragent._stores.memory_tools import MemoryOptions, memory_tools
    from duragent._views import RunSummary
    from duragent._worker import build_worker
    from duragent._workflows.conversation_inputs import ConversationView, TurnResult

__all__ = [  # noqa: RUF022 (grouped by what a program does with them)
    # defining an agent (the same object runs in-process and durably)
    "Agent",
    "ApprovalPolicy",
    "Budget",
    "FakeModel",
    "MCPServer",
    "Message",
    "Model",
    "ModelReply",
    "ModelSettings",
    "Pricing",
    "Registry",
    "SagaPolicy",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolResult",
    "ToolSchema",
    "ToolStatus",
    "final_answer",  # a scripted model's typed answer
    "give_up",
    "tool",
    "tool_call",
    # checks of answers and arguments (guardrails)
    "Refuse",
    "SendBack",
    # what an in-process run returns, and why it stopped
    "Run",
    "Stop",
    "Usage",
    # memory
    "Fact",
    "FactStore",
    "MemoryOptions",
    "facts_for",
    "memory_tools",
    # serving agents durably, and driving their runs
    "AgentClient",
    "AgentResult",  # what RunHandle.result() returns
    "DecisionOutcome",
    "DurableAgentsPlugin",
    "PendingApproval",
    "RunHandle",
    "RunSummary",
    "Settings",
    "build_worker",
    "connect",
    "EngineOptions",  # build_worker(engine=...): how the worker executes runs
    "ContinueAsNewPolicy",
    "PayloadLimits",
    "WorkerKeys",  # build_worker(worker_keys=...): the workers' own seal keys (AGENT_WORKER_KEYS)
    "run",  # asyncio.run for client scripts: exits cleanly (duragent/_clean_exit.py)
    # conversations (AgentClient.conversation): one durable conversation per user thread
    "ConversationHandle",
    "ConversationLimits",
    "ConversationView",
    "HistoryPage",
    "TurnResult",
    # what tools and models raise
    "ContextOverflowError",
    "ModelError",
    "ModelOutputError",
    "NonRetryableModelError",
    "RetryableModelError",
    "ToolFatal",
    "ToolRetry",
    # what the client raises
    "AgentClientError",
    "AmbiguousApproval",
    "ApprovalRejected",
    "MessageRefused",
    "NoPendingApproval",
    "RunAlreadyExists",
    "RunClosed",
    "RunFailed",
    "SearchAttributesMissing",
    "TemporalUnavailable",
    "TranscriptUnavailable",
    "UnknownAgent",
    "UnknownRun",
    "WorkerUnavailable",
]


# Hidden from type checkers: they see the imports above, so a name missing from them is an error in a user's
# code (tests/typing/public_surface.py, `make lint`), not an `Any`.
if not TYPE_CHECKING:

    def __getattr__(name: str) -> Any:
        try:
            home = _HOMES[name]
        except KeyError:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(home), name)
        globals()[name] = value  # the next lookup is a plain attribute
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

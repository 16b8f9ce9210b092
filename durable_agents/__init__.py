"""Durable AI agents on Temporal: what a program imports to define agents, serve them and drive their runs.

    from durable_agents import Agent, FakeModel, Registry, tool, AgentClient, DurableAgentsPlugin, build_worker

One `Agent` runs in-process (`agent.run(task)`) and durably (a worker built with `build_worker` serves it;
`AgentClient` starts, approves, cancels and waits). The rest of the project (the agent core in `agentic`, the
Temporal code in `workflows`/`activities`, the stores, the command line) sits behind these names.

Configuration comes from the environment (docs/operations.md), read once: `DurableAgentsPlugin()` and
`connect()` read it (`Settings.from_env()`) unless given `Settings`, and what is built from their client —
`build_worker`, `AgentClient` — takes its defaults from there.

A script that uses a client ends with `durable_agents.run(main())` rather than `asyncio.run(main())`: it exits
cleanly (durable_agents/clean_exit.py). Testing agents on Temporal's test servers: `durable_agents.testing`
(its pytest fixture: `durable_agents.pytest_plugin`); replaying recorded histories against today's code
before a deploy: `durable_agents.replay`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Each public name is imported where it lives on first use (PEP 562): a program loads only what it touches.
# The checkpoint runner's `job` needs `run` and the client's errors, not Temporal's worker, the workflows and
# the activities, which `import durable_agents` loaded whole: a third of every `job` process's start-up CPU.
# tests/ops/test_cli_imports.py keeps it so; tests/temporal/test_public_names.py checks this table against the
# imports below, which are for type checkers and editors.
_HOMES: dict[str, str] = {
    "ContinueAsNewPolicy": "activities.inputs",
    "EngineOptions": "activities.inputs",
    "PayloadLimits": "activities.inputs",
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
    "Registry": "agentic",
    "RetryableModelError": "agentic",
    "Run": "agentic",
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
    "give_up": "agentic",
    "tool": "agentic",
    "tool_call": "agentic",
    "ApprovalPolicy": "agentic.approvals",
    "PendingApproval": "agentic.approvals",
    "MCPServer": "agentic.mcp",
    "Fact": "agentic.memory",
    "FactStore": "agentic.memory",
    "SagaPolicy": "agentic.saga",
    "Settings": "config.settings",
    "WorkerKeys": "config.worker_keys",
    "run": "durable_agents.clean_exit",
    "AgentClient": "durable_agents.client",
    "DecisionOutcome": "durable_agents.client",
    "RunHandle": "durable_agents.client",
    "connect": "durable_agents.connection",
    "AgentClientError": "durable_agents.errors",
    "AmbiguousApproval": "durable_agents.errors",
    "ApprovalRejected": "durable_agents.errors",
    "NoPendingApproval": "durable_agents.errors",
    "RunAlreadyExists": "durable_agents.errors",
    "RunClosed": "durable_agents.errors",
    "RunFailed": "durable_agents.errors",
    "SearchAttributesMissing": "durable_agents.errors",
    "TemporalUnavailable": "durable_agents.errors",
    "UnknownAgent": "durable_agents.errors",
    "UnknownRun": "durable_agents.errors",
    "WorkerUnavailable": "durable_agents.errors",
    "DurableAgentsPlugin": "durable_agents.plugin",
    "RunSummary": "durable_agents.views",
    "build_worker": "durable_agents.worker",
    "facts_for": "stores.configured",
    "MemoryOptions": "stores.memory_tools",
    "memory_tools": "stores.memory_tools",
}

if TYPE_CHECKING:
    from activities.inputs import ContinueAsNewPolicy, EngineOptions, PayloadLimits
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
        Registry,
        RetryableModelError,
        Run,
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
        give_up,
        tool,
        tool_call,
    )
    from agentic.approvals import ApprovalPolicy, PendingApproval
    from agentic.mcp import MCPServer
    from agentic.memory import Fact, FactStore
    from agentic.saga import SagaPolicy
    from config.settings import Settings
    from config.worker_keys import WorkerKeys
    from durable_agents.clean_exit import run
    from durable_agents.client import AgentClient, DecisionOutcome, RunHandle
    from durable_agents.connection import connect
    from durable_agents.errors import (
        AgentClientError,
        AmbiguousApproval,
        ApprovalRejected,
        NoPendingApproval,
        RunAlreadyExists,
        RunClosed,
        RunFailed,
        SearchAttributesMissing,
        TemporalUnavailable,
        UnknownAgent,
        UnknownRun,
        WorkerUnavailable,
    )
    from durable_agents.plugin import DurableAgentsPlugin
    from durable_agents.views import RunSummary
    from durable_agents.worker import build_worker
    from stores.configured import facts_for
    from stores.memory_tools import MemoryOptions, memory_tools

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
    "give_up",
    "tool",
    "tool_call",
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
    "run",  # asyncio.run for client scripts: exits cleanly (durable_agents/clean_exit.py)
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
    "NoPendingApproval",
    "RunAlreadyExists",
    "RunClosed",
    "RunFailed",
    "SearchAttributesMissing",
    "TemporalUnavailable",
    "UnknownAgent",
    "UnknownRun",
    "WorkerUnavailable",
]


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

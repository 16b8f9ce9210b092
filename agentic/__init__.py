"""The agent core: one loop, its vocabulary, and the in-process runner."""

from agentic.agent import Agent
from agentic.budget import Budget, Stop, Usage
from agentic.checks import Refuse, SendBack
from agentic.errors import (
    ContextOverflowError,
    ModelError,
    ModelOutputError,
    NonRetryableModelError,
    RetryableModelError,
    ToolFatal,
    ToolRetry,
)
from agentic.handoffs import HandoffRecord
from agentic.loop import AgentLoop, CallModel, Finish, LoopState, RunTool, idempotency_key
from agentic.messages import Message, ToolCall, tool_call
from agentic.models import FakeModel, Model, ModelReply, ModelSettings, Pricing, ToolSchema
from agentic.output import final_answer
from agentic.registry import Registry
from agentic.results import ToolResult, ToolStatus
from agentic.run import Run
from agentic.tools import Tool, ToolContext, ToolSpec, tool
from agentic.verdicts import CheckRecord


def give_up(reason: str) -> ToolCall:
    """A scripted model's way to abandon the task (the loop stops with `Stop.GAVE_UP`)."""
    return tool_call("give_up", {"reason": reason})


__all__ = [
    "Agent",
    "AgentLoop",
    "Budget",
    "CallModel",
    "CheckRecord",
    "ContextOverflowError",
    "FakeModel",
    "Finish",
    "HandoffRecord",
    "LoopState",
    "Message",
    "Model",
    "ModelError",
    "ModelOutputError",
    "ModelReply",
    "ModelSettings",
    "NonRetryableModelError",
    "Pricing",
    "Refuse",
    "Registry",
    "RetryableModelError",
    "Run",
    "RunTool",
    "SendBack",
    "Stop",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolFatal",
    "ToolResult",
    "ToolRetry",
    "ToolSchema",
    "ToolSpec",
    "ToolStatus",
    "Usage",
    "final_answer",
    "give_up",
    "idempotency_key",
    "tool",
    "tool_call",
]

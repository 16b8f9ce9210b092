"""Handoffs: an agent hands the run to another agent, inside the same run (the OpenAI Agents SDK's handoff).

`Agent(handoffs=[billing])` offers the model a `transfer_to_billing` tool. When the model calls it, the loop
makes `billing` the run's active agent: from the next model call on, the model reads billing's system prompt
(in place of the transcript's first message), is offered billing's tools and answers in billing's output type;
the transcript goes on (one transcript), and so do the budget, the approvals, the idempotency keys and the saga.
The loop records each handoff (`HandoffRecord`), and each call records the agent that made it.

What the loop knows of each agent it may hand the run to is a `Role`: plain data, recorded by durable runners
when the run starts (the spec of a handed-to agent comes from the worker, never from the run). Delegation
(`Agent.as_tool`) is the other way to involve another agent: a sub-task with its own run and transcript.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import ConfigDict, Field, NonNegativeInt

from agentic.messages import Message
from agentic.models.base import ModelSettings
from agentic.omit_defaults import OmitDefaults
from agentic.output import OutputSpec
from agentic.tools import ToolSpec

TRANSFER_PREFIX = "transfer_to_"


def transfer_tool_name(agent: str) -> str:
    """`transfer_to_<agent>`, as providers accept a function name (64 characters of `[A-Za-z0-9_-]`)."""
    return (TRANSFER_PREFIX + re.sub(r"[^A-Za-z0-9_-]", "_", agent))[:64]


def transfer_spec(agent: str, description: str = "") -> ToolSpec:
    about = f" ({description})" if description else ""
    return ToolSpec(
        name=transfer_tool_name(agent),
        description=f"Hand the conversation to the agent {agent}{about}: it continues the task from here.",
        parameters={"type": "object", "properties": {}},
        handoff=agent,
    )


class Role(OmitDefaults):
    """What the loop and the runners need of one agent a run may be handed to."""

    model_config = ConfigDict(frozen=True)

    name: str
    system: str = ""
    tools: dict[str, ToolSpec] = Field(default_factory=dict)
    output: OutputSpec | None = None
    output_retries: NonNegativeInt = 2
    model_settings: ModelSettings | None = None


class HandoffRecord(OmitDefaults):
    """One handoff, in order: at which step, which call, from which agent to which."""

    model_config = ConfigDict(frozen=True)

    step: int
    call_id: str
    source: str
    target: str


def handed_text(target: str) -> str:
    return f"Transferred to {target}. {target} continues the task from here."


def as_seen_by(messages: Sequence[Message], system: str) -> list[Message]:
    """The transcript as the active agent's model reads it: its own system prompt in place of the first one."""
    rest = list(messages[1:]) if messages and messages[0].role == "system" else list(messages)
    return [Message(role="system", content=system), *rest] if system else rest

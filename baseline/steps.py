"""A step's identity — its name and input hash — which resume compares with what the loop asks now."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from agentic import Message, Stop, ToolCall
from agentic.approvals import arguments_hash
from agentic.loop import idempotency_key
from agentic.messages import canonical_json
from agentic.saga import CompensationStep
from baseline.store import StepSpec

MODEL = "model_call"
MCP_TOOLS = "mcp_tools"


def digest(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()


def describe(call: ToolCall, limit: int = 80) -> str:
    args = (
        call.arguments if isinstance(call.arguments, str) else ", ".join(f"{k}={v}" for k, v in call.arguments.items())
    )
    text = f"{call.name}({args})"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def model_step(step: int, messages: Sequence[Message], loop_step: int) -> StepSpec:
    return StepSpec(
        step=step, name=MODEL, input_hash=digest([m.to_dict() for m in messages]), label=f"model call {loop_step}"
    )


def tool_step(step: int, run_id: str, call: ToolCall) -> StepSpec:
    return StepSpec(
        step=step,
        name=f"tool:{call.name}",
        input_hash=arguments_hash(call),
        label=describe(call),
        key=idempotency_key(run_id, call.identity),
        call_id=call.identity,
    )


def compensation_step(step: int, plan_step: CompensationStep) -> StepSpec:
    call = plan_step.call
    return StepSpec(
        step=step,
        name=f"compensate:{call.name}",
        input_hash=digest({"tool": call.name, "arguments": call.arguments, "undoes": plan_step.original_key}),
        label=f"undo {describe(call)}",
        key=plan_step.key,
        call_id=call.identity,
    )


def stop_step(step: int, stop: Stop, detail: str) -> StepSpec:
    return StepSpec(
        step=step, name=f"stop:{stop.value}", input_hash=digest({"stop": stop.value, "detail": detail}), label=detail
    )


def mcp_tools_step(step: int, servers: Sequence[str]) -> StepSpec:
    """Listing the agent's MCP tools: the first step of a run whose agent has MCP servers."""
    return StepSpec(
        step=step, name=MCP_TOOLS, input_hash=digest(sorted(servers)), label=f"list MCP tools: {', '.join(servers)}"
    )

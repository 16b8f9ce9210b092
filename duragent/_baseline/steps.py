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
from duragent._baseline.store import StepSpec
from duragent._stores.transcripts import EMPTY, encode, node_of, ref_of

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


class TranscriptHash:
    """A model call's input hash: the head of a hash chain over the transcript sent, the one the Temporal
    side's transcript store uses (`node = sha256(previous node + message ref)`, duragent/_stores/transcripts.py).

    Hashing the whole transcript at every model call cost O(n) per step, O(n^2) over a run; the chain
    hashes each message once, when it is first seen. The head still names the whole transcript — a change
    to any earlier message changes it — so resume detects a different run exactly as before.

    Contract: the runner hands the same list every time and only appends to it. Handed another list (or
    a shorter one, or one whose last hashed message was replaced), the chain starts over from it."""

    def __init__(self) -> None:
        self._head = EMPTY
        self._list: Sequence[Message] | None = None
        self._seen = 0
        self._last: Message | None = None

    def of(self, messages: Sequence[Message]) -> str:
        seen = self._seen
        if messages is not self._list or len(messages) < seen or (seen and messages[seen - 1] is not self._last):
            self._head, self._list, seen = EMPTY, messages, 0
        for message in messages[seen:]:
            self._head = node_of(self._head, ref_of(encode(message)))
        self._seen = len(messages)
        self._last = messages[-1] if messages else None
        return self._head


def model_step(step: int, input_hash: str, loop_step: int) -> StepSpec:
    """`input_hash`: the transcript's `TranscriptHash`."""
    return StepSpec(step=step, name=MODEL, input_hash=input_hash, label=f"model call {loop_step}")


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

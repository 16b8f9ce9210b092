"""Our transcript to pydantic-ai's messages and back: the one place that knows both shapes.

The transcript stays this project's (`Message`, `ToolCall`): what a run records never depends on the model
library's version. What a provider asks to get back verbatim (Anthropic's thinking blocks and their signatures,
Gemini's thought signatures on a text or a function call) is kept in `Message.provider_parts`, in the shape
written here (plain JSON: `kind`, `text`, `signature`, `id`, `provider`, `details`), and rebuilt into the
library's parts on the next call, in the order the provider sent them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ModelResponsePart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from agentic.messages import Message, ToolCall

# The first of a reply's provider parts: which provider wrote them (it alone may be sent them back).
RESPONSE = "response"
THINKING, TEXT, TOOL_CALL = "thinking", "text", "tool_call"


def to_layer(messages: Sequence[Message]) -> list[ModelMessage]:
    """Consecutive system, user and tool messages make one request; each assistant message one response."""
    names = {call.id: call.name for m in messages if m.role == "assistant" for call in m.tool_calls}
    out: list[ModelMessage] = []
    pending: list[ModelRequestPart] = []
    for message in messages:
        if message.role == "assistant":
            if pending:
                out.append(ModelRequest(parts=pending))
                pending = []
            out.append(_response(message))
        elif message.role == "system":
            pending.append(SystemPromptPart(content=message.content))
        elif message.role == "tool":
            call_id = message.tool_call_id or ""
            pending.append(
                ToolReturnPart(tool_name=names.get(call_id, "tool"), content=message.content, tool_call_id=call_id)
            )
        else:
            pending.append(UserPromptPart(content=message.content))
    if pending:
        out.append(ModelRequest(parts=pending))
    return out


def from_layer(response: ModelResponse, call_id: str) -> Message:
    """The assistant message for `response`: its text, its tool calls, and what must go back to the provider.

    `call_id` names calls whose provider gave no id (Gemini often does not): `{call_id}_{position}`, the same on
    a retry of the same call, so a replayed run pairs results with calls as it did."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    parts: list[dict[str, Any]] = []
    opaque = False
    for part in response.parts:
        if isinstance(part, TextPart):
            texts.append(part.content)
            parts.append(_part(TEXT, part, text=part.content))
            opaque = opaque or bool(part.provider_details)
        elif isinstance(part, ThinkingPart):
            parts.append(_part(THINKING, part, text=part.content, signature=part.signature))
            opaque = True
        elif isinstance(part, ToolCallPart):
            ident = part.tool_call_id or f"{call_id}_{len(calls)}"
            calls.append(ToolCall(id=ident, name=part.tool_name, arguments=_arguments(part.args)))
            parts.append(_part(TOOL_CALL, part, call=ident))
            opaque = opaque or bool(part.provider_details)
    content = "".join(texts)
    if not opaque:
        return Message(role="assistant", content=content, tool_calls=calls)
    header = {"kind": RESPONSE, "provider": response.provider_name, "system": response.canonical_system}
    return Message(
        role="assistant",
        content=content,
        tool_calls=calls,
        provider_parts=(_clean(header), *parts),
    )


def _part(kind: str, part: ModelResponsePart, **fields: Any) -> dict[str, Any]:
    row = {
        "kind": kind,
        **fields,
        "id": getattr(part, "id", None),
        "provider": getattr(part, "provider_name", None),
        "details": getattr(part, "provider_details", None) or None,
    }
    return _clean(row)


def _clean(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if v is not None}


def _response(message: Message) -> ModelResponse:
    calls = {call.id: call for call in message.tool_calls}
    if not message.provider_parts:
        plain: list[ModelResponsePart] = [TextPart(content=message.content)] if message.content else []
        plain += [_tool_call(call) for call in message.tool_calls]
        return ModelResponse(parts=plain)
    header, *stored = message.provider_parts
    parts: list[ModelResponsePart] = []
    used: set[str] = set()
    for row in stored:
        kind, common = row.get("kind"), _common(row)
        if kind == THINKING:
            parts.append(ThinkingPart(content=row.get("text", ""), signature=row.get("signature"), **common))
        elif kind == TEXT:
            parts.append(TextPart(content=row.get("text", ""), **common))
        elif kind == TOOL_CALL and (call := calls.get(row.get("call", ""))) is not None:
            parts.append(_tool_call(call, **common))
            used.add(call.id)
    # A call the stored parts do not name (a transcript edited by hand) still goes: the result pairs with it.
    parts += [_tool_call(call) for call in message.tool_calls if call.id not in used]
    return ModelResponse(parts=parts, provider_name=header.get("provider"), canonical_system=header.get("system"))


def _common(row: dict[str, Any]) -> dict[str, Any]:
    return {"id": row.get("id"), "provider_name": row.get("provider"), "provider_details": row.get("details")}


def _tool_call(call: ToolCall, **common: Any) -> ToolCallPart:
    # A malformed request goes back exactly as the model wrote it, as its error message quotes it.
    return ToolCallPart(tool_name=call.name, args=call.arguments, tool_call_id=call.id, **common)


def _arguments(args: object) -> dict[str, Any] | str:
    if args is None or (isinstance(args, str) and not args.strip()):
        return {}
    if isinstance(args, dict):
        return dict(args)
    if not isinstance(args, str):  # a typed dict of the library's own (its tool search): as a plain dict
        return dict(args) if isinstance(args, Mapping) else str(args)
    try:
        parsed = json.loads(args)
    except ValueError:
        return args
    return parsed if isinstance(parsed, dict) else args

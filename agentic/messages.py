"""The transcript's vocabulary: `Message` and `ToolCall`, immutable and serialisable.

A checkpoint is only as good as its rehydration: a tool message that loses its `tool_call_id`, or an
assistant message that loses its `tool_calls`, is a malformed transcript that providers reject. So
`to_dict`/`from_dict` round-trip both exactly, and that is pinned by tests.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentic.omit_defaults import OmitDefaults

Role = Literal["system", "user", "assistant", "tool"]


# Built once: `json.dumps` with any non-default option builds a new encoder on every call (a few µs each, and
# a step encodes a dozen values: each stored message, each tool call's arguments). The encoder keeps no state
# between calls, so threads share it.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def canonical_json(value: Any) -> str:
    """One spelling per value: the basis of repeat detection and of argument hashes."""
    return _CANONICAL.encode(value)


class ToolCall(OmitDefaults):
    """A model's request to run one tool.

    `arguments` is a dict when the model produced valid JSON, or the raw string when it did not, so a
    malformed request is kept (and answered with a readable error) instead of being lost.

    `id` is the provider's id: it pairs the call with its tool message in the transcript, and nothing
    else — providers may repeat ids across turns (some number calls per reply), and a model endpoint is
    not trusted to grant authority. `uid` is the runner's identity for the call (`"{step}.{position}"`),
    assigned by the loop and unique within a run: approvals and idempotency keys derive from it.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    arguments: dict[str, Any] | str = {}
    uid: str = ""

    def __init__(self, id: str = "", name: str = "", arguments: Any = None, **data: Any) -> None:
        super().__init__(id=id, name=name, arguments={} if arguments is None else arguments, **data)

    @property
    def identity(self) -> str:
        """The runner-assigned `uid` once the loop has queued the call; the provider id before that."""
        return self.uid or self.id

    def describe(self, limit: int = 80) -> str:
        """`charge(invoice=inv-9, key=...)`: a one-line label a person can read (Web UI, CLI, checkpoints)."""
        if isinstance(self.arguments, str):
            args = self.arguments
        else:
            args = ", ".join(f"{k}={v}" for k, v in self.arguments.items())
        text = f"{self.name}({args})"
        return text if len(text) <= limit else text[: limit - 1] + "…"

    @property
    def canonical_arguments(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return canonical_json(self.arguments)

    def to_dict(self) -> dict[str, Any]:
        args = self.arguments if isinstance(self.arguments, str) else dict(self.arguments)
        row: dict[str, Any] = {"id": self.id, "name": self.name, "arguments": args}
        if self.uid:
            row["uid"] = self.uid
        return row

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> ToolCall:
        return cls(id=row["id"], name=row["name"], arguments=row.get("arguments", {}), uid=row.get("uid", ""))


class Message(BaseModel):
    """One entry of the transcript. Positional `Message(role, content)` works too."""

    model_config = ConfigDict(frozen=True)

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    content_ref: str | None = None  # set when `content` is a preview of a claim-checked body
    # What a provider asks to be sent back verbatim on the next call and nobody else reads (Anthropic's thinking
    # blocks with their signatures, Gemini's thought signatures): written and read only by the model class that
    # made the reply, in a shape that class owns, so an upgrade of a provider library never changes it. Empty
    # for every other message, and then absent from the stored row (rows recorded before it decode unchanged).
    provider_parts: tuple[dict[str, Any], ...] = Field((), exclude_if=lambda parts: not parts)

    def __init__(
        self,
        role: Role | None = None,
        content: str = "",
        tool_calls: Sequence[ToolCall | Mapping[str, Any]] = (),
        tool_call_id: str | None = None,
        **data: Any,
    ) -> None:
        if role is not None:
            data["role"] = role
        super().__init__(content=content, tool_calls=tuple(tool_calls), tool_call_id=tool_call_id, **data)

    @field_validator("content", mode="before")
    @classmethod
    def _none_content_is_empty(cls, value: Any) -> Any:
        # Providers send `content: null` on pure tool-call turns.
        return "" if value is None else value

    def to_dict(self) -> dict[str, Any]:
        row: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            row["tool_calls"] = [call.to_dict() for call in self.tool_calls]
        if self.tool_call_id is not None:
            row["tool_call_id"] = self.tool_call_id
        if self.content_ref is not None:
            row["content_ref"] = self.content_ref
        if self.provider_parts:
            row["provider_parts"] = [dict(part) for part in self.provider_parts]
        return row

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> Message:
        if "role" not in row:
            raise ValueError(f"a message needs a role; got keys {sorted(row)}")
        return cls(
            role=row["role"],
            content=row.get("content") or "",
            tool_calls=tuple(ToolCall.from_dict(c) for c in row.get("tool_calls") or ()),
            tool_call_id=row.get("tool_call_id"),
            content_ref=row.get("content_ref"),
            provider_parts=tuple(row.get("provider_parts") or ()),
        )


def tool_call(name: str, arguments: Mapping[str, Any] | None = None, id: str = "") -> ToolCall:
    """A tool request for scripting a `FakeModel`; the model assigns an id when none is given."""
    return ToolCall(id=id, name=name, arguments=dict(arguments or {}))

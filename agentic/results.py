"""The outcome of one requested tool call, and the words the model reads about it.

Every way a call can end has exactly one wording, defined here, so the in-process agent, the checkpoint
runner and the Temporal workflow tell the model the same thing.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import ConfigDict, Field

from agentic.budget import Stop
from agentic.delegation import Delegated
from agentic.messages import Message, ToolCall
from agentic.omit_defaults import OmitDefaults

DECLINED_TEXT = "Error: the user declined this action."


class ToolStatus(StrEnum):
    """How one tool call went, as the runner recorded it (`ToolResult.status`, `ToolRecord.status`): `ok`, or
    why not — unknown tool, invalid arguments, an error, a timeout, declined or expired approval, retried out,
    a fatal error, a repeated call, or skipped."""

    OK = "ok"
    UNKNOWN_TOOL = "unknown_tool"
    INVALID_ARGUMENTS = "invalid_arguments"
    ERROR = "error"
    TIMEOUT = "timeout"
    DECLINED = "declined"
    EXPIRED = "expired"
    RETRYABLE = "retryable"
    FATAL = "fatal"
    REPEATED = "repeated"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"  # interrupted mid-flight: whether its effect happened is unknown
    REFUSED = "refused"  # a check refused its arguments: it never ran

    @property
    def blocked(self) -> bool:
        """The tool never ran because nobody approved it."""
        return self in (ToolStatus.DECLINED, ToolStatus.EXPIRED)


class ToolResult(OmitDefaults):
    """What came of a call: `content` is what the model reads; `status` is what runners act on."""

    model_config = ConfigDict(frozen=True)

    call_id: str
    name: str
    content: str
    status: ToolStatus = ToolStatus.OK
    content_ref: str | None = None  # the full output, when `content` is only a preview (claim check)
    delegation: Delegated | None = Field(None, description="A delegation's child run: charged to this run's budget.")

    @property
    def ok(self) -> bool:
        return self.status is ToolStatus.OK

    def to_message(self) -> Message:
        return Message(role="tool", content=self.content, tool_call_id=self.call_id, content_ref=self.content_ref)

    @classmethod
    def of(cls, call: ToolCall, status: ToolStatus, content: str) -> ToolResult:
        return cls(call_id=call.id, name=call.name, content=content, status=status)

    @classmethod
    def not_json(cls, call: ToolCall) -> ToolResult:
        return cls.of(
            call,
            ToolStatus.INVALID_ARGUMENTS,
            f"Error: the arguments for {call.name} are not a JSON object: {str(call.arguments)[:200]!r}. "
            "Call it again with valid JSON arguments.",
        )

    @classmethod
    def invalid_arguments(cls, call: ToolCall, problems: str) -> ToolResult:
        return cls.of(
            call,
            ToolStatus.INVALID_ARGUMENTS,
            f"Error: invalid arguments for {call.name}: {problems}. Call it again with valid arguments.",
        )

    @classmethod
    def declined(cls, call: ToolCall, reason: str | None = None) -> ToolResult:
        text = DECLINED_TEXT if not reason else f"{DECLINED_TEXT} Reason given: {reason}"
        return cls.of(call, ToolStatus.DECLINED, text)

    @classmethod
    def expired(cls, call: ToolCall, waited_seconds: float) -> ToolResult:
        return cls.of(
            call,
            ToolStatus.EXPIRED,
            f"Error: nobody approved this action within {_duration(waited_seconds)}; the approval expired "
            "and the action was not performed. Do not assume it happened; tell the user it needs a new approval.",
        )

    @classmethod
    def repeated(cls, call: ToolCall) -> ToolResult:
        return cls.of(
            call,
            ToolStatus.REPEATED,
            f"Error: {call.name} was already called with these exact arguments in this run; "
            "the repeat was not executed and the run stopped.",
        )

    @classmethod
    def cancelled(cls, call: ToolCall) -> ToolResult:
        return cls.of(call, ToolStatus.CANCELLED, f"Error: {call.name} was interrupted by a cancellation.")

    @classmethod
    def delegated(cls, call: ToolCall, outcome: Delegated, content: str) -> ToolResult:
        """A delegation's result: the child's answer (ok), or why it has none (cancelled, or an error)."""
        if outcome.stop is Stop.ANSWERED:
            status = ToolStatus.OK
        else:
            status = ToolStatus.CANCELLED if outcome.stop is Stop.CANCELLED else ToolStatus.ERROR
        return cls(call_id=call.id, name=call.name, content=content, status=status, delegation=outcome)

    @classmethod
    def skipped(cls, call: ToolCall, why: str) -> ToolResult:
        return cls.of(call, ToolStatus.SKIPPED, f"Error: {call.name} was not executed: {why}.")


def _duration(seconds: float) -> str:
    if seconds % 3600 == 0:
        return f"{int(seconds // 3600)} h"
    if seconds % 60 == 0:
        return f"{int(seconds // 60)} min"
    return f"{seconds:g} s"

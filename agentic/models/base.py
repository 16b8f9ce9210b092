"""The model interface every runner calls, and the reply it returns."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Annotated, Any, Protocol, runtime_checkable

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveInt,
    SerializerFunctionWrapHandler,
    StringConstraints,
    model_serializer,
)

from agentic.messages import Message
from agentic.omit_defaults import OmitDefaults

ToolChoice = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
"""`auto` (the model decides), `required` (some tool), `none` (no tool), or the name of the tool to call."""
TOOL_CHOICE_MODES = frozenset({"auto", "required", "none"})


class ToolSchema(BaseModel):
    """What a model is told about a tool: the function-calling schema, nothing executable."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    parameters: dict[str, Any]


class ModelReply(OmitDefaults):
    """One assistant turn with what it cost. Tokens are as reported by the provider."""

    model_config = ConfigDict(frozen=True)

    message: Message
    input_tokens: NonNegativeInt = 0
    output_tokens: NonNegativeInt = 0
    cost: NonNegativeFloat = 0.0
    refused: str | None = Field(
        None,
        description="Set by `agentic.loop.admitted`: why none of this reply's tool calls may run (over a limit).",
    )


class Pricing(BaseModel):
    """Price per million tokens, in dollars."""

    model_config = ConfigDict(frozen=True)

    input_per_million: NonNegativeFloat = 0.0
    output_per_million: NonNegativeFloat = 0.0

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        total = input_tokens * self.input_per_million + output_tokens * self.output_per_million
        return round(total / 1_000_000, 10)


class ModelSettings(BaseModel):
    """How a model is asked: sampling and which tool it may or must call. `None` leaves the provider's default.

    `tool_choice` is sent whenever tools are offered — a server that is not told may ignore the tools
    entirely (llama.cpp does). `first_tool_choice`, when set, replaces it while the transcript has no
    assistant turn yet: a small model can be made to start with a given tool and then decide for itself.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    @model_serializer(mode="wrap")
    def _only_what_was_set(self, handler: SerializerFunctionWrapHandler) -> Any:
        # Which fields were set explicitly is the meaning of an override: it must survive a trip through
        # JSON (a workflow input, a checkpoint row), so only those are written.
        data = handler(self)
        return {k: v for k, v in data.items() if k in self.model_fields_set} if isinstance(data, dict) else data

    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    seed: int | None = None
    max_tokens: PositiveInt | None = None
    tool_choice: ToolChoice = "auto"
    first_tool_choice: ToolChoice | None = None

    def override(self, other: ModelSettings | None) -> ModelSettings:
        """These settings with the fields `other` sets explicitly taking precedence (a per-call override)."""
        if other is None:
            return self
        return self.model_copy(update={name: getattr(other, name) for name in other.model_fields_set})

    def tool_choice_for(self, messages: Sequence[Message]) -> str:
        if self.first_tool_choice is not None and not any(m.role == "assistant" for m in messages):
            return self.first_tool_choice
        return self.tool_choice


@runtime_checkable
class Model(Protocol):
    """A chat model. `call_index` is the number of model calls this run made before this one.

    Durable runners pass it explicitly, so a scripted model answers the same on a retry, a replay or a
    new worker as it did the first time. `settings`, when given, overrides the model's own `ModelSettings`
    for this call (the fields it sets); a scripted model ignores it.
    """

    name: str

    def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSchema] = (),
        *,
        call_index: int | None = None,
        settings: ModelSettings | None = None,
    ) -> ModelReply: ...


def estimate_tokens(text: str) -> int:
    """A deterministic stand-in for a tokenizer: about four characters a token."""
    return math.ceil(len(text) / 4)


def ask(
    model: Model,
    messages: Sequence[Message],
    tools: Sequence[ToolSchema],
    *,
    call_index: int,
    settings: ModelSettings | None = None,
) -> ModelReply:
    """How every runner calls a model: `settings` only when there are some, so a model written against the
    older protocol (no `settings` keyword) keeps working."""
    if settings is None:
        return model.complete(messages, tools, call_index=call_index)
    return model.complete(messages, tools, call_index=call_index, settings=settings)

"""The model interface every runner calls, and the reply it returns."""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal, Protocol, runtime_checkable

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
from agentic.verdicts import Verdicts

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
    # Of `input_tokens`, those read from the provider's prompt cache, and those written to it (priced differently).
    cache_read_tokens: NonNegativeInt = 0
    cache_write_tokens: NonNegativeInt = 0
    cost: NonNegativeFloat = 0.0
    refused: str | None = Field(
        None,
        description="Set by `agentic.loop.admitted`: why none of this reply's tool calls may run (over a limit).",
    )
    verdicts: Verdicts | None = Field(
        None,
        description="Set by `agentic.checks.judge` where the reply arrives: what the agent's answer type and checks "
        "said of it (recorded with the reply, read by the loop).",
    )


class ModelDelta(OmitDefaults):
    """A piece of a reply as the model writes it, for the people watching: never part of the transcript.

    `text`: a piece of the answer's text. `tool_call`: a piece of the `position`-th tool call's (from 1)
    arguments, with its id and name once known. The reply that `complete` returns is the whole truth; deltas
    only show it early, and a retried call streams again from its start."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["text", "tool_call"]
    text: str = ""
    position: NonNegativeInt = 0
    call_id: str = ""
    name: str = ""
    arguments: str = ""


OnDelta = Callable[[ModelDelta], None]
"""Where a streaming model hands each delta as it arrives (called on the thread that runs `complete`)."""


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

    A model that can stream also accepts `on_delta` (an `OnDelta`): it calls it with each `ModelDelta` as the
    reply is written, and still returns the whole reply. Models without the keyword are called without it.
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


def streams(model: Model) -> bool:
    """Whether `model.complete` takes `on_delta` (a model written before streaming does not)."""
    try:
        return "on_delta" in inspect.signature(model.complete).parameters
    except (TypeError, ValueError):
        return False


def ask(
    model: Model,
    messages: Sequence[Message],
    tools: Sequence[ToolSchema],
    *,
    call_index: int,
    settings: ModelSettings | None = None,
    on_delta: OnDelta | None = None,
) -> ModelReply:
    """How every runner calls a model: `settings` only when there are some, and `on_delta` only to a model that
    streams, so a model written against the older protocol (neither keyword) keeps working."""
    extra: dict[str, Any] = {}
    if settings is not None:
        extra["settings"] = settings
    if on_delta is not None and streams(model):
        extra["on_delta"] = on_delta
    return model.complete(messages, tools, call_index=call_index, **extra)

"""The model interface every runner calls, and the reply it returns."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, NonNegativeFloat, NonNegativeInt

from agentic.messages import Message


class ToolSchema(BaseModel):
    """What a model is told about a tool: the function-calling schema, nothing executable."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    parameters: dict[str, Any]


class ModelReply(BaseModel):
    """One assistant turn with what it cost. Tokens are as reported by the provider."""

    model_config = ConfigDict(frozen=True)

    message: Message
    input_tokens: NonNegativeInt = 0
    output_tokens: NonNegativeInt = 0
    cost: NonNegativeFloat = 0.0


class Pricing(BaseModel):
    """Price per million tokens, in dollars."""

    model_config = ConfigDict(frozen=True)

    input_per_million: NonNegativeFloat = 0.0
    output_per_million: NonNegativeFloat = 0.0

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        total = input_tokens * self.input_per_million + output_tokens * self.output_per_million
        return round(total / 1_000_000, 10)


@runtime_checkable
class Model(Protocol):
    """A chat model. `call_index` is the number of model calls this run made before this one.

    Durable runners pass it explicitly, so a scripted model answers the same on a retry, a replay or a
    new worker as it did the first time.
    """

    name: str

    def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolSchema] = (), *, call_index: int | None = None
    ) -> ModelReply: ...


def estimate_tokens(text: str) -> int:
    """A deterministic stand-in for a tokenizer: about four characters a token."""
    return math.ceil(len(text) / 4)

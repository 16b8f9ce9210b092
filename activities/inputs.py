"""One pydantic input (and output) per activity, so fields can be added without breaking running workflows.

Every scheduled activity writes its input into history, once per step: fields left at their defaults are
omitted from the payload (`exclude_if`), so a long run's history pays only for what differs.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from agentic import Message, ModelReply, ToolCall, ToolResult
from agentic.saga import CompensationStep
from scenarios import ScenarioOptions
from workflows.inputs import ModelChoice, PayloadLimits
from workflows.transcript import TranscriptPart


def _unset(value: Any) -> bool:
    return value is None or value == [] or value == ScenarioOptions() or value == ModelChoice()


class ModelCallInput(BaseModel):
    run_id: str
    scenario: str
    call_index: int = Field(description="Model calls this run made before this one; scripted models key on it.")
    model: ModelChoice = Field(default_factory=ModelChoice, exclude_if=_unset)
    messages: list[Message] = Field(default_factory=list, exclude_if=_unset, description="Inline: the transcript.")
    transcript: TranscriptPart | None = Field(None, exclude_if=_unset, description="By reference.")
    limits: PayloadLimits | None = Field(None, exclude_if=_unset)
    options: ScenarioOptions = Field(default_factory=ScenarioOptions, exclude_if=_unset)


class ModelStep(BaseModel):
    reply: ModelReply
    head: str | None = Field(None, exclude_if=_unset, description="By reference: stored up to and with the reply.")


class ToolCallInput(BaseModel):
    run_id: str
    scenario: str
    call: ToolCall
    idempotency_key: str
    approved: bool | None = Field(None, exclude_if=_unset, description="True once a human approved this call.")
    transcript: TranscriptPart | None = Field(
        None, exclude_if=_unset, description="By reference: where to store the tool's message."
    )
    limits: PayloadLimits | None = Field(None, exclude_if=_unset, description="Claim-check large outputs.")
    options: ScenarioOptions = Field(default_factory=ScenarioOptions, exclude_if=_unset)


class ToolStep(BaseModel):
    result: ToolResult
    head: str | None = Field(None, exclude_if=_unset, description="By reference: stored up to and with the result.")


class CompensationInput(BaseModel):
    run_id: str
    scenario: str
    step: CompensationStep
    options: ScenarioOptions = Field(default_factory=ScenarioOptions, exclude_if=_unset)

"""One pydantic input per activity, so fields can be added without breaking running workflows."""

from __future__ import annotations

from pydantic import BaseModel, Field

from agentic import Message, ToolCall
from agentic.saga import CompensationStep
from scenarios import ScenarioOptions
from workflows.inputs import ModelChoice


class ModelCallInput(BaseModel):
    run_id: str
    scenario: str
    model: ModelChoice
    messages: list[Message]
    call_index: int = Field(description="Model calls this run made before this one; scripted models key on it.")
    options: ScenarioOptions = Field(default_factory=ScenarioOptions)


class ToolCallInput(BaseModel):
    run_id: str
    scenario: str
    call: ToolCall
    idempotency_key: str
    approved: bool | None = Field(None, description="True once a human approved this exact call.")
    options: ScenarioOptions = Field(default_factory=ScenarioOptions)


class CompensationInput(BaseModel):
    run_id: str
    scenario: str
    step: CompensationStep
    options: ScenarioOptions = Field(default_factory=ScenarioOptions)

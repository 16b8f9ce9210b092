"""The workflow's input, result and progress: pydantic models, so fields can be added compatibly."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt

from agentic import Budget, Message, Run, Usage
from agentic.approvals import ApprovalPolicy, AuditEntry, PendingApproval
from agentic.saga import CompensationStep
from scenarios import ScenarioOptions

# completed: answered. abandoned: stopped without an answer, nothing to undo. compensated: stopped
# without an answer, effects undone. compensation_failed: an undo kept failing (the run fails, visibly).
RunStatus = Literal[
    "running", "awaiting_approval", "compensating", "completed", "abandoned", "compensated", "compensation_failed"
]


class ModelChoice(BaseModel):
    """Which model answers: the scenario's scripted `FakeModel`, or an OpenAI-compatible server.

    API keys are never here (this lands in history); the worker reads them from its environment.
    """

    model_config = ConfigDict(frozen=True)

    kind: Literal["scripted", "openai"] = "scripted"
    name: str | None = None
    base_url: str | None = None


class Timeouts(BaseModel):
    """How long an activity may stay silent before Temporal presumes its worker dead and retries it."""

    model_config = ConfigDict(frozen=True)

    heartbeat_seconds: PositiveFloat = 10.0
    model_seconds: PositiveFloat = 120.0
    tool_seconds: PositiveFloat = 600.0


class SagaPolicy(BaseModel):
    """How hard to try each compensation before declaring the run `compensation_failed`."""

    model_config = ConfigDict(frozen=True)

    max_attempts: PositiveInt = 5
    initial_interval_seconds: PositiveFloat = 1.0
    maximum_interval_seconds: PositiveFloat = 30.0


class AgentInput(BaseModel):
    scenario: str
    task: str | None = Field(None, description="Overrides the scenario's task.")
    system: str | None = Field(None, description="Overrides the scenario's system prompt.")
    budget: Budget | None = Field(None, description="Overrides the scenario's budget.")
    history: list[Message] = Field(default_factory=list, description="Earlier transcript, without the system message.")
    consumed: Usage = Field(default_factory=Usage, description="Consumption carried over from an earlier run.")
    options: ScenarioOptions = Field(default_factory=ScenarioOptions)
    model: ModelChoice = Field(default_factory=ModelChoice)
    timeouts: Timeouts = Field(default_factory=Timeouts)
    approvals: ApprovalPolicy = Field(default_factory=ApprovalPolicy)
    saga: SagaPolicy = Field(default_factory=SagaPolicy)


class Progress(BaseModel):
    """What the `progress` query answers: cheap, and never recorded in history."""

    run_id: str
    scenario: str
    status: RunStatus
    step: int
    max_steps: int | None
    label: str
    input_tokens: int
    output_tokens: int
    cost: float
    trajectory: list[str]
    stop: str | None = None
    pending_approvals: list[PendingApproval] = Field(default_factory=list)
    compensations_done: int = 0
    compensations_remaining: list[str] = Field(default_factory=list)


class AgentResult(Run):
    """The in-process `Run`'s fields, plus how the durable run ended."""

    run_id: str
    scenario: str
    status: RunStatus
    audit: list[AuditEntry] = Field(default_factory=list, description="Every approval decision and expiry.")
    compensations_remaining: list[CompensationStep] = Field(default_factory=list)


class ApprovalsView(BaseModel):
    """What the `approvals` query answers: what waits, and everything decided or rejected so far."""

    pending: list[PendingApproval]
    audit: list[AuditEntry]

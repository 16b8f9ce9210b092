"""What a run was started with, stored whole in `runs.options` so a resume needs nothing but the run id."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, NonNegativeFloat, PositiveFloat, PositiveInt

from agentic.approvals import ApprovalPolicy
from scenarios import ScenarioOptions


class RunOptions(BaseModel):
    model_config = ConfigDict(frozen=True)

    scenario: ScenarioOptions = Field(default_factory=ScenarioOptions)
    task: str | None = Field(None, description="Overrides the scenario's task.")
    max_steps: PositiveInt | None = Field(None, description="Overrides the scenario's step budget.")
    approvals: ApprovalPolicy = Field(default_factory=ApprovalPolicy)
    lease_seconds: PositiveFloat = Field(15.0, description="Lease length; renewed every third of it.")
    max_attempts: PositiveInt = Field(5, description="Workers that may take the run before it is dead-lettered.")
    tool_attempts: PositiveInt = Field(3, description="Attempts per tool call (same idempotency key).")
    model_attempts: PositiveInt = Field(3, description="Attempts per model call failing retryably.")
    compensation_attempts: PositiveInt = Field(3, description="Attempts per compensation, per worker.")
    retry_backoff_seconds: NonNegativeFloat = Field(0.2, description="First retry delay; doubles each retry.")
    poll_seconds: PositiveFloat = Field(0.2, description="How often a waiting worker checks approvals/cancel.")

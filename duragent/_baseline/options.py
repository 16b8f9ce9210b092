"""What a run was started with, stored whole in `runs.options` so a resume needs nothing but the run id."""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, NonNegativeFloat, PositiveFloat, PositiveInt

from agentic import Budget, ModelSettings
from agentic.approvals import ApprovalPolicy
from agentic.delegation import Delegation


class RunOptions(BaseModel):
    model_config = ConfigDict(frozen=True)

    options: dict[str, Any] = Field(
        default_factory=dict,
        # `scenario`: what rows written before agents had names called the demo agents' options
        validation_alias=AliasChoices("options", "scenario"),
        description="The agent's own per-run options, validated by its options model (opaque here).",
    )
    model: str | None = Field(None, description="A model this process declares, by name; None: the agent's.")
    model_settings: ModelSettings | None = Field(None, description="Overrides fields of the agent's model settings.")
    task: str | None = Field(None, description="Overrides the agent's task.")
    history_from: str | None = Field(
        None,
        description="A conversation's previous turn: that run's transcript (its system message aside) is this"
        " run's history, rebuilt from its steps (duragent/_baseline/conversation.py).",
    )
    max_steps: PositiveInt | None = Field(None, description="Overrides the agent's step budget.")
    budget: Budget | None = Field(
        None, description="Overrides the agent's whole budget (a delegated run's reservation)."
    )
    delegation: Delegation | None = Field(None, description="Set on a delegated run: the run and call above it.")
    approvals: ApprovalPolicy | None = Field(None, description="Overrides the agent's approval policy.")
    lease_seconds: PositiveFloat = Field(15.0, description="Lease length; renewed every third of it.")
    max_attempts: PositiveInt = Field(5, description="Workers that may take the run before it is dead-lettered.")
    tool_attempts: PositiveInt = Field(3, description="Attempts per tool call (same idempotency key).")
    model_attempts: PositiveInt = Field(3, description="Attempts per model call failing retryably.")
    compensation_attempts: PositiveInt = Field(3, description="Attempts per compensation, per worker.")
    retry_backoff_seconds: NonNegativeFloat = Field(0.2, description="First retry delay; doubles each retry.")
    poll_seconds: PositiveFloat = Field(0.2, description="How often a waiting worker checks approvals/cancel.")

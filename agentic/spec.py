"""`AgentSpec`: what a durable runner needs to know about an agent to apply the loop's rules — its
instructions, budget, policies and the flags of its tools — as plain data.

A durable run records its agent's spec once, when it starts (Temporal: the result of a local activity,
in history; checkpoints: the run row), and decides with that record from then on. A replay therefore
never depends on what the agent's code says today, and a changed agent definition affects new runs only.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field

from agentic.approvals import ApprovalPolicy
from agentic.budget import Budget
from agentic.handoffs import Role
from agentic.models.base import ModelSettings
from agentic.omit_defaults import OmitDefaults
from agentic.output import OutputSpec
from agentic.saga import SagaPolicy
from agentic.tools import ToolSpec


class AgentSpec(OmitDefaults):
    model_config = ConfigDict(frozen=True)

    name: str
    description: str = ""
    system: str = ""
    task: str | None = None
    budget: Budget = Field(default_factory=Budget)
    tools: dict[str, ToolSpec] = Field(default_factory=dict)
    approvals: ApprovalPolicy = Field(default_factory=ApprovalPolicy)
    saga: SagaPolicy = Field(default_factory=SagaPolicy)
    model: str = Field("", description="The name of the model that answers this run.")
    options: dict[str, Any] = Field(default_factory=dict, description="The run's options, validated, non-default.")
    estimated_actions: int | None = Field(None, description="Model calls + tool calls + compensations, probably.")
    model_settings: ModelSettings | None = Field(None, description="How the agent's model is asked.")
    approver_keys: dict[str, str] = Field(
        default_factory=dict,
        description="The worker's approvers (name -> Ed25519 public key); when set, only signed decisions count.",
    )
    mcp_servers: list[str] = Field(
        default_factory=list, description="MCP servers whose tools a run lists when it starts (into `tools`)."
    )
    output: OutputSpec | None = Field(None, description="A typed agent: the shape of its answer.")
    output_retries: int = Field(2, ge=0, description="Times the model may be sent back before the run stops.")
    team: dict[str, Role] = Field(
        default_factory=dict, description="The agents the run may be handed to (handoffs, transitively), by name."
    )

    def role(self) -> Role:
        """This agent as the loop knows it (`AgentLoop(role=...)`)."""
        return Role(
            name=self.name,
            system=self.system,
            tools=self.tools,
            output=self.output,
            output_retries=self.output_retries,
            model_settings=self.model_settings,
        )

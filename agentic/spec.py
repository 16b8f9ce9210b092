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
from agentic.models.base import ModelSettings
from agentic.omit_defaults import OmitDefaults
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

"""The workflow's input, result and progress: pydantic models, so fields can be added compatibly."""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, PositiveFloat, field_validator
from temporalio.contrib.workflow_streams import WorkflowStreamState

from agentic import Budget, LoopState, Message, ModelSettings, Usage
from agentic.approvals import ApprovalBook, ApprovalPolicy, AuditEntry, PendingApproval
from agentic.delegation import Delegation
from agentic.omit_defaults import OmitDefaults
from agentic.saga import SagaPolicy
from agentic.spec import AgentSpec
from duragent._activities.inputs import ContinueAsNewPolicy, RunStatus, TranscriptPart
from duragent._config.webhook_signing import url_problem
from duragent._workflows.transcript import WorkflowTranscript


class Timeouts(OmitDefaults):
    """How long an activity may stay silent before Temporal presumes its worker dead and retries it."""

    model_config = ConfigDict(frozen=True)

    heartbeat_seconds: PositiveFloat = 10.0
    model_seconds: PositiveFloat = 120.0
    tool_seconds: PositiveFloat = 600.0


class Handover(OmitDefaults):
    """Everything a run hands to its continuation (continue-as-new): losslessly, so continuing changes no
    outcome."""

    spec: AgentSpec
    loop: LoopState
    transcript: WorkflowTranscript
    book: ApprovalBook
    continued: int = 0
    live: WorkflowStreamState | None = None  # the live stream's newest events, and its offsets, carried on


class AgentInput(OmitDefaults):
    agent: str = Field(
        validation_alias=AliasChoices("agent", "scenario"),  # `scenario`: what inputs said before agents had names
        description="The agent to run, by name: one the workers on the task queue serve.",
    )
    task: str | None = Field(None, description="Overrides the agent's default task.")
    system: str | None = Field(None, description="Overrides the agent's system prompt.")
    budget: Budget | None = Field(None, description="Overrides the agent's budget.")
    history: list[Message] = Field(default_factory=list, description="Earlier transcript, without the system message.")
    consumed: Usage = Field(default_factory=Usage, description="Consumption carried over from an earlier run.")
    history_ref: TranscriptPart | None = Field(
        None,
        description="Set by a conversation on each of its turns' runs after the first: the conversation's transcript"
        " so far, by reference (its system message included); the run adds only `task` to it. Accepted only from"
        " the conversation that started the run (duragent/_workflows/turns.py).",
    )
    options: dict[str, Any] = Field(
        default_factory=dict, description="Per-run options for the agent, validated by its options model (opaque here)."
    )
    model: str | None = Field(
        None,
        description="A model the worker declares, by name (e.g. `local`, `openai:gpt-4.1-mini`); None: the agent's.",
    )
    model_settings: ModelSettings | None = Field(
        None, description="Overrides fields of the agent's model settings (temperature, seed, tool_choice...)."
    )
    timeouts: Timeouts = Field(default_factory=Timeouts)
    approvals: ApprovalPolicy | None = Field(None, description="Overrides the agent's approval policy.")
    saga: SagaPolicy | None = Field(None, description="Overrides the agent's saga policy.")
    search_attributes: bool = Field(
        True,
        description="False: the run publishes no search attributes (status, step, tokens, cost...): a history"
        " event and a visibility write fewer per run, and a smaller visibility record (docs/benchmarks.md, the"
        " price list); filters on them (`starter.py runs`, the approvals inbox) then do not find the run, nor"
        " the runs it delegates to. A run option, not the worker's: the client that starts the run writes them"
        " with the start, and only it knows whether its server has them registered.",
    )
    # Inputs of runs started before the worker's `EngineOptions` existed may carry `transcript`, `limits` and
    # `continue_as_new`: pydantic drops the first two (the transcript is always by reference; the worker's
    # limits apply), and the third is kept only to replay those runs as they ran (duragent/_workflows/agent.py,
    # ENGINE_PATCH) — never serialised, so no client sends it any more.
    legacy_continue_as_new: ContinueAsNewPolicy | None = Field(
        None, validation_alias="continue_as_new", exclude=True, repr=False
    )
    stream: bool = Field(
        False,
        description="True: the model's text (and tool calls' arguments) go to the run's live stream as they are"
        " written, in batches — a signal in history per batch (every 0.25 s at most while the model writes);"
        " False: the live stream has the steps, approvals and answer, and each step's text when it is done.",
    )
    carry: Handover | None = Field(None, description="Set by the run itself when it continues as new.")
    delegation: Delegation | None = Field(
        None,
        description="Set on a child run by the run that delegated to it: the tree above it, and which call.",
    )
    webhook: str | None = Field(
        None,
        description="POSTed once when the run ends (signed with the worker's AGENT_WEBHOOK_SECRET): https, or "
        "http to a loopback host when the worker's operator allows loopback (AGENT_WEBHOOK_ALLOW_LOOPBACK).",
    )

    @field_validator("webhook")
    @classmethod
    def _deliverable(cls, url: str | None) -> str | None:
        # The URL's shape only: whether loopback is allowed is the delivering worker's setting, decided there.
        problem = url_problem(url, allow_loopback=True) if url is not None else None
        if problem is not None:
            raise ValueError(problem)
        return url


class Progress(BaseModel):
    """What the `progress` query answers: cheap, and never recorded in history."""

    run_id: str
    agent: str
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
    worker_answered: bool = Field(True, description="False: no worker answered; the rest is the last known state.")
    error: str | None = Field(None, description="Why a run that ended in failure failed.")
    total: int | None = Field(None, description="The agent's estimate of its actions (model + tool calls + undos).")


class ApprovalsView(BaseModel):
    """What the `approvals` query answers: what waits, and everything decided or rejected so far."""

    pending: list[PendingApproval]
    audit: list[AuditEntry]
    uncounted: dict[str, int] = Field(
        default_factory=dict, description="Rejected decisions past the number the audit keeps, by call."
    )

"""The workflow's input, result and progress: pydantic models, so fields can be added compatibly."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt

from agentic import Budget, LoopState, Message, Run, Usage
from agentic.approvals import ApprovalBook, ApprovalPolicy, AuditEntry, PendingApproval
from agentic.compact import Compact
from agentic.saga import CompensationStep
from agentic.transcript_store import Transcripts
from scenarios import ScenarioOptions
from workflows.transcript import TranscriptMode, WorkflowTranscript

# completed: answered. abandoned: stopped without an answer, nothing to undo. compensated: stopped
# without an answer, effects undone. compensation_failed: an undo kept failing (the run fails, visibly).
RunStatus = Literal[
    "running", "awaiting_approval", "compensating", "completed", "abandoned", "compensated", "compensation_failed"
]


class ModelChoice(Compact):
    """Which model answers: the scenario's scripted `FakeModel`, or an OpenAI-compatible server.

    API keys are never here (this lands in history); the worker reads them from its environment.
    """

    model_config = ConfigDict(frozen=True)

    kind: Literal["scripted", "openai"] = "scripted"
    name: str | None = None
    base_url: str | None = None


class Timeouts(Compact):
    """How long an activity may stay silent before Temporal presumes its worker dead and retries it."""

    model_config = ConfigDict(frozen=True)

    heartbeat_seconds: PositiveFloat = 10.0
    model_seconds: PositiveFloat = 120.0
    tool_seconds: PositiveFloat = 600.0


class SagaPolicy(Compact):
    """How hard to try each compensation before declaring the run `compensation_failed`."""

    model_config = ConfigDict(frozen=True)

    max_attempts: PositiveInt = 5
    initial_interval_seconds: PositiveFloat = 1.0
    maximum_interval_seconds: PositiveFloat = 30.0


class PayloadLimits(Compact):
    """Claim checks: contents over a threshold go to the transcript store and travel as a reference;
    over the hard cap they fail clearly and are not retried (Temporal's own limit is 2 MB a payload)."""

    model_config = ConfigDict(frozen=True)

    tool_output_bytes: PositiveInt = 512
    model_reply_bytes: PositiveInt = 65536
    hard_cap_bytes: PositiveInt = 16 * 1024 * 1024


class ContinueAsNewPolicy(Compact):
    """When a run hands over to a fresh one: when Temporal suggests it, or at these marks — well under
    the 10,240 events / 10 MB at which Temporal starts warning."""

    model_config = ConfigDict(frozen=True)

    max_history_events: PositiveInt = 5000
    max_history_bytes: PositiveInt = 4 * 1024 * 1024


class Carried(BaseModel):
    """Everything a run hands to its continuation: losslessly, so continuing changes no outcome."""

    loop: LoopState
    transcript: WorkflowTranscript
    book: ApprovalBook
    continued: int = 0


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
    transcript: TranscriptMode = Field("reference", description="reference: linear history; inline: naive.")
    limits: PayloadLimits = Field(default_factory=PayloadLimits)
    continue_as_new: ContinueAsNewPolicy = Field(default_factory=ContinueAsNewPolicy)
    carry: Carried | None = Field(None, description="Set by the run itself when it continues as new.")


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
    transcript_ref: str | None = Field(
        None, description="By reference, the transcript is the store's messages at this head, then `messages`."
    )
    continued: int = Field(0, description="How many times the run continued as new.")

    def transcript_messages(self, transcripts: Transcripts | None = None) -> list[Message]:
        """The whole transcript, claim-checked contents restored (by reference, read from the store)."""
        if self.transcript_ref is None:
            return self.messages
        if transcripts is None:
            raise ValueError("this run kept its transcript by reference: pass the transcript store")
        tail = [
            m.model_copy(update={"content": transcripts.resolve(m.content, m.content_ref), "content_ref": None})
            if m.content_ref
            else m
            for m in self.messages
        ]
        return transcripts.load(self.transcript_ref) + tail


class ApprovalsView(BaseModel):
    """What the `approvals` query answers: what waits, and everything decided or rejected so far."""

    pending: list[PendingApproval]
    audit: list[AuditEntry]

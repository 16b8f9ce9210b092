"""The conversation workflow's wire types: its input (and what it carries across continue-as-new), a message,
a turn's result and what `describe` answers. Pydantic models deriving from `OmitDefaults`, so fields can be added
with defaults without breaking conversations in flight."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field, NonNegativeInt, PositiveFloat, PositiveInt, TypeAdapter

from agentic import Budget, Stop, Usage
from agentic.approvals import PendingApproval
from agentic.conversation import ConversationLimits
from agentic.omit_defaults import OmitDefaults
from duragent._activities.inputs import TranscriptPart
from duragent._workflows.inputs import Timeouts

ConversationStatus = Literal["open", "closing", "closed"]
# completed / abandoned / compensated: as the turn's run ended. refused: no run started (the conversation's
# budget was spent while the message waited). failed: the turn's run failed (its transcript is not continued).
TurnStatus = Literal["completed", "abandoned", "compensated", "compensation_failed", "refused", "failed"]

DEFAULT_IDLE_DAYS = 30.0


class SendMessage(OmitDefaults):
    """One user message (the `send` update's argument)."""

    text: str
    message_id: str | None = Field(
        None,
        max_length=64,
        description="The sender's id for this message: sent again (a retry that crossed a handover), it gets the"
        " turn it got the first time instead of a second one.",
    )
    expect_turn: PositiveInt | None = Field(
        None, description="The turn this message should be; refused (StaleTurn) when another message got there first."
    )
    model: str | None = Field(
        None,
        max_length=200,
        description="The model that answers this turn, by the name the worker's catalog declares (never an endpoint);"
        " None: the conversation's.",
    )


class QueuedMessage(OmitDefaults):
    turn: PositiveInt
    text: str
    sent_at: datetime
    model: str | None = None


class TurnResult(OmitDefaults):
    """A turn's answer, as the conversation reports it (from its own child's result, never from a stranger)."""

    conversation_id: str
    turn: PositiveInt
    status: TurnStatus
    run_id: str | None = Field(None, description="The turn's run (an AgentWorkflow): None when no run started.")
    stop: Stop | None = None
    output: str | None = None
    stop_detail: str | None = None
    usage: Usage = Field(default_factory=Usage, description="What this turn consumed.")
    consumed: Usage = Field(default_factory=Usage, description="What the conversation consumed, this turn included.")
    error: str | None = None

    def output_as(self, output_type: Any) -> Any:
        """The answer as `output_type` (a typed agent's answer is kept as JSON text), as `Run.output_as`."""
        if self.output is None:
            return None
        return TypeAdapter(output_type).validate_json(self.output)


class ActiveTurn(OmitDefaults):
    turn: PositiveInt
    text: str
    run_id: str
    started_at: datetime


class ConversationCarry(OmitDefaults):
    """Everything a conversation hands to its continuation: transcript by reference, consumption, the queue,
    the turn running (its run keeps running: the new run re-attaches to it), recent answers."""

    turns: NonNegativeInt = 0
    answered: NonNegativeInt = 0
    transcript: TranscriptPart = Field(default_factory=lambda: TranscriptPart(head="empty"))
    consumed: Usage = Field(default_factory=Usage)
    queue: list[QueuedMessage] = Field(default_factory=list)
    active: ActiveTurn | None = None
    recent: list[TurnResult] = Field(default_factory=list)
    accepted: dict[str, int] = Field(default_factory=dict, description="Recent message ids and the turns they got.")
    closing: str | None = None
    last_message_at: datetime | None = None
    continued: NonNegativeInt = 0


class ConversationInput(OmitDefaults):
    agent: str = Field(description="The agent every turn runs, by name: one the workers on the task queue serve.")
    budget: Budget | None = Field(None, description="The whole conversation's budget (None: unlimited).")
    turn_budget: Budget | None = Field(None, description="Each turn's budget (None: the agent's), capped by `budget`.")
    options: dict[str, Any] = Field(default_factory=dict, description="Every turn's options for the agent.")
    model: str | None = None
    limits: ConversationLimits = Field(default_factory=ConversationLimits)
    idle_days: PositiveFloat = Field(
        DEFAULT_IDLE_DAYS, description="Closes after this many days with no message (a durable timer)."
    )
    timeouts: Timeouts = Field(default_factory=Timeouts)
    search_attributes: bool = True
    stream: bool = Field(True, description="Each turn streams its model's text to its live events (AgentInput.stream).")
    carry: ConversationCarry | None = Field(
        None, description="Set by the conversation itself when it continues as new."
    )


class ConversationView(OmitDefaults):
    """What the `describe` query answers: cheap, never recorded in history."""

    conversation_id: str
    agent: str
    status: ConversationStatus
    turns: NonNegativeInt = Field(0, description="Messages accepted (the last turn's number).")
    answered: NonNegativeInt = 0
    queued: list[int] = Field(default_factory=list, description="Turns waiting for the running one.")
    active_turn: int | None = None
    active_run_id: str | None = None
    consumed: Usage = Field(default_factory=Usage)
    budget: Budget | None = None
    transcript: TranscriptPart = Field(default_factory=lambda: TranscriptPart(head="empty"))
    last_message_at: datetime | None = None
    closed_reason: str | None = None
    continued: NonNegativeInt = 0
    pending_approvals: list[PendingApproval] = Field(
        default_factory=list, description="Filled by the client: what the running turn waits for."
    )

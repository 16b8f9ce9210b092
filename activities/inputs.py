"""One pydantic input (and output) per activity, so fields can be added without breaking running workflows;
and the wire types the workflow and its activities both speak (a run's status and result, payload limits, a
transcript part), here so that activities never import workflow code.

Every scheduled activity writes its input into history, once per step: fields left at their defaults are
omitted from the payload (`exclude_if`), so a long run's history pays only for what differs.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveInt

from agentic import Message, ModelReply, ModelSettings, Run, ToolCall, ToolResult, ToolSchema, ToolSpec
from agentic.approvals import AuditEntry, Decision
from agentic.compact import Compact
from agentic.saga import CompensationStep
from stores.transcripts import Transcripts

# completed: answered. abandoned: stopped without an answer, nothing to undo. compensated: stopped
# without an answer, effects undone. compensation_failed: an undo kept failing (the run fails, visibly).
# The client also reports runs that ended outside the loop: failed, terminated, timed_out; and, while a model
# call is being retried after a failure (the provider is down), waiting_model.
RunStatus = Literal[
    "running",
    "waiting_model",
    "awaiting_approval",
    "compensating",
    "completed",
    "abandoned",
    "compensated",
    "compensation_failed",
    "failed",
    "terminated",
    "timed_out",
    "canceled",
]


class PayloadLimits(Compact):
    """Claim checks: contents over a threshold go to the transcript store and travel as a reference;
    over the hard cap they fail clearly and are not retried (Temporal's own limit is 2 MB a payload)."""

    model_config = ConfigDict(frozen=True)

    tool_output_bytes: PositiveInt = 512
    model_reply_bytes: PositiveInt = 65536
    hard_cap_bytes: PositiveInt = 16 * 1024 * 1024


class TranscriptPart(BaseModel):
    """By reference, what an activity gets: the stored transcript (`head`) and the messages added after
    it that are not stored yet (usually none)."""

    head: str
    unsaved: list[Message] = Field(default_factory=list, exclude_if=lambda v: not v)


class AgentResult(Run):
    """The in-process `Run`'s fields, plus how the durable run ended."""

    run_id: str
    agent: str
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


def _unset(value: Any) -> bool:
    return value is None or value == [] or value == {}


class DescribeInput(BaseModel):
    agent: str
    model: str | None = Field(None, exclude_if=_unset, description="A model the worker declares, by name.")
    options: dict[str, Any] = Field(default_factory=dict, exclude_if=_unset)
    continued_from: str | None = Field(
        None, exclude_if=_unset, description="A continuation: the run it continues (checked with the server)."
    )


class ModelCallInput(BaseModel):
    run_id: str
    agent: str
    call_index: int = Field(description="Model calls this run made before this one; scripted models key on it.")
    model: str | None = Field(None, exclude_if=_unset, description="The run's model, by name; None: the agent's.")
    messages: list[Message] = Field(default_factory=list, exclude_if=_unset, description="Inline: the transcript.")
    transcript: TranscriptPart | None = Field(None, exclude_if=_unset, description="By reference.")
    limits: PayloadLimits | None = Field(None, exclude_if=_unset)
    settings: ModelSettings | None = Field(None, exclude_if=_unset, description="How the model is asked.")
    tools: list[ToolSchema] = Field(
        default_factory=list, exclude_if=_unset, description="Inline: the MCP tools the run recorded at its start."
    )
    tools_ref: str | None = Field(
        None, exclude_if=_unset, description="By reference: the same, as one document in the transcript store."
    )


class ModelStep(BaseModel):
    reply: ModelReply
    head: str | None = Field(None, exclude_if=_unset, description="By reference: stored up to and with the reply.")


class ToolCallInput(BaseModel):
    run_id: str
    agent: str
    call: ToolCall
    idempotency_key: str
    decision: Decision | None = Field(
        None,
        exclude_if=_unset,
        description="The approval that took effect, for a tool that requires one: the activity checks it against "
        "the run the server reports and the worker's approver keys before the tool acts.",
    )
    transcript: TranscriptPart | None = Field(
        None, exclude_if=_unset, description="By reference: where to store the tool's message."
    )
    limits: PayloadLimits | None = Field(None, exclude_if=_unset, description="Claim-check large outputs.")
    options: dict[str, Any] = Field(default_factory=dict, exclude_if=_unset, description="The run's options.")
    tool: ToolSpec | None = Field(
        None, exclude_if=_unset, description="An MCP tool: its spec as the run recorded it (server, schema, flags)."
    )


class ToolStep(BaseModel):
    result: ToolResult
    head: str | None = Field(None, exclude_if=_unset, description="By reference: stored up to and with the result.")


class CompensationInput(BaseModel):
    run_id: str
    agent: str
    step: CompensationStep
    options: dict[str, Any] = Field(default_factory=dict, exclude_if=_unset)


class MCPListInput(BaseModel):
    run_id: str
    agent: str
    keep_schemas: bool = Field(
        False, exclude_if=lambda v: not v, description="By reference: store the schemas for the model activity."
    )


class MCPListing(BaseModel):
    tools: dict[str, ToolSpec] = Field(description="The agent's MCP tools, by prefixed name, as listed now.")


class AttachInput(BaseModel):
    """Attach to a delegated run that already exists under the id a parent derived for its call."""

    run_id: str = Field(description="The child's run id.")
    parent_run_id: str
    call_id: str


class WebhookInput(BaseModel):
    """One terminal-state event of a run, to POST to the run's webhook: the notifier workflow's input, and
    its delivery activity's."""

    url: str
    event_id: str = Field(description="The same on every attempt: receivers de-duplicate on it.")
    payload: dict[str, Any]


class WebhookDelivered(BaseModel):
    status_code: int
    attempt: int

"""One pydantic input (and output) per activity, so fields can be added without breaking running workflows;
and the wire types the workflow and its activities both speak (a run's status and result, the worker's engine
options, a transcript part), here so that activities never import workflow code.

Every model here derives from `OmitDefaults`: every scheduled activity writes its input into history, once per
step, and fields left at their defaults are not written, so a long run's history pays only for what differs.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, PositiveInt

from agentic import Message, ModelReply, ModelSettings, Run, ToolCall, ToolResult, ToolSpec
from agentic.approvals import AuditEntry, Decision
from agentic.omit_defaults import OmitDefaults
from agentic.saga import CompensationStep
from agentic.spec import AgentSpec
from duragent._stores.transcripts import Transcripts

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


class PayloadLimits(OmitDefaults):
    """Claim checks: contents over a threshold go to the transcript store and travel as a reference;
    over the hard cap they fail clearly and are not retried (Temporal's own limit is 2 MB a payload)."""

    model_config = ConfigDict(frozen=True)

    tool_output_bytes: PositiveInt = 512
    model_reply_bytes: PositiveInt = 65536
    hard_cap_bytes: PositiveInt = 16 * 1024 * 1024


class ContinueAsNewPolicy(OmitDefaults):
    """When a run hands over to a fresh one: when Temporal suggests it, or at these marks — well under
    the 10,240 events / 10 MB at which Temporal starts warning."""

    model_config = ConfigDict(frozen=True)

    max_history_events: PositiveInt = 5000
    max_history_bytes: PositiveInt = 4 * 1024 * 1024


class EngineOptions(OmitDefaults):
    """How a worker executes the runs it serves, whatever each run asks: its configuration
    (`duragent.build_worker(engine=...)`), never a run's input. The activities apply `limits`; the
    describe activity records the whole with the agent's spec, so a run decides when to hand over from that
    record (on replay too), not from whichever worker replays it."""

    model_config = ConfigDict(frozen=True)

    limits: PayloadLimits = Field(default_factory=PayloadLimits)
    continue_as_new: ContinueAsNewPolicy = Field(default_factory=ContinueAsNewPolicy)


class DescribedAgent(AgentSpec):
    """What the describe activity answers, and history records: the agent's spec, and the worker's engine
    options (absent from runs recorded before they were: the defaults)."""

    engine: EngineOptions = Field(default_factory=EngineOptions)
    # The worker publishes progress by workflow time, and says so here, in the record every run makes
    # at its start: a run that reads it follows that rule without asking `workflow.patched`, whose marker
    # brings the SDK's `TemporalChangeVersion` upsert — two events (and the history service's namespace reads)
    # per run that lasts over the progress interval (every run of a loaded worker). Absent (False)
    # from the records of runs described before: those ask the patch where the rules differ, as they did
    # (duragent/_workflows/visibility.py).
    progress_by_time: bool = False
    # By the activities' own time rather than by workflow time, which under load counts the waits in
    # the server's queues, so that every run of a loaded worker published its progress mid-run (about two
    # upserts a run, each an event and a visibility write) just when the server had least to spare. Absent
    # (False) from the records of runs described before: those keep the rule they started with.
    progress_by_work: bool = False
    # The models the worker declares (asked by a conversation, whose `send` validator refuses a message naming
    # another); None in runs' records, which never need them, and in those made before.
    models: DeclaredModels | None = None


class DeclaredModels(OmitDefaults):
    """The worker's model catalog by name: `agentic.models.catalog.undeclared` judges a name against it."""

    names: list[str] = Field(default_factory=list)
    prefixes: list[str] = Field(default_factory=list)


class TranscriptPart(OmitDefaults):
    """What an activity gets of the run's transcript: the stored part (`head`) and the messages added after
    it that are not stored yet (usually none)."""

    head: str
    unsaved: list[Message] = Field(default_factory=list)


class AgentResult(Run):
    """The in-process `Run`'s fields, plus how the durable run ended.

    The transcript is kept by reference (`transcript_ref`), so `messages` holds only what the run added after
    its stored part (usually nothing): the whole transcript is `await handle.messages()` (`RunHandle`)."""

    run_id: str
    agent: str
    status: RunStatus
    audit: list[AuditEntry] = Field(default_factory=list, description="Every approval decision and expiry.")
    compensations_remaining: list[CompensationStep] = Field(default_factory=list)
    transcript_ref: str | None = Field(
        None, description="The transcript is the store's messages at this head, then `messages`."
    )
    continued: int = Field(0, description="How many times the run continued as new.")

    def transcript_messages(self, transcripts: Transcripts | None = None) -> list[Message]:
        """The whole transcript, claim-checked contents restored (read from the store)."""
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


class DescribeInput(OmitDefaults):
    agent: str
    model: str | None = Field(None, description="A model the worker declares, by name.")
    options: dict[str, Any] = Field(default_factory=dict)
    continued_from: str | None = Field(
        None, description="A continuation: the run it continues (checked with the server)."
    )
    with_models: bool = Field(False, description="Answer with the models the worker declares (a conversation asks).")


class ModelCallInput(OmitDefaults):
    run_id: str
    agent: str
    transcript: TranscriptPart
    call_index: int = Field(description="Model calls this run made before this one; scripted models key on it.")
    step: int | None = Field(None, description="The step this call opens, counting carried-over steps (for logs).")
    model: str | None = Field(None, description="The run's model, by name; None: the agent's.")
    settings: ModelSettings | None = Field(None, description="How the model is asked.")
    tools_ref: str | None = Field(
        None, description="The MCP tools the run recorded at its start, one document in the transcript store."
    )
    stream: bool = Field(False, description="Publish the reply's deltas to the run's live stream as they come.")
    system: str | None = Field(
        None, description="A run handed to `agent`: its system prompt, read in place of the transcript's first message."
    )


class Worked(OmitDefaults):
    """A step's result, with how long the activity worked on it: what a run publishes its progress by
    (_workflows/visibility.py), unlike workflow time, which also counts the waits in a loaded server's queues."""

    worked_ms: int = Field(
        0, ge=0, description="The activity's own time on this step, in ms (0, and left out: under 1 ms, or older)."
    )


class ModelStep(Worked):
    reply: ModelReply
    head: str | None = Field(
        None, description="The transcript stored up to and with the reply (None only in older histories)."
    )


class ToolCallInput(OmitDefaults):
    run_id: str
    agent: str
    call: ToolCall
    idempotency_key: str
    transcript: TranscriptPart = Field(description="Where to store the tool's message.")
    decision: Decision | None = Field(
        None,
        description="The approval that took effect, for a tool that requires one: the activity checks it against "
        "the run the server reports and the worker's approver keys before the tool acts.",
    )
    options: dict[str, Any] = Field(default_factory=dict, description="The run's options.")
    tool: ToolSpec | None = Field(
        None, description="An MCP tool: its spec as the run recorded it (server, schema, flags)."
    )


class ToolStep(Worked):
    result: ToolResult
    head: str | None = Field(
        None, description="The transcript stored up to and with the result (None: cancelled, nothing stored)."
    )


class CompensationInput(OmitDefaults):
    run_id: str
    agent: str
    step: CompensationStep
    options: dict[str, Any] = Field(default_factory=dict)


class MCPListInput(OmitDefaults):
    run_id: str
    agent: str


class MCPListing(OmitDefaults):
    tools: dict[str, ToolSpec] = Field(description="The agent's MCP tools, by prefixed name, as listed now.")


class AttachInput(OmitDefaults):
    """Attach to a delegated run that already exists under the id a parent derived for its call."""

    run_id: str = Field(description="The child's run id.")
    parent_run_id: str
    call_id: str


class WebhookInput(OmitDefaults):
    """One terminal-state event of a run, to POST to the run's webhook: the notifier workflow's input, and
    its delivery activity's."""

    url: str
    event_id: str = Field(description="The same on every attempt: receivers de-duplicate on it.")
    payload: dict[str, Any]


class WebhookDelivered(OmitDefaults):
    status_code: int
    attempt: int

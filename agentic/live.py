"""What the people watching a run see as it happens: typed live events, one discriminated union.

A runner publishes them in order to the run's live stream (the durable runner: a Temporal Workflow Stream,
offset-addressed, so a subscriber resumes where it left off). They are for watching, never the record: the
transcript is. Two rules let a client show a step's text exactly once however the model call went:

- `text_delta`s of a step are pieces of its text, in order, under the model call's `attempt`;
- `step_restarted` says a step's model call started again (its worker died mid-stream, or it failed and was
  retried): drop that step's partial text, deltas of the new attempt follow;
- `step_finished` of a model step carries the step's whole text and tool calls: what it says replaces what the
  deltas built (a client that missed some, or joined late, is right from there on).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

LIVE_TOPIC = "live"
"""The topic of a run's live events on its stream (the runner, the model activity and clients share it)."""


class _Live(BaseModel):
    model_config = ConfigDict(frozen=True)


class TurnStarted(_Live):
    """A conversation's turn began: a person's message is being answered."""

    type: Literal["turn_started"] = "turn_started"
    turn: int
    message: str = ""


class TurnFinished(_Live):
    type: Literal["turn_finished"] = "turn_finished"
    turn: int
    status: str
    answer: str | None = None


class StepStarted(_Live):
    """An action began: a model call (`kind="model"`) or a tool call (`kind="tool"`); `label` says what."""

    type: Literal["step_started"] = "step_started"
    step: int
    kind: Literal["model", "tool"]
    label: str
    call_id: str = ""


class ToolCallView(_Live):
    call_id: str
    name: str
    arguments: dict[str, Any] | str


class StepFinished(_Live):
    """An action ended. For a model step: its whole text and the tool calls it asked for (the truth the
    deltas only showed early)."""

    type: Literal["step_finished"] = "step_finished"
    step: int
    kind: Literal["model", "tool"]
    text: str = ""
    tool_calls: list[ToolCallView] = Field(default_factory=list)


class StepRestarted(_Live):
    """The model call of `step` starts again (attempt `attempt`): drop the partial text of that step."""

    type: Literal["step_restarted"] = "step_restarted"
    step: int
    attempt: int


class TextDelta(_Live):
    """A piece of a model step's text, as the model writes it (batched: many tokens per delta)."""

    type: Literal["text_delta"] = "text_delta"
    step: int
    text: str
    attempt: int = 1


class ToolCallStarted(_Live):
    """The model began writing a call of tool `name` (its arguments follow as `tool_call_arguments`)."""

    type: Literal["tool_call_started"] = "tool_call_started"
    step: int
    call_id: str
    name: str
    attempt: int = 1


class ToolCallArguments(_Live):
    """A piece of a call's arguments (JSON text), as the model writes them."""

    type: Literal["tool_call_arguments"] = "tool_call_arguments"
    step: int
    call_id: str
    delta: str
    attempt: int = 1


class ToolCallFinished(_Live):
    """A tool call ended: `status` as the loop records it (ok, error, declined, expired, cancelled...);
    `content` is what the model is told (cut short)."""

    type: Literal["tool_call_finished"] = "tool_call_finished"
    call_id: str
    name: str
    status: str
    content: str = ""


class ApprovalRequested(_Live):
    type: Literal["approval_requested"] = "approval_requested"
    call_id: str
    tool: str
    arguments: dict[str, Any] | str
    arguments_hash: str
    deadline: datetime


class ApprovalDecided(_Live):
    type: Literal["approval_decided"] = "approval_decided"
    call_id: str
    outcome: Literal["approved", "declined"]
    approver: str | None = None
    reason: str = ""


class ApprovalExpired(_Live):
    type: Literal["approval_expired"] = "approval_expired"
    call_id: str


class Compensation(_Live):
    """An undo of the saga: `status` started, compensated or failed."""

    type: Literal["compensation"] = "compensation"
    tool: str
    status: Literal["started", "compensated", "failed"]
    detail: str = ""


class Delegation(_Live):
    """A call handed to another agent's run: `status` started, then its stop reason."""

    type: Literal["delegation"] = "delegation"
    call_id: str
    agent: str
    child_run_id: str
    status: str


class Answer(_Live):
    """The run's final answer (its output), once."""

    type: Literal["answer"] = "answer"
    text: str
    stop: str


class Finished(_Live):
    """The run ended (its status and why): nothing follows on this run's stream."""

    type: Literal["finished"] = "finished"
    status: str
    stop: str | None = None


LiveEvent = Annotated[
    TurnStarted
    | TurnFinished
    | StepStarted
    | StepFinished
    | StepRestarted
    | TextDelta
    | ToolCallStarted
    | ToolCallArguments
    | ToolCallFinished
    | ApprovalRequested
    | ApprovalDecided
    | ApprovalExpired
    | Compensation
    | Delegation
    | Answer
    | Finished,
    Field(discriminator="type"),
]

LIVE_EVENTS: TypeAdapter[LiveEvent] = TypeAdapter(LiveEvent)


def live_event(data: Any) -> LiveEvent:
    """A live event from its JSON form (a dict or text); ValidationError for anything else."""
    if isinstance(data, str | bytes):
        return LIVE_EVENTS.validate_json(data)
    return LIVE_EVENTS.validate_python(data)


class Transcript:
    """What a client shows, folded from the events in order: each model step's text (restarts dropped,
    finished steps exact). The reference for clients, and what tests check a stream against."""

    def __init__(self) -> None:
        self.steps: dict[int, str] = {}
        self.finished: set[int] = set()
        self.answer: str | None = None

    def add(self, event: LiveEvent) -> None:
        if isinstance(event, TextDelta) and event.step not in self.finished:
            self.steps[event.step] = self.steps.get(event.step, "") + event.text
        elif isinstance(event, StepRestarted) and event.step not in self.finished:
            self.steps[event.step] = ""
        elif isinstance(event, StepFinished) and event.kind == "model":
            self.steps[event.step] = event.text
            self.finished.add(event.step)
        elif isinstance(event, Answer):
            self.answer = event.text

    @property
    def text(self) -> str:
        return "".join(self.steps[step] for step in sorted(self.steps))

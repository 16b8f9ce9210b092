"""A conversation: turns of the ONE loop, each a run on the transcript so far plus the new message (the lessons'
`history=` semantics), with a budget per turn and one for the whole conversation.

The rules live here, once, with no I/O: which message a conversation accepts (`refusal`), what budget the next
turn gets (`turn_budget`), and the in-process runner's `Conversation` (over `Agent.run(task, history=,
consumed=)`). The durable conversation (duragent/_workflows/conversation.py) and the checkpoint runner's execute
the same rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, NonNegativeInt, PositiveInt

from agentic.budget import Budget, Usage
from agentic.delegation import reserve
from agentic.messages import Message
from agentic.run import Run

# Why a message is refused: each a distinct, named error a caller can act on.
Refusal = Literal["EmptyMessage", "MessageTooLong", "ConversationClosed", "StaleTurn", "ConversationBusy", "OverBudget"]


class ConversationLimits(BaseModel):
    """What a conversation accepts: bounded text, a bounded queue of messages waiting for their turn."""

    model_config = ConfigDict(frozen=True)

    max_message_bytes: PositiveInt = 32 * 1024
    max_queued: PositiveInt = 16
    """Messages accepted while a turn runs wait in order; past this many, a sender hears "busy"."""


class Refused(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: Refusal
    reason: str


def refusal(
    text: str,
    *,
    limits: ConversationLimits,
    closed: str | None,
    turns: NonNegativeInt,
    queued: NonNegativeInt,
    expect_turn: int | None,
    over_budget: str | None,
) -> Refused | None:
    """Why the conversation refuses this message now, or None when it takes it as turn `turns + 1`.

    `closed`: why the conversation is closed (None: open). `turns`: messages accepted so far. `queued`: messages
    waiting for their turn (the one running excluded). `expect_turn`: the turn the sender believes its message
    gets (None: any); another sender's message got there first when it differs. `over_budget`: why the
    conversation's budget has nothing left (None: it has)."""
    if closed is not None:
        return Refused(kind="ConversationClosed", reason=f"the conversation is closed ({closed})")
    if not text.strip():
        return Refused(kind="EmptyMessage", reason="the message is empty")
    size = len(text.encode())
    if size > limits.max_message_bytes:
        return Refused(
            kind="MessageTooLong",
            reason=f"the message is {size:,} bytes; at most {limits.max_message_bytes:,} are accepted",
        )
    if expect_turn is not None and expect_turn != turns + 1:
        return Refused(
            kind="StaleTurn",
            reason=f"the message was meant as turn {expect_turn}, but the conversation's next turn is {turns + 1}"
            " (another message got there first): read the conversation and send again",
        )
    if queued >= limits.max_queued:
        return Refused(
            kind="ConversationBusy",
            reason=f"the conversation is busy: {queued} messages already wait for their turn; send again later",
        )
    if over_budget is not None:
        return Refused(kind="OverBudget", reason=f"the conversation's budget is spent: {over_budget}")
    return None


def turn_budget(budget: Budget | None, consumed: Usage, per_turn: Budget) -> Budget | str:
    """The next turn's budget: `per_turn` (the agent's, or the conversation's `turn_budget`) capped by what the
    conversation's `budget` has left after `consumed` — or why no turn may start. A turn starts counting from
    zero (its run id is its own, so its idempotency keys are too); the conversation adds what it consumed."""
    return per_turn if budget is None else reserve(budget, consumed, per_turn)


def over_budget(budget: Budget | None, consumed: Usage) -> str | None:
    """Why the conversation's budget has nothing left for another turn, or None."""
    left = turn_budget(budget, consumed, Budget())
    return left if isinstance(left, str) else None


class Runs(Protocol):
    """What a conversation needs of its agent (`agentic.Agent` is one)."""

    budget: Budget

    def run(self, task: str | None = ..., history: Sequence[Message] | None = ..., **kwargs: Any) -> Run: ...


@dataclass
class Conversation:
    """The in-process conversation: each `send` is one `Agent.run` on the transcript so far (`history=`), its
    consumption carried (`consumed=`) so the conversation's `budget` counts across turns.

        chat = agent.conversation()
        run = chat.send("Refund order A-1")   # the turn's Run
        chat.messages, chat.usage, chat.turns
    """

    agent: Runs
    budget: Budget | None = None
    turn_budget: Budget | None = None
    limits: ConversationLimits = field(default_factory=ConversationLimits)
    conversation_id: str = "local"
    messages: list[Message] = field(default_factory=list)
    """The transcript so far, without the system message (what `history=` takes)."""
    usage: Usage = field(default_factory=Usage)
    turns: int = 0
    runs: list[Run] = field(default_factory=list)
    closed: str | None = None

    def send(self, text: str, *, expect_turn: int | None = None) -> Run:
        """Run one turn on the transcript so far plus `text`. Raises `MessageRefused` (its `kind` says why)."""
        why = refusal(
            text,
            limits=self.limits,
            closed=self.closed,
            turns=self.turns,
            queued=0,
            expect_turn=expect_turn,
            over_budget=over_budget(self.budget, self.usage),
        )
        if why is not None:
            raise MessageRefused(why.kind, why.reason)
        budget = turn_budget(self.budget, self.usage, self.turn_budget or self.agent.budget)
        assert not isinstance(budget, str)  # `refusal` checked the conversation's budget
        self.turns += 1
        # Each turn is a run of its own (idempotency keys unique across the conversation).
        run = self.agent.run(
            text, history=self.messages, budget=budget, run_id=f"{self.conversation_id}~turn-{self.turns}"
        )
        self.messages = _without_system(run.messages)
        self.usage = self.usage.plus(run.usage)
        self.runs.append(run)
        return run

    def close(self, reason: str = "closed by the caller") -> None:
        self.closed = reason


class MessageRefused(ValueError):
    """The conversation refused a message; `kind` names why (`Refusal`), the message says it."""

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(reason)
        self.kind = kind
        self.reason = reason


def _without_system(messages: Sequence[Message]) -> list[Message]:
    return [m for m in messages if m.role != "system"]

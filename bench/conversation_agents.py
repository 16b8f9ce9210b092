"""`bench-chat`: a conversation's assistant for `python -m bench conversations` — each message answered after
`records` (default 3) no-op tool calls, counted from the turn's own message, so every turn does the same work
however long the conversation. An agents module: a worker serves it with `--agents bench.conversation_agents`."""

from __future__ import annotations

from collections.abc import Sequence

from agentic import Agent, Budget, FakeModel, Message, Registry, tool_call
from bench.agents import noop

TOOL_CALLS = 3
NAME = "bench-chat"


def next_move(messages: Sequence[Message]) -> object:
    last_user = max(i for i, m in enumerate(messages) if m.role == "user")
    done = sum(1 for m in messages[last_user:] if m.role == "tool")
    if done < TOOL_CALLS:
        return tool_call("noop", {"i": done + 1})
    return f"Answered message {sum(1 for m in messages if m.role == 'user')} after {done} calls."


agent = Agent(
    FakeModel.replying(next_move, name="bench-chat-script"),
    Registry([noop]),
    system="Call noop three times per message, then answer.",
    budget=Budget(max_steps=100),
    name=NAME,
    description="a conversation's assistant: 3 no-op tool calls per message, then an answer",
)

echo = Agent(
    FakeModel.replying(lambda messages: f"Heard: {messages[-1].content}", name="bench-echo-script"),
    Registry(),
    name="bench-echo",
    description="answers each message at once (one model call): idle conversations' cost",
)

agents = [agent, echo]

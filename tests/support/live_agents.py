"""Agents whose runs show the live stream: a long streamed answer after a tool call, a gated payment, a run of
tool calls long enough to continue as new, and a conversation's assistant that writes slowly. An agents module
(`agents`, `make_deps`), so worker processes serve them too."""

from __future__ import annotations

from collections.abc import Sequence

import examples
from agentic import Agent, Budget, FakeModel, Message, Registry, tool_call
from duragent._config.settings import Settings
from examples.options import DemoDeps, DemoOptions
from tests.support.agents_for_tests import lookup, pay, write_row
from tests.support.conversation_agents import reply as chat_reply


def _agent(name: str, replies: list[object], tools: list[object], steps: int = 6, **model: object) -> Agent:
    return Agent(
        FakeModel(replies, **model),  # type: ignore[arg-type]
        Registry(tools),  # type: ignore[arg-type]
        name=name,
        task="Go.",
        budget=Budget(max_steps=steps),
        options=DemoOptions,
    )


WORDS = [f"word{i}" for i in range(500)]
LONG_ANSWER = " ".join(WORDS)  # 500 tokens as FakeModel streams them


WRITER = _agent("live-writer", [tool_call("lookup", {"topic": "invoices"}), LONG_ANSWER], [lookup])
PAYER = _agent("live-payer", [tool_call("pay", {"supplier": "s-1"}), "Paid s-1."], [pay])
LOOPER = _agent(
    "live-looper", [tool_call("lookup", {"topic": f"t{i}"}) for i in range(6)] + ["All looked up."], [lookup], steps=9
)
AGENTS = [WRITER, PAYER, LOOPER]


STORY = " ".join(f"Once{i}" if i % 7 == 0 else f"word{i}" for i in range(60)) + "."


def _story_or_chat(messages: Sequence[Message]) -> object:
    """Tells its story when asked (slowly: a test can kill its worker mid-sentence), else the chat's answers."""
    last = messages[-1]
    if last.role == "user" and last.content.startswith("story"):
        return STORY
    return chat_reply(messages)


# A conversation's agent whose model writes at a person's reading speed: 60 words over 3 seconds.
SLOW_CHAT = Agent(
    FakeModel.replying(_story_or_chat, token_seconds=0.05),
    Registry([pay, write_row]),
    system="You are a helpful assistant.",
    budget=Budget(max_steps=6),
    name="t-slow-chat",
    description="a conversation's scripted assistant that streams slowly",
    options=DemoOptions,
)

agents = [*AGENTS, SLOW_CHAT]


def make_deps(settings: Settings) -> DemoDeps:
    return examples.make_deps(settings)

"""The conversation tests' agent: a scripted policy that answers from the transcript it is given, so each turn
shows how much of the conversation it saw (the user messages so far), and calls a gated or a plain tool on
request. An agents module (`agents`, `make_deps`), so worker processes serve it too."""

from __future__ import annotations

from collections.abc import Sequence

import examples
from agentic import Agent, Budget, FakeModel, Message, Registry, tool_call
from duragent._config.settings import Settings
from examples.options import DemoDeps, DemoOptions
from tests.support.agents_for_tests import pay, write_row


def reply(messages: Sequence[Message]) -> object:
    last = messages[-1]
    users = sum(1 for m in messages if m.role == "user")
    if last.role == "tool":
        return f"Done: {last.content} (turn {users})"
    text = last.content
    if text.startswith("pay "):
        return tool_call("pay", {"supplier": text.removeprefix("pay ")})
    if text.startswith("row "):
        return tool_call("write_row", {"row": text.removeprefix("row ")})
    return f"You said {text!r} (turn {users}, {len(messages)} messages)"


CHAT = Agent(
    FakeModel.replying(reply),
    Registry([pay, write_row]),
    system="You are a helpful assistant.",
    budget=Budget(max_steps=6),
    name="t-chat",
    description="a conversation's scripted assistant",
    options=DemoOptions,
)

agents = [CHAT]


def make_deps(settings: Settings) -> DemoDeps:
    return examples.make_deps(settings)

"""The agents `bench delegation` compares, one step each: `bench-inline` calls a no-op tool, `bench-delegating`
hands the same call to `bench-child` (an agent that answers at once) through `Agent.as_tool`. An agents
module: the bench's worker processes serve it (bench/served.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentic import Agent, Budget, FakeModel, Message, Registry, tool, tool_call
from examples.effects import tool_results


@tool(description="Do nothing; read-only.", i="Anything.")
def noop(i: int) -> str:
    return f"ok {i}"


CHILD = Agent(FakeModel(["Done."] * 2, name="bench-child-script"), name="bench-child", task="Answer.")


def _one_call(call: str, arguments: dict[str, Any]) -> FakeModel:
    def reply(messages: Sequence[Message]) -> object:
        results = tool_results(messages)
        return tool_call(call, arguments) if not results else f"Got: {results[-1]}"

    return FakeModel([reply] * 3, name=f"bench-{call}-script")


INLINE = Agent(
    _one_call("noop", {"i": 1}), Registry([noop]), name="bench-inline", task="Go.", budget=Budget(max_steps=3)
)
DELEGATING = Agent(
    _one_call("child", {"task": "Answer."}),
    Registry([CHILD.as_tool("child", "Ask the child agent.")]),
    name="bench-delegating",
    task="Go.",
    budget=Budget(max_steps=3),
)

agents = [INLINE, DELEGATING, CHILD]

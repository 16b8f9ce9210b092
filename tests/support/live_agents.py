"""Agents whose runs show the live stream: a long streamed answer after a tool call, a gated payment, a run of
tool calls long enough to continue as new."""

from __future__ import annotations

from agentic import Agent, Budget, FakeModel, Registry, tool_call
from examples.options import DemoOptions
from tests.support.agents_for_tests import lookup, pay


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


def _agent(name: str, replies: list[object], tools: list[object], steps: int = 6, **model: object) -> Agent:
    return Agent(
        FakeModel(replies, **model),  # type: ignore[arg-type]
        Registry(tools),  # type: ignore[arg-type]
        name=name,
        task="Go.",
        budget=Budget(max_steps=steps),
        options=DemoOptions,
    )


WRITER = _agent("live-writer", [tool_call("lookup", {"topic": "invoices"}), LONG_ANSWER], [lookup])
PAYER = _agent("live-payer", [tool_call("pay", {"supplier": "s-1"}), "Paid s-1."], [pay])
LOOPER = _agent(
    "live-looper", [tool_call("lookup", {"topic": f"t{i}"}) for i in range(6)] + ["All looked up."], [lookup], steps=9
)
AGENTS = [WRITER, PAYER, LOOPER]

"""The documents' short snippets that no feature test runs as a whole program: the agent API's import line
(README.md) and the memory tools' wiring (docs/agents.md), each run as written. The longer programs are run by
the tests of what they show (tests/support/docs.py says how they find them)."""

from __future__ import annotations

from agentic import Agent, FakeModel, Registry
from tests.support.docs import code_block_after

LESSON_NAMES = ("Agent", "Budget", "FakeModel", "Registry", "Stop", "tool", "tool_call", "Message", "ToolCall")


def test_the_readmes_agent_api_imports_every_name_the_lessons_use() -> None:
    scope: dict[str, object] = {}
    exec(code_block_after("README.md", "The agent API is the one from the lessons"), scope)
    assert all(name in scope for name in (*LESSON_NAMES, "Fact", "FactStore"))
    assert scope["Agent"] is Agent and scope["Registry"] is Registry


def test_the_memory_tools_wiring_gives_an_agent_remember_recall_and_list_facts() -> None:
    model = FakeModel([])  # never called: the test looks at the agent it builds
    scope: dict[str, object] = {"Agent": Agent, "Registry": Registry, "model": model, "other_tools": []}
    exec(code_block_after("docs/agents.md", "An agent gets memory as ordinary tools"), scope)
    agent = scope["agent"]
    assert isinstance(agent, Agent) and agent.name == "courier"
    assert {"remember", "recall", "list_facts"} <= set(agent.registry.names)

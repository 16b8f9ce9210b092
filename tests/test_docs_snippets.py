"""The documents' short snippets that no feature test runs as a whole program: the agent API's import line
(README.md), the memory tools' wiring, the typed answer and the checks (docs/agents.md), each run as written.
The longer programs are run by the tests of what they show (tests/support/docs.py says how they find them)."""

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


def test_the_typed_answer_snippet_runs_as_written() -> None:
    scope: dict[str, object] = {}
    exec(code_block_after("docs/agents.md", "Scripting one with `FakeModel` is"), scope)
    run = scope["run"]
    assert [c.outcome for c in run.checks] == ["invalid", "ok"]  # type: ignore[attr-defined]


def test_the_checks_snippet_builds_a_checked_agent() -> None:
    from agentic import tool

    @tool(description="Refund.", amount_cents="How much.")
    def refund(amount_cents: int) -> str:
        return "refunded"

    scope: dict[str, object] = {"Agent": Agent, "Registry": Registry, "model": FakeModel([]), "refund": refund}
    exec(code_block_after("docs/agents.md", "or refuse (`Refuse`: the run stops with"), scope)
    agent = scope["agent"]
    assert isinstance(agent, Agent) and [c.__name__ for c in agent.argument_checks["refund"]] == ["not_over_a_thousand"]

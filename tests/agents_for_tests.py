"""Small scenarios that exercise one workflow rule each, registered like a user's own agents."""

from __future__ import annotations

from collections.abc import Sequence

from agentic import Budget, FakeModel, Message, Registry, ToolContext, tool, tool_call
from scenarios import Scenario, ScenarioOptions, register_scenario
from scenarios.effects import record_effect


@tool(description="Look something up.", topic="What to look up.")
def lookup(topic: str) -> str:
    return f"{topic}: 42"


@tool(description="A tool that is broken.", x="Anything.")
def broken(x: int) -> str:
    raise ValueError("the upstream returned garbage")


@tool(description="Write a row.", row="Row id.", mutating=True)
def write_row(row: str, ctx: ToolContext) -> str:
    return record_effect(ctx, "write_row", {"row": row}, f"wrote {row}")


def _results(messages: Sequence[Message]) -> list[str]:
    return [m.content for m in messages if m.role == "tool"]


def _repeat_script(options: ScenarioOptions) -> FakeModel:
    return FakeModel([tool_call("lookup", {"topic": "x"}), tool_call("lookup", {"topic": "x"}), "never"])


def _error_script(options: ScenarioOptions) -> FakeModel:
    def answer(messages: Sequence[Message]) -> str:
        return f"The tool failed, so I report: {_results(messages)[-1]}"

    return FakeModel([tool_call("broken", {"x": 1}), tool_call("broken", {"x": "not a number"}), answer])


def _rows_script(options: ScenarioOptions) -> FakeModel:
    def next_row(messages: Sequence[Message]) -> object:
        done = len(_results(messages))
        return tool_call("write_row", {"row": f"row-{done + 1}"}) if done < 3 else "Wrote 3 rows."

    return FakeModel([next_row] * 4)


def _short_script(options: ScenarioOptions) -> FakeModel:
    return FakeModel([tool_call("lookup", {"topic": "a"})])  # one reply: a second call exhausts it


REPEAT = register_scenario(
    Scenario("t-repeat", "repeats a call", "", "Look up x.", Registry([lookup]), _repeat_script, Budget(max_steps=5)),
    replace=True,
)
ERRORS = register_scenario(
    Scenario("t-errors", "a broken tool", "", "Use the tool.", Registry([broken]), _error_script, Budget(max_steps=5)),
    replace=True,
)
ROWS = register_scenario(
    Scenario("t-rows", "3 writes", "", "Write 3 rows.", Registry([write_row]), _rows_script, Budget(max_steps=10)),
    replace=True,
)
SHORT = register_scenario(
    Scenario("t-short", "script runs out", "", "Go.", Registry([lookup]), _short_script, Budget(max_steps=5)),
    replace=True,
)

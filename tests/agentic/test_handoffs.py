"""Handoffs in the loop and the in-process runner: the active agent's prompt, tools, model and type take over on
one transcript; each agent's scripted model counts its own turns; a handoff the agent did not declare is an
unknown tool; a team that cannot work is refused when it is defined or served."""

from __future__ import annotations

import pytest

from agentic import Agent, FakeModel, Message, Registry, Stop, ToolStatus, final_answer, tool, tool_call
from agentic.agent_set import AgentSet
from agentic.mcp import MCPServer
from tests.agentic.test_typed_output import Recorder
from tests.support.typed_agents import GOOD, Refund


@tool(description="Say hi.")
def hello() -> str:
    return "hi"


def test_the_handed_to_agent_reads_its_own_prompt_and_is_offered_its_own_tools():
    second = Recorder([tool_call("hello"), final_answer(GOOD)])
    billing = Agent(second, Registry([hello]), system="You are billing.", name="billing", output_type=Refund)
    first = Recorder([tool_call("transfer_to_billing")])
    run = Agent(first, system="You are the desk.", name="desk", handoffs=[billing]).run("refund A-1")
    assert run.output == GOOD and run.answered_by == "billing"
    assert [s.name for s in first.offered[0]] == ["transfer_to_billing", "give_up"]
    assert [s.name for s in second.offered[0]] == ["hello", "final_answer", "give_up"]
    # Its model was asked from its own first turn (call 0, then 1), on the transcript with its own prompt.
    assert second.calls == 2 and run.messages[0] == Message(role="system", content="You are the desk.")


def test_a_run_handed_back_counts_each_agents_turns_apart():
    seen: list[tuple[str, int]] = []

    def script(name: str, replies: list[object]) -> FakeModel:
        model = FakeModel(replies)  # type: ignore[arg-type]
        original = model.complete

        def complete(messages, tools=(), *, call_index=None, settings=None):  # type: ignore[no-untyped-def]
            seen.append((name, call_index))
            return original(messages, tools, call_index=call_index, settings=settings)

        model.complete = complete  # type: ignore[method-assign]
        return model

    b = Agent(script("b", [tool_call("transfer_to_a")]), name="b", handoffs=["a"])
    a = Agent(script("a", [tool_call("transfer_to_b"), "back and done"]), name="a", handoffs=[b])
    run = a.run("x")
    assert run.output == "back and done" and seen == [("a", 0), ("b", 0), ("a", 1)]
    assert [(h.source, h.target) for h in run.handoffs] == [("a", "b"), ("b", "a")]


def test_calls_after_a_handoff_in_the_same_reply_do_not_run():
    billing = Agent(FakeModel(["done"]), name="billing")
    run = Agent(
        FakeModel([[tool_call("transfer_to_billing"), tool_call("hello")]]),
        Registry([hello]),
        name="desk",
        handoffs=[billing],
    ).run("x")
    assert [r.status for r in run.records] == [ToolStatus.OK, ToolStatus.SKIPPED]
    assert run.messages[-2].content == "Error: hello was not executed: the run was handed to billing."


def test_a_model_cannot_hand_over_to_an_agent_not_declared():
    billing = Agent(FakeModel(["stolen"]), name="billing")
    run = Agent(FakeModel([tool_call("transfer_to_billing"), "still me"]), name="desk").run("x")
    assert run.output == "still me" and run.handoffs == [] and run.records[0].status is ToolStatus.UNKNOWN_TOOL
    assert billing.model.calls == 0  # type: ignore[attr-defined]


def test_a_team_that_cannot_work_is_refused_up_front():
    with pytest.raises(ValueError, match="hands off to an unnamed agent"):
        Agent(FakeModel(["x"]), handoffs=[Agent(FakeModel(["y"]))])
    by_name = Agent(FakeModel([tool_call("transfer_to_billing")]), name="desk", handoffs=["billing"])
    with pytest.raises(ValueError, match="hands off to 'billing' by name: in-process, give the Agent object"):
        by_name.run("x")
    with pytest.raises(ValueError, match="hands off to an agent not served: unknown agent 'billing'"):
        AgentSet([by_name])
    remote = Agent(FakeModel(["y"]), name="billing", mcp=[MCPServer(name="fs", transport="stdio", command=("true",))])
    with pytest.raises(ValueError, match="agent billing has MCP servers: it cannot take a run handed over"):
        AgentSet([by_name, remote])
    AgentSet([by_name, Agent(FakeModel(["y"]), name="billing")])  # served: fine


def test_the_recorded_spec_names_the_team_and_the_transfer_tool():
    billing = Agent(FakeModel(["y"]), system="You are billing.", name="billing", output_type=Refund)
    spec = Agent(FakeModel(["x"]), name="desk", handoffs=[billing]).spec()
    assert spec.tools["transfer_to_billing"].handoff == "billing"
    assert sorted(spec.team) == ["billing", "desk"]
    assert spec.team["billing"].system == "You are billing." and spec.team["billing"].output is not None
    assert Stop.ANSWERED.answered

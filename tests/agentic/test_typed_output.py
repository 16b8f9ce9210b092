"""Typed answers in the loop and the in-process runner: the `final_answer` tool built from the type, validation
and its bounded send-backs, structured text answers, wrapped types, and a plain agent left exactly as it was."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from pydantic import BaseModel

from agentic import Agent, FakeModel, ModelSettings, Registry, Stop, final_answer, tool, tool_call
from agentic.models.base import ToolSchema
from agentic.output import FINAL_ANSWER, OutputType
from tests.support.typed_agents import GOOD, Refund


@tool(description="Look an order up.", order="The order id.")
def lookup(order: str) -> str:
    return f"order {order}"


class Recorder(FakeModel):
    """A scripted model that keeps what it was offered and asked with (what a provider would be sent)."""

    def __init__(self, replies: list[object]) -> None:
        super().__init__(replies)  # type: ignore[arg-type]
        self.offered: list[list[ToolSchema]] = []
        self.settings: list[ModelSettings | None] = []

    def complete(self, messages, tools=(), *, call_index=None, settings=None):  # type: ignore[no-untyped-def]
        self.offered.append(list(tools))
        self.settings.append(settings)
        return super().complete(messages, tools, call_index=call_index, settings=settings)


def test_the_model_is_offered_final_answer_with_the_types_schema_and_must_call_a_tool():
    model = Recorder([final_answer(GOOD)])
    run = Agent(model, Registry([lookup]), output_type=Refund).run("refund A-1")
    assert run.output == GOOD
    offered = {schema.name: schema for schema in model.offered[0]}
    assert sorted(offered) == ["final_answer", "give_up", "lookup"]
    assert offered[FINAL_ANSWER].parameters == Refund.model_json_schema()
    assert model.settings[0] is not None and model.settings[0].tool_choice == "required"


def test_an_agent_that_chooses_its_tool_choice_keeps_it():
    agent = Agent(FakeModel([final_answer(GOOD)]), output_type=Refund, model_settings=ModelSettings(tool_choice="auto"))
    assert agent.model_settings is not None and agent.model_settings.tool_choice == "auto"


def test_a_plain_agent_is_exactly_as_before():
    model = Recorder(["done"])
    agent = Agent(model, Registry([lookup]), name="plain")
    run = agent.run("x")
    assert run.output == "done" and run.checks == [] and run.handoffs == []
    assert [s.name for s in model.offered[0]] == ["lookup", "give_up"] and model.settings == [None]
    # What a durable runner records of it, and what its reply carries, are what they were.
    recorded = agent.spec().model_dump(mode="json")
    assert not {"output", "output_retries", "team"} & set(recorded)
    reply = model.complete([], call_index=0)
    assert agent.judge(reply) is reply and "verdicts" not in reply.model_dump(mode="json")


def test_a_type_that_is_not_an_object_is_wrapped_as_response():
    shape = OutputType(list[int])
    assert shape.spec.parameters == {
        "type": "object",
        "properties": {"response": {"type": "array", "items": {"type": "integer"}}},
        "required": ["response"],
    }
    assert final_answer([1, 2]).arguments == {"response": [1, 2]}
    run = Agent(FakeModel([final_answer([3, 4])]), output_type=list[int]).run("x")
    assert run.stop is Stop.ANSWERED and run.output == [3, 4]
    bad = Agent(FakeModel([tool_call(FINAL_ANSWER, {"items": [1]})] * 3), output_type=list[int]).run("x")
    assert bad.stop is Stop.INVALID_OUTPUT and 'as {"response": ...}' in (bad.stop_detail or "")


def test_a_dataclass_answer_is_validated_and_typed():
    @dataclass
    class Point:
        x: int
        y: int

    run = Agent(FakeModel([final_answer(Point(1, 2))]), output_type=Point).run("x")
    assert run.output == Point(1, 2)


def test_structured_output_in_the_text_is_taken_when_it_validates():
    run = Agent(FakeModel([GOOD.model_dump_json()]), output_type=Refund).run("x")
    assert run.stop is Stop.ANSWERED and run.output == GOOD
    prose = Agent(FakeModel(["It is refunded.", GOOD.model_dump_json()]), output_type=Refund).run("x")
    assert prose.output == GOOD
    assert prose.messages[2].role == "user"  # the model was told: answer with final_answer
    assert prose.messages[2].content.startswith("your answer did not validate: answer by calling final_answer")


def test_arguments_that_are_not_json_are_an_invalid_answer_not_a_crash():
    broken = tool_call(FINAL_ANSWER).model_copy(update={"arguments": '{"order": "A-1", '})
    run = Agent(FakeModel([broken, final_answer(GOOD)]), output_type=Refund).run("x")
    assert run.output == GOOD and run.checks[0].reason.startswith("the arguments are not a JSON object")


def test_output_retries_zero_means_one_try():
    run = Agent(FakeModel([tool_call(FINAL_ANSWER, {}), final_answer(GOOD)]), output_type=Refund, output_retries=0)
    result = run.run("x")
    assert result.stop is Stop.INVALID_OUTPUT and result.usage.steps == 1


def test_a_typed_agent_cannot_have_a_tool_named_final_answer():
    @tool(description="x", name=FINAL_ANSWER)
    def clash() -> str:
        return ""

    with pytest.raises(ValueError, match="no tool of its may be named 'final_answer'"):
        Agent(FakeModel(["x"]), Registry([clash]), output_type=Refund)


def test_final_answer_on_a_plain_agent_is_an_unknown_tool():
    run = Agent(FakeModel([final_answer(GOOD), "done"])).run("x")
    assert run.output == "done" and run.records[0].status.value == "unknown_tool"


def test_the_answer_is_validated_again_from_json_so_it_is_the_types_own_object():
    class Money(BaseModel):
        cents: int

    run = Agent(FakeModel([tool_call(FINAL_ANSWER, {"cents": "12"})]), output_type=Money).run("x")
    assert run.output == Money(cents=12) and run.output_as(Money) == Money(cents=12)
    assert run.messages[-2].tool_calls[0].arguments == {"cents": "12"}  # the model's words stay as written

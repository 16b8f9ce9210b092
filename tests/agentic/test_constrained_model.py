"""`ConstrainedModel` (agentic/models/constrained.py): each step is one JSON object under a JSON-schema grammar. What
is asserted is the schema the server is sent (the grammar is llama.cpp's to enforce: tests/ops/test_constrained_real.py
runs it on the real model) and how a step becomes our transcript."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentic import Agent, Budget, Message, ModelSettings, Registry, output, tool
from agentic.errors import ModelOutputError
from agentic.models import constrained
from agentic.models.base import ToolSchema
from agentic.models.constrained import ConstrainedModel
from tests.support.fake_openai_server import FakeOpenAIServer, chat_completion

REFUND = ToolSchema(
    name="refund",
    description="Refund an order.",
    parameters={"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
)
LOOKUP = REFUND.model_copy(update={"name": "lookup", "description": "Look an order up."})
GIVE_UP = ToolSchema(
    name="give_up", description="Stop.", parameters={"type": "object", "properties": {"reason": {"type": "string"}}}
)
ASKED = [Message("system", "Handle refunds."), Message("user", "Refund order A-1 now.")]


def model(server: FakeOpenAIServer, **options: Any) -> ConstrainedModel:
    return ConstrainedModel("local-schema", base_url=server.base_url, **options)


def schema_sent(server: FakeOpenAIServer, index: int = -1) -> dict[str, Any]:
    body = server.bodies[index]
    assert "tools" not in body and "tool_choice" not in body  # the grammar, not the server's tool calls
    assert body["response_format"]["type"] == "json_object"
    return body["response_format"]["schema"]


def branches(schema: dict[str, Any]) -> list[dict[str, Any]]:
    return schema.get("anyOf", [schema])


def named(schema: dict[str, Any]) -> list[str]:
    return [b["properties"]["tool"]["const"] if "tool" in b["properties"] else "answer" for b in branches(schema)]


def test_a_step_offers_the_tools_and_the_answer_with_arguments_copied_from_the_user() -> None:
    with FakeOpenAIServer() as server:
        server.queue(chat_completion('{"tool": "refund", "arguments": {"order_id": "A-1"}}'))
        reply = model(server).complete(ASKED, [LOOKUP, REFUND, GIVE_UP], call_index=3)
    schema = schema_sent(server)
    assert named(schema) == ["lookup", "refund", "answer"]  # give_up is not offered to a small model
    refund = branches(schema)[1]["properties"]["arguments"]
    # `order_id` names an identifier: the words of the user's with a digit in them, letters and digits first.
    assert refund["properties"]["order_id"] == {"enum": ["A-1"]}
    [call] = reply.message.tool_calls
    assert (call.id, call.name, call.arguments) == ("call_3_0", "refund", {"order_id": "A-1"})
    system = server.bodies[-1]["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("Handle refunds.")
    assert "refund(order_id): Refund an order." in system["content"]


def test_required_offers_only_tools_none_only_the_answer_and_a_name_only_that_tool() -> None:
    with FakeOpenAIServer() as server:
        for _ in range(3):
            server.queue(chat_completion('{"answer": "ok"}'))
        m = model(server)
        m.complete(ASKED, [LOOKUP, REFUND], settings=ModelSettings(first_tool_choice="required"))
        m.complete(ASKED, [LOOKUP, REFUND], settings=ModelSettings(tool_choice="none"))
        m.complete(ASKED, [LOOKUP, REFUND], settings=ModelSettings(tool_choice="refund"))
    assert [named(schema_sent(server, i)) for i in range(3)] == [["lookup", "refund"], ["answer"], ["refund"]]


def test_a_tool_that_answered_is_not_offered_again_and_the_model_reads_its_own_steps() -> None:
    called = Message("assistant", tool_calls=[{"id": "call_0_0", "name": "lookup", "arguments": {"order_id": "A-1"}}])
    result = Message("tool", "order A-1: 20 EUR", tool_call_id="call_0_0")
    with FakeOpenAIServer() as server:
        server.queue(chat_completion('{"answer": "Refunded."}'))
        server.queue(chat_completion('{"answer": "Refunded."}'))
        model(server).complete([*ASKED, called, result], [LOOKUP, REFUND])
        model(server, repeat_tools=True).complete([*ASKED, called, result], [LOOKUP, REFUND])
    assert named(schema_sent(server, 0)) == ["refund", "answer"]
    assert named(schema_sent(server, 1)) == ["lookup", "refund", "answer"]
    messages = server.bodies[0]["messages"]
    assert messages[2] == {"role": "assistant", "content": '{"tool": "lookup", "arguments": {"order_id": "A-1"}}'}
    assert messages[3] == {"role": "user", "content": "Result of lookup: order A-1: 20 EUR"}
    # The tool's result is read as the user's words are: `A-1` still the one identifier in them.
    assert branches(schema_sent(server, 0))[0]["properties"]["arguments"]["properties"]["order_id"] == {"enum": ["A-1"]}


def test_the_answer_ends_before_max_tokens_and_a_typed_answer_has_its_schema() -> None:
    order = {
        "type": "object",
        "properties": {"order_id": {"type": "string"}, "amount": {"type": "integer"}},
        "required": ["order_id", "amount"],
    }
    asked = [Message("user", "Order C-3 costs 12 EUR.")]
    with FakeOpenAIServer() as server:
        server.queue(chat_completion('{"answer": "fine"}'))
        server.queue(chat_completion('{"answer": {"order_id": "C-3", "amount": 12}}'))
        text = model(server).complete(asked, settings=ModelSettings(max_tokens=40))
        typed = model(server, answer_schema=order).complete(asked)
    assert schema_sent(server, 0)["properties"]["answer"] == {"type": "string", "minLength": 1, "maxLength": 28}
    answer = schema_sent(server, 1)["properties"]["answer"]
    assert answer["properties"]["order_id"] == {"enum": ["C-3"]}  # an id: letters and digits before a bare number
    assert answer["properties"]["amount"] == {"enum": [12]}  # the integers said (the 3 of C-3 is not one)
    assert text.message.content == "fine"
    assert json.loads(typed.message.content) == {"order_id": "C-3", "amount": 12}


def test_a_step_cut_by_max_tokens_is_a_model_output_error() -> None:
    with FakeOpenAIServer() as server:
        server.queue(chat_completion('{"tool": "refund", "arguments": {"order_id": "A-'))
        with pytest.raises(ModelOutputError, match="not complete JSON"):
            model(server).complete(ASKED, [REFUND])


def test_an_agent_on_it_runs_the_call_and_answers() -> None:
    refunded: list[str] = []

    @tool(description="Refund an order.", order_id="The order id.")
    def refund(order_id: str) -> str:
        refunded.append(order_id)
        return f"refunded {order_id}"

    with FakeOpenAIServer() as server:
        server.queue(chat_completion('{"tool": "refund", "arguments": {"order_id": "A-1"}}', prompt_tokens=50))
        server.queue(chat_completion('{"answer": "Refunded A-1."}', completion_tokens=7))
        run = Agent(model(server), Registry([refund]), budget=Budget(max_steps=3)).run("Refund order A-1.")
    assert (run.output, refunded) == ("Refunded A-1.", ["A-1"])
    assert named(schema_sent(server, 1)) == ["answer"]  # the only tool has answered: the answer is what is left


def test_a_typed_agents_final_answer_tool_is_its_only_answer_with_its_schema_under_the_grammar() -> None:
    assert constrained.FINAL_ANSWER == output.FINAL_ANSWER
    final = ToolSchema(
        name="final_answer",
        description="Give the final answer.",
        parameters={
            "type": "object",
            "properties": {"order_id": {"type": "string"}, "summary": {"type": "string"}},
            "required": ["order_id", "summary"],
        },
    )
    rejected = [
        Message("assistant", tool_calls=[{"id": "c1", "name": "final_answer", "arguments": {"order_id": "A-1"}}]),
        Message("tool", "the answer is not valid: summary is missing", tool_call_id="c1"),
    ]
    with FakeOpenAIServer() as server:
        server.queue(chat_completion('{"tool": "final_answer", "arguments": {"order_id": "A-1", "summary": "ok"}}'))
        server.queue(chat_completion('{"tool": "final_answer", "arguments": {"order_id": "A-1", "summary": "ok"}}'))
        reply = model(server).complete(ASKED, [REFUND, final])
        model(server).complete([*ASKED, *rejected], [REFUND, final])
    schema = schema_sent(server, 0)
    assert named(schema) == ["refund", "final_answer"]  # no text answer: a typed agent answers by the tool
    answer = branches(schema)[1]["properties"]["arguments"]["properties"]
    assert answer["order_id"] == {"enum": ["A-1"]}  # an identifier is copied
    assert answer["summary"] == {"type": "string", "maxLength": 80}  # the model's own words, bounded
    assert "final_answer" in named(schema_sent(server, 1))  # sent back with a reason, it is offered again
    assert reply.message.tool_calls[0].arguments == {"order_id": "A-1", "summary": "ok"}

"""Message and ToolCall: immutable, positional-friendly, and round-tripped exactly through dicts."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from agentic import Message, ToolCall, tool_call
from agentic.messages import canonical_json


def test_message_is_frozen() -> None:
    message = Message("user", "hi")
    with pytest.raises(ValidationError):
        message.content = "changed"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        message.role = "system"  # type: ignore[misc]
    assert message.content == "hi"


def test_tool_call_is_frozen() -> None:
    call = ToolCall(id="c1", name="charge", arguments={"amount": 5})
    with pytest.raises(ValidationError):
        call.name = "refund"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        call.arguments = {}  # type: ignore[misc]
    assert call.name == "charge"


def test_tool_calls_are_stored_as_a_tuple() -> None:
    message = Message("assistant", tool_calls=[ToolCall(id="c1", name="t")])
    assert isinstance(message.tool_calls, tuple)


def test_tool_call_does_not_alias_the_callers_dict() -> None:
    arguments = {"amount": 5}
    call = ToolCall(id="c1", name="charge", arguments=arguments)
    scripted = tool_call("charge", arguments)
    arguments["amount"] = 500
    assert call.arguments == {"amount": 5}
    assert scripted.arguments == {"amount": 5}


def test_positional_message() -> None:
    message = Message("user", "hi")
    assert message.role == "user"
    assert message.content == "hi"
    assert message.tool_calls == ()
    assert message.tool_call_id is None
    assert message == Message(role="user", content="hi")


def test_unknown_role_is_rejected() -> None:
    with pytest.raises(ValidationError):
        Message("robot", "hi")  # type: ignore[arg-type]


def test_content_none_becomes_empty_string() -> None:
    assert Message("assistant", None).content == ""  # type: ignore[arg-type]
    assert Message(role="assistant", content=None).content == ""  # type: ignore[arg-type]
    assert Message.from_dict({"role": "assistant", "content": None}).content == ""
    assert Message.model_validate({"role": "assistant", "content": None}).content == ""


TRANSCRIPT = [
    Message("system", "Settle invoices."),
    Message("user", "Settle invoice inv-9"),
    Message(
        "assistant",
        "",
        tool_calls=(
            ToolCall(id="call_2_1", name="charge", arguments={"invoice": "inv-9", "nested": {"b": [1, 2], "a": None}}),
            ToolCall(id="call_2_2", name="lookup", arguments='{"invoice": "inv-9"'),  # not valid JSON: kept raw
            ToolCall(id="call_2_3", name="noop"),
        ),
    ),
    Message("tool", "charged inv-9", tool_call_id="call_2_1"),
    Message("tool", "Error: not JSON", tool_call_id="call_2_2"),
    Message("tool", "", tool_call_id="call_2_3"),
    Message("assistant", "Invoice inv-9 is settled."),
]


def test_to_dict_shape() -> None:
    assert TRANSCRIPT[1].to_dict() == {"role": "user", "content": "Settle invoice inv-9"}
    assert TRANSCRIPT[3].to_dict() == {"role": "tool", "content": "charged inv-9", "tool_call_id": "call_2_1"}
    assistant = TRANSCRIPT[2].to_dict()
    assert assistant["tool_calls"][0] == {
        "id": "call_2_1",
        "name": "charge",
        "arguments": {"invoice": "inv-9", "nested": {"b": [1, 2], "a": None}},
    }
    assert assistant["tool_calls"][1]["arguments"] == '{"invoice": "inv-9"'
    assert assistant["tool_calls"][2]["arguments"] == {}


@pytest.mark.parametrize("message", TRANSCRIPT, ids=lambda m: m.role)
def test_round_trip_is_exact(message: Message) -> None:
    row = message.to_dict()
    assert Message.from_dict(row) == message
    # Through JSON too, as a checkpoint store would hold it.
    assert Message.from_dict(json.loads(json.dumps(row))) == message
    assert Message.from_dict(row).to_dict() == row


def test_round_trip_keeps_tool_call_ids_and_raw_arguments() -> None:
    rows = json.loads(json.dumps([m.to_dict() for m in TRANSCRIPT]))
    restored = [Message.from_dict(r) for r in rows]
    assert restored == TRANSCRIPT
    calls = restored[2].tool_calls
    assert [c.id for c in calls] == ["call_2_1", "call_2_2", "call_2_3"]
    assert isinstance(calls[1].arguments, str)
    assert calls[1].arguments == '{"invoice": "inv-9"'
    assert [m.tool_call_id for m in restored[3:6]] == ["call_2_1", "call_2_2", "call_2_3"]


def test_tool_call_round_trip() -> None:
    for call in TRANSCRIPT[2].tool_calls:
        assert ToolCall.from_dict(call.to_dict()) == call


def test_from_dict_tolerates_missing_optional_keys() -> None:
    assert Message.from_dict({"role": "user"}) == Message("user", "")
    assert Message.from_dict({"role": "assistant", "content": "x", "tool_calls": None}) == Message("assistant", "x")


def test_from_dict_without_role_is_a_clear_value_error() -> None:
    with pytest.raises(ValueError, match="role") as info:
        Message.from_dict({"content": "hi"})
    assert "content" in str(info.value)  # names the keys it did get


def test_canonical_json_is_stable_under_key_order() -> None:
    a = {"b": 1, "a": {"y": [1, {"q": 2, "p": 3}], "x": "é"}}
    b = {"a": {"x": "é", "y": [1, {"p": 3, "q": 2}]}, "b": 1}
    assert canonical_json(a) == canonical_json(b)
    assert canonical_json(a) == '{"a":{"x":"é","y":[1,{"p":3,"q":2}]},"b":1}'
    assert canonical_json({"a": 1}) != canonical_json({"a": 2})


def test_canonical_arguments_ignore_key_order_but_not_values() -> None:
    first = tool_call("charge", {"invoice": "inv-9", "amount": 5})
    second = tool_call("charge", {"amount": 5, "invoice": "inv-9"})
    assert first.canonical_arguments == second.canonical_arguments
    assert first.canonical_arguments != tool_call("charge", {"amount": 6, "invoice": "inv-9"}).canonical_arguments
    assert ToolCall(name="x", arguments="{raw").canonical_arguments == "{raw"

"""OpenAIChatModel over real loopback HTTP: wire format both ways, and the error classification."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from email.utils import formatdate
from typing import Any

import pytest
from pydantic import ValidationError

from agentic.errors import ContextOverflowError, ModelOutputError, NonRetryableModelError, RetryableModelError
from agentic.messages import Message, ToolCall
from agentic.models.base import Model, ModelSettings, Pricing, ToolSchema
from agentic.models.fake import FakeModel
from agentic.models.openai_chat import PRICES, OpenAIChatModel, price_for
from tests.support.fake_openai_server import FakeOpenAIServer, chat_completion, function_call

USER = [Message("user", "hello")]


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


def make_model(server: FakeOpenAIServer, model: str = "test-model", **kwargs: Any) -> OpenAIChatModel:
    return OpenAIChatModel(model, base_url=server.base_url, api_key="sk-test", timeout=5.0, **kwargs)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_plain_answer_with_usage_and_cost(server: FakeOpenAIServer) -> None:
    server.queue(chat_completion("Paris.", prompt_tokens=1000, completion_tokens=500))
    model = make_model(server, pricing=Pricing(input_per_million=2.0, output_per_million=8.0))

    reply = model.complete(USER)

    assert isinstance(model, Model)
    assert model.name == "test-model"
    assert reply.message == Message("assistant", "Paris.")
    assert (reply.input_tokens, reply.output_tokens) == (1000, 500)
    assert reply.cost == pytest.approx(0.006)
    [sent] = server.bodies
    assert sent["model"] == "test-model"
    assert sent["messages"] == [{"role": "user", "content": "hello"}]
    assert "tools" not in sent
    assert "temperature" not in sent


def test_missing_usage_counts_zero(server: FakeOpenAIServer) -> None:
    server.queue(chat_completion("ok", prompt_tokens=None, completion_tokens=None))
    reply = make_model(server, pricing=Pricing(input_per_million=5.0, output_per_million=5.0)).complete(USER)
    assert (reply.input_tokens, reply.output_tokens, reply.cost) == (0, 0, 0.0)


def test_price_table_is_used_when_no_pricing_is_given(server: FakeOpenAIServer) -> None:
    server.queue(chat_completion("a", prompt_tokens=1_000_000, completion_tokens=1_000_000))
    server.queue(chat_completion("b", prompt_tokens=1_000_000, completion_tokens=1_000_000))

    known = make_model(server, "gpt-4o-mini").complete(USER)
    unknown = make_model(server, "my-local-llama").complete(USER)

    expected = PRICES["gpt-4o-mini"].input_per_million + PRICES["gpt-4o-mini"].output_per_million
    assert known.cost == pytest.approx(expected) and known.cost > 0
    assert unknown.cost == 0.0
    assert price_for("gpt-4o-mini-2024-07-18") == PRICES["gpt-4o-mini"]


def test_tool_call_response_is_parsed_into_tool_calls(server: FakeOpenAIServer) -> None:
    calls = [
        function_call("call_1", "get_weather", '{"city": "Paris", "days": 3}'),
        function_call("call_2", "list_orders", "{}"),
    ]
    server.queue(chat_completion(None, tool_calls=calls, prompt_tokens=20, completion_tokens=10))

    reply = make_model(server).complete(USER)

    assert reply.message.role == "assistant"
    assert reply.message.content == ""
    assert reply.message.tool_calls == (
        ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris", "days": 3}),
        ToolCall(id="call_2", name="list_orders", arguments={}),
    )


def test_request_wire_format_for_tool_transcript(server: FakeOpenAIServer) -> None:
    server.queue(chat_completion("done"))
    transcript = [
        Message("system", "be brief"),
        Message("user", "weather in Paris?"),
        Message(
            "assistant",
            "",
            tool_calls=[
                ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"}),
                ToolCall(id="call_2", name="get_weather", arguments='{"city": Par'),
            ],
        ),
        Message("tool", '{"temp_c": 21}', tool_call_id="call_1"),
        Message("tool", "error: arguments are not valid JSON", tool_call_id="call_2"),
    ]
    weather = ToolSchema(
        name="get_weather",
        description="Current weather for a city.",
        parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    )

    make_model(server, temperature=0.0).complete(transcript, [weather], call_index=3)

    [sent] = server.bodies
    assert sent["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "weather in Paris?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                },
                {"id": "call_2", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": Par'}},
            ],
        },
        {"role": "tool", "content": '{"temp_c": 21}', "tool_call_id": "call_1"},
        {"role": "tool", "content": "error: arguments are not valid JSON", "tool_call_id": "call_2"},
    ]
    assert json.loads(sent["messages"][2]["tool_calls"][0]["function"]["arguments"]) == {"city": "Paris"}
    assert sent["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather for a city.",
                "parameters": weather.parameters,
            },
        }
    ]
    assert sent["temperature"] == 0.0


@pytest.mark.parametrize(
    ("wire_arguments", "expected"),
    [
        ('{"city": "Pa', '{"city": "Pa'),  # truncated JSON
        ("[1, 2]", "[1, 2]"),  # valid JSON, but not an object
        ("", {}),  # some servers spell "no arguments" as an empty string
    ],
)
def test_malformed_tool_arguments_are_kept_raw(
    server: FakeOpenAIServer, wire_arguments: str, expected: dict[str, Any] | str
) -> None:
    server.queue(chat_completion(None, tool_calls=[function_call("call_9", "get_weather", wire_arguments)]))
    [call] = make_model(server).complete(USER).message.tool_calls
    assert (call.id, call.name, call.arguments) == ("call_9", "get_weather", expected)


def test_tool_call_without_id_gets_one(server: FakeOpenAIServer) -> None:
    server.queue(chat_completion(None, tool_calls=[{"type": "function", "function": {"name": "f", "arguments": "{}"}}]))
    [call] = make_model(server).complete(USER, call_index=4).message.tool_calls
    assert call.id == "call_4_0"


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "7"}, 7.0),
        ({"retry-after": "0.25"}, 0.25),
        ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),
        ({}, None),
    ],
)
def test_429_is_retryable_with_retry_after(
    server: FakeOpenAIServer, headers: dict[str, str], expected: float | None
) -> None:
    server.queue_error(429, "Rate limit reached", headers=headers)
    with pytest.raises(RetryableModelError) as caught:
        make_model(server).complete(USER)
    assert caught.value.status == 429
    assert caught.value.retry_after == expected
    assert str(caught.value) == "HTTP 429 (fake_error)"  # the provider's words stay out
    assert len(server.requests) == 1


def test_retry_after_http_date(server: FakeOpenAIServer) -> None:
    server.queue_error(429, "slow down", headers={"retry-after": formatdate(time.time() + 30, usegmt=True)})
    with pytest.raises(RetryableModelError) as caught:
        make_model(server).complete(USER)
    assert caught.value.retry_after is not None
    assert 25 <= caught.value.retry_after <= 31


@pytest.mark.parametrize("status", [500, 502, 503, 408, 409])
def test_server_errors_are_retryable_and_not_retried_by_the_sdk(server: FakeOpenAIServer, status: int) -> None:
    server.queue_error(status, "upstream exploded")
    server.queue(chat_completion("a hidden retry would get this"))
    with pytest.raises(RetryableModelError) as caught:
        make_model(server).complete(USER)
    assert caught.value.status == status
    assert caught.value.retryable is True
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("status", "provider_message"),
    [(400, "Invalid 'messages[1].tool_call_id'"), (401, "Incorrect API key provided"), (404, "model not found")],
)
def test_client_errors_are_not_retryable(server: FakeOpenAIServer, status: int, provider_message: str) -> None:
    server.queue_error(status, provider_message)
    with pytest.raises(NonRetryableModelError) as caught:
        make_model(server).complete(USER)
    error = caught.value
    assert not isinstance(error, (RetryableModelError, ModelOutputError))
    assert error.retryable is False
    assert error.status == status
    # The status and the provider's error type: its message is free text that may quote the request.
    assert str(error) == f"HTTP {status} (fake_error)"
    assert len(server.requests) == 1


def test_plain_string_error_body_is_reported_by_its_status_only(server: FakeOpenAIServer) -> None:
    server.queue({"error": "model 'llama9' not found, try pulling it first"}, status=404)
    with pytest.raises(NonRetryableModelError) as caught:
        make_model(server).complete(USER)
    assert str(caught.value) == "HTTP 404"


def test_an_error_quoting_the_key_says_its_code_and_type_never_the_key(server: FakeOpenAIServer) -> None:
    """A gateway's 401 quotes the bearer it got; a prose `code` is left out as well."""
    server.queue_key_echo(401)
    server.queue({"error": {"message": "no", "type": "auth", "code": "key {key} is wrong"}}, status=403)
    model = OpenAIChatModel("gpt-4o", base_url=server.base_url, api_key="sk-test-ECHOED-KEY")
    with pytest.raises(NonRetryableModelError) as echoed:
        model.complete(USER)
    with pytest.raises(NonRetryableModelError) as prose:
        model.complete(USER)
    assert str(echoed.value) == "HTTP 401 (invalid_request_error, invalid_api_key)"
    assert str(prose.value) == "HTTP 403 (auth)"
    assert model.credentials == ("sk-test-ECHOED-KEY",)


@pytest.mark.parametrize("content_type", ["text/html", "application/json"])
def test_body_that_is_not_json_is_a_model_output_error(server: FakeOpenAIServer, content_type: str) -> None:
    server.queue(raw="<html>502 Bad Gateway</html>", headers={"Content-Type": content_type})
    with pytest.raises(ModelOutputError, match="not JSON") as caught:
        make_model(server).complete(USER)
    assert caught.value.status == 200
    assert caught.value.retryable is False


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"id": "chatcmpl-1", "object": "chat.completion"}, "no choices"),
        ({"choices": []}, "no choices"),
        ({"choices": [{"index": 0, "finish_reason": "stop"}]}, "no message"),
        ({"choices": [{"message": {"role": "assistant", "content": 42}}]}, "not text"),
        (
            chat_completion(None, tool_calls=[{"id": "c1", "type": "function", "function": {"arguments": "{}"}}]),
            "no function name",
        ),
        ([1, 2, 3], "not a JSON object"),
    ],
)
def test_malformed_json_reply_is_a_model_output_error(server: FakeOpenAIServer, body: Any, problem: str) -> None:
    server.queue(body)
    with pytest.raises(ModelOutputError, match=problem):
        make_model(server).complete(USER)


def test_connection_refused_is_retryable() -> None:
    model = OpenAIChatModel("m", base_url=f"http://127.0.0.1:{closed_port()}/v1", api_key="k", timeout=5.0)
    with pytest.raises(RetryableModelError, match="connection") as caught:
        model.complete(USER)
    assert caught.value.status is None


def test_slow_server_times_out_as_retryable(server: FakeOpenAIServer) -> None:
    server.queue(chat_completion("too late"), delay=5.0)
    model = OpenAIChatModel("m", base_url=server.base_url, api_key="k", timeout=0.5)
    with pytest.raises(RetryableModelError, match="timed out"):  # waiting would have answered "too late"
        model.complete(USER)
    assert len(server.requests) == 1


def test_the_api_key_is_the_one_given_never_the_environments(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key goes only where it was given; the environment's OPENAI_API_KEY is not a default."""
    server.queue(chat_completion("a"))
    server.queue(chat_completion("b"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    OpenAIChatModel("m", base_url=server.base_url).complete(USER)
    OpenAIChatModel("m", base_url=server.base_url, api_key="sk-explicit").complete(USER)
    auth = [{k.lower(): v for k, v in r.headers.items()}["authorization"] for r in server.requests]
    assert auth == ["Bearer not-needed", "Bearer sk-explicit"]


def test_base_url_without_scheme_is_not_retryable() -> None:
    model = OpenAIChatModel("m", base_url=f"127.0.0.1:{closed_port()}/v1", api_key="k", timeout=5.0)
    with pytest.raises(NonRetryableModelError, match="base_url") as caught:
        model.complete(USER)
    assert not isinstance(caught.value, RetryableModelError)


ADD = ToolSchema(
    name="add",
    description="Add two integers.",
    parameters={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
)
NOTE = ToolSchema(name="note", description="Write a note.", parameters={"type": "object", "properties": {}})


def test_tool_choice_is_sent_whenever_tools_are_offered(server: FakeOpenAIServer) -> None:
    for _ in range(2):
        server.queue(chat_completion("ok"))
    model = make_model(server)

    model.complete(USER, [ADD])
    model.complete(USER)

    with_tools, without_tools = server.bodies
    assert with_tools["tool_choice"] == "auto"
    assert "tool_choice" not in without_tools  # OpenAI rejects a tool_choice with no tools


def test_settings_are_sent_and_overridden_per_call(server: FakeOpenAIServer) -> None:
    for _ in range(2):
        server.queue(chat_completion("ok"))
    model = make_model(server, settings=ModelSettings(temperature=0.0, seed=7, max_tokens=16, tool_choice="required"))

    model.complete(USER, [ADD, NOTE])
    model.complete(USER, [ADD, NOTE], settings=ModelSettings(tool_choice="add", max_tokens=4))

    first, second = server.bodies
    assert {k: first[k] for k in ("temperature", "seed", "max_tokens", "tool_choice")} == {
        "temperature": 0.0,
        "seed": 7,
        "max_tokens": 16,
        "tool_choice": "required",
    }
    # Only the fields the override sets change; the model's own seed and temperature stay.
    assert {k: second[k] for k in ("temperature", "seed", "max_tokens", "tool_choice")} == {
        "temperature": 0.0,
        "seed": 7,
        "max_tokens": 4,
        "tool_choice": {"type": "function", "function": {"name": "add"}},
    }


def test_first_tool_choice_applies_until_the_first_assistant_turn(server: FakeOpenAIServer) -> None:
    for _ in range(2):
        server.queue(chat_completion("ok"))
    model = make_model(server, settings=ModelSettings(first_tool_choice="add"))
    call = ToolCall(id="call_1", name="add", arguments={"a": 1, "b": 2})
    later = [*USER, Message("assistant", "", tool_calls=[call]), Message("tool", "3", tool_call_id="call_1")]

    model.complete(USER, [ADD, NOTE])
    model.complete(later, [ADD, NOTE])

    first, second = server.bodies
    assert first["tool_choice"] == {"type": "function", "function": {"name": "add"}}
    assert second["tool_choice"] == "auto"


def test_a_tool_choice_naming_a_tool_not_offered_is_not_retryable(server: FakeOpenAIServer) -> None:
    model = make_model(server, settings=ModelSettings(tool_choice="refund"))
    with pytest.raises(NonRetryableModelError, match=r"tool_choice names 'refund', which is not offered \(add, note\)"):
        model.complete(USER, [ADD, NOTE])
    assert server.requests == []


@pytest.mark.parametrize(
    "bad", [{"tool_choice": ""}, {"tool_choice": "two words"}, {"temperature": -1}, {"max_tokens": 0}]
)
def test_bad_model_settings_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        ModelSettings(**bad)


def test_the_fake_model_accepts_and_ignores_settings() -> None:
    model = FakeModel(["done"])
    reply = model.complete(USER, [ADD], settings=ModelSettings(tool_choice="add", max_tokens=1))
    assert reply.message.content == "done"


@pytest.mark.parametrize(
    ("body", "tokens", "window"),
    [
        # llama-cpp-python's server (and vLLM): the same words as OpenAI's, with the split.
        (
            {
                "message": "This model's maximum context length is 512 tokens. However, you requested 900 tokens "
                "(880 in the messages, 20 in the completion). Please reduce the length of the messages or completion.",
                "type": "invalid_request_error",
                "code": "context_length_exceeded",
            },
            880,
            512,
        ),
        (
            {
                "message": "This model's maximum context length is 128000 tokens. However, your messages resulted in "
                "130512 tokens. Please reduce the length of the messages.",
                "code": "context_length_exceeded",
            },
            130512,
            128000,
        ),
        # llama.cpp's own server.
        (
            {
                "message": "the request exceeds the available context size, try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": 5000,
                "n_ctx": 4096,
            },
            5000,
            4096,
        ),
    ],
)
def test_context_overflow_is_not_retryable_and_says_so(
    server: FakeOpenAIServer, body: dict[str, Any], tokens: int, window: int
) -> None:
    server.queue({"error": body}, status=400)
    with pytest.raises(ContextOverflowError) as caught:
        make_model(server).complete(USER)
    error = caught.value
    assert isinstance(error, NonRetryableModelError) and error.retryable is False
    assert (error.status, error.input_tokens, error.context_window) == (400, tokens, window)
    assert f"the transcript ({tokens} tokens) exceeds the model's context window of {window} tokens" in str(error)
    assert body["message"] not in str(error)  # the numbers are read from it; the words stay out


def test_context_overflow_without_numbers_still_reads_clearly(server: FakeOpenAIServer) -> None:
    server.queue_error(400, "Input is too long: too many tokens for this model")
    with pytest.raises(ContextOverflowError, match="the transcript exceeds the model's context window;"):
        make_model(server).complete(USER)


def test_tool_results_can_be_sent_as_user_turns(server: FakeOpenAIServer) -> None:
    server.queue(chat_completion("5"))
    call = ToolCall(id="call_1", name="add", arguments={"a": 2, "b": 3})
    transcript = [*USER, Message("assistant", "", tool_calls=[call]), Message("tool", "5", tool_call_id="call_1")]

    make_model(server, tool_result_role="user").complete(transcript, [ADD])

    [sent] = server.bodies
    assert sent["messages"][1]["tool_calls"][0]["id"] == "call_1"
    assert sent["messages"][2] == {"role": "user", "content": "Result of add: 5"}


def test_a_tool_choice_mode_the_server_lacks_is_refused_before_sending(server: FakeOpenAIServer) -> None:
    model = make_model(server, settings=ModelSettings(tool_choice="required"), tool_choice_modes=frozenset({"auto"}))
    with pytest.raises(
        NonRetryableModelError, match="does not support tool_choice='required'; use auto or a tool's name"
    ):
        model.complete(USER, [ADD])
    assert server.requests == []


def test_a_malformed_answer_quoting_the_key_is_masked_by_the_adapter_itself(server: FakeOpenAIServer) -> None:
    """The in-process `Agent.run` and the checkpoint runner have no worker masking their errors: the adapter
    masks its own key in every error it raises, a 200 that is not JSON included."""
    server.queue_key_echo(200, raw="<html>proxy: upstream refused Bearer {key}</html>")
    model = OpenAIChatModel("gpt-4o", base_url=server.base_url, api_key="sk-test-ECHOED-KEY-200")
    with pytest.raises(ModelOutputError) as caught:
        model.complete(USER)
    assert "sk-test-ECHOED-KEY-200" not in str(caught.value) and "Bearer ***" in str(caught.value), str(caught.value)

"""The providers reached through the model layer (agentic/models/layer.py), each against a loopback server speaking
its wire format: what goes out, what comes back into our transcript, and how failures are classified.

The provider's opaque parts (Anthropic's thinking blocks with their signatures, Gemini's thought signatures) must
survive what the durable path does to a reply — written as a stored row and read back — and reach the provider
again verbatim; a transcript without them must store exactly as before."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")
pytest.importorskip("anthropic")
pytest.importorskip("google.genai")

from agentic import Message
from agentic.errors import ContextOverflowError, NonRetryableModelError, RetryableModelError
from agentic.models.base import ModelDelta, ModelSettings, Pricing, ToolSchema
from agentic.models.providers import anthropic_model, google_model
from tests.support.provider_servers import (
    AnthropicServer,
    GeminiServer,
    function_call,
    signature,
    text,
    thinking,
    tool_use,
)

KEY = "sk-ant-LAYER-TEST-KEY-4242"
REFUND = ToolSchema(
    name="refund",
    description="Refund an order.",
    parameters={"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
)
ASKED = [Message("system", "Handle refunds."), Message("user", "Refund order 4471.")]


def stored(message: Message) -> Message:
    """The message as the transcript store writes and reads it (a JSON row)."""
    return Message.from_dict(json.loads(json.dumps(message.to_dict())))


def test_an_anthropic_thinking_block_goes_back_with_its_signature_after_the_store() -> None:
    with AnthropicServer() as server:
        model = anthropic_model("claude-sonnet-4-5", api_key=KEY, base_url=server.base_url)
        server.queue_message([thinking("It qualifies.", "sig-A1"), tool_use("toolu_1", "refund", {"order_id": "4471"})])
        server.queue_message([text("Refunded order 4471.")])
        first = model.complete(ASKED, [REFUND], call_index=0)
        [call] = first.message.tool_calls
        assert (call.id, call.name, call.arguments) == ("toolu_1", "refund", {"order_id": "4471"})
        history = [*ASKED, stored(first.message), Message("tool", "refunded 4471", tool_call_id="toolu_1")]
        second = model.complete(history, [REFUND], call_index=1)

    assert second.message.content == "Refunded order 4471."
    assistant = next(m for m in server.requests[1].json["messages"] if m["role"] == "assistant")
    assert assistant["content"] == [
        {"type": "thinking", "thinking": "It qualifies.", "signature": "sig-A1"},
        {"type": "tool_use", "id": "toolu_1", "name": "refund", "input": {"order_id": "4471"}},
    ]
    assert server.requests[0].json["system"] == "Handle refunds."
    # Every request carries the key the worker gave this model, and no retries of the SDK's own were made.
    assert [r.headers.get("x-api-key") or r.headers["authorization"] for r in server.requests] == [f"Bearer {KEY}"] * 2


def test_a_gemini_thought_signature_goes_back_on_its_function_call_after_the_store() -> None:
    with GeminiServer() as server:
        model = google_model("gemini-2.5-flash", api_key=KEY, base_url=server.base_url)
        server.queue_content(
            [
                {"text": "Checking the order.", "thought": True},
                function_call("refund", {"order_id": "4471"}, thought_signature="sig-G1"),
            ]
        )
        server.queue_content([{"text": "Refunded order 4471."}])
        first = model.complete(ASKED, [REFUND], call_index=0)
        [call] = first.message.tool_calls
        history = [*ASKED, stored(first.message), Message("tool", "refunded 4471", tool_call_id=call.id)]
        second = model.complete(history, [REFUND], call_index=1)

    assert second.message.content == "Refunded order 4471."
    assert "Checking" not in first.message.content  # a thought is not the answer
    turn = next(c for c in server.requests[1].json["contents"] if c["role"] == "model")
    calls = [p for p in turn["parts"] if "functionCall" in p]
    assert calls == [
        {
            "functionCall": {"id": call.id, "name": "refund", "args": {"order_id": "4471"}},
            "thoughtSignature": signature("sig-G1"),
        }
    ]
    response = next(p for c in server.requests[1].json["contents"] for p in c["parts"] if "functionResponse" in p)
    assert response["functionResponse"]["name"] == "refund"


def test_a_reply_with_nothing_opaque_stores_as_every_row_did() -> None:
    with AnthropicServer() as server:
        model = anthropic_model("claude-sonnet-4-5", api_key=KEY, base_url=server.base_url)
        server.queue_message([text("Hello.")])
        reply = model.complete(ASKED, call_index=0)
    assert reply.message.provider_parts == ()
    assert reply.message.to_dict() == {"role": "assistant", "content": "Hello."}
    assert "provider_parts" not in reply.message.model_dump_json()


def test_streaming_hands_text_and_tool_call_deltas_and_returns_the_whole_reply() -> None:
    deltas: list[ModelDelta] = []
    with AnthropicServer() as server:
        model = anthropic_model("claude-sonnet-4-5", api_key=KEY, base_url=server.base_url)
        server.queue_message([text("Refunding now."), tool_use("toolu_9", "refund", {"order_id": "4471"})])
        reply = model.complete(ASKED, [REFUND], call_index=0, on_delta=deltas.append)
    assert server.requests[0].json["stream"] is True
    assert "".join(d.text for d in deltas if d.kind == "text") == "Refunding now." == reply.message.content
    calls = [d for d in deltas if d.kind == "tool_call"]
    assert {(d.position, d.call_id, d.name) for d in calls if d.name} == {(1, "toolu_9", "refund")}
    assert json.loads("".join(d.arguments for d in calls)) == {"order_id": "4471"}
    assert reply.message.tool_calls[0].arguments == {"order_id": "4471"}

    deltas.clear()
    with GeminiServer() as server:
        model = google_model("gemini-2.5-flash", api_key=KEY, base_url=server.base_url)
        server.queue_content([{"text": "Refunded "}, {"text": "order 4471."}])
        reply = model.complete(ASKED, [REFUND], call_index=0, on_delta=deltas.append)
    assert ":streamGenerateContent" in server.requests[0].path
    assert [d.text for d in deltas] == ["Refunded ", "order 4471."]
    assert reply.message.content == "Refunded order 4471."


def test_usage_counts_cached_tokens_and_the_cost_comes_from_the_price_table() -> None:
    with AnthropicServer() as server:
        model = anthropic_model("claude-sonnet-4-5", api_key=KEY, base_url=server.base_url)
        server.queue_message([text("Hi.")])
        reply = model.complete(ASKED, call_index=0)
        server.queue_message([text("Hi.")])
        model.pricing = Pricing(input_per_million=1.0, output_per_million=1.0)
        priced = model.complete(ASKED, call_index=1)
    # 1000 fresh + 2000 cached input tokens, 100 output (provider_servers.anthropic_message).
    assert (reply.input_tokens, reply.cache_read_tokens, reply.output_tokens) == (3000, 2000, 100)
    # genai-prices' Claude Sonnet 4.5: $3/M input, $0.30/M cache reads, $15/M output.
    assert reply.cost == pytest.approx(1000 * 3e-6 + 2000 * 0.3e-6 + 100 * 15e-6)
    assert priced.cost == pytest.approx(3100 / 1e6)  # the operator's own price replaces the table's


@pytest.mark.parametrize(
    ("status", "kind", "headers", "error", "retry_after"),
    [
        (429, "rate_limit_error", {"retry-after": "7"}, RetryableModelError, 7.0),
        (529, "overloaded_error", {}, RetryableModelError, None),
        (500, "api_error", {}, RetryableModelError, None),
        (400, "invalid_request_error", {}, NonRetryableModelError, None),
    ],
)
def test_anthropic_errors_are_classified_with_the_wait_the_provider_asked_for(
    status: int, kind: str, headers: dict[str, str], error: type[Exception], retry_after: float | None
) -> None:
    with AnthropicServer() as server:
        model = anthropic_model("claude-sonnet-4-5", api_key=KEY, base_url=server.base_url)
        server.queue_error(status, kind, "something happened", headers=headers)
        with pytest.raises(error) as raised:
            model.complete(ASKED, call_index=0)
    assert type(raised.value) is error
    assert str(raised.value) == f"anthropic:claude-sonnet-4-5: HTTP {status} ({kind})"
    assert raised.value.retry_after == retry_after  # type: ignore[attr-defined]
    assert len(server.requests) == 1  # the SDK did not retry underneath


def test_a_context_overflow_is_named_and_never_retried() -> None:
    with AnthropicServer() as server:
        model = anthropic_model("claude-sonnet-4-5", api_key=KEY, base_url=server.base_url)
        server.queue_error(400, "invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum")
        with pytest.raises(ContextOverflowError):
            model.complete(ASKED, call_index=0)


@pytest.mark.parametrize("provider", ["anthropic", "google"])
def test_a_key_the_provider_echoes_never_leaves_the_model(provider: str) -> None:
    server = AnthropicServer() if provider == "anthropic" else GeminiServer()
    make: Any = anthropic_model if provider == "anthropic" else google_model
    with server:
        model = make("some-model", api_key=KEY, base_url=server.base_url)
        server.queue_key_echo()
        with pytest.raises(NonRetryableModelError) as raised:
            model.complete(ASKED, call_index=0)
    [echo] = server.echoed
    assert KEY.encode() in echo  # the provider quoted the key it was sent: the attack happened
    assert KEY not in str(raised.value) and KEY not in repr(raised.value.args)
    assert "HTTP 401" in str(raised.value)
    assert model.credentials == (KEY,)  # what the model activity masks in any text about this call


def test_a_server_error_on_gemini_is_retryable_and_tried_once() -> None:
    with GeminiServer() as server:
        model = google_model("gemini-2.5-flash", api_key=KEY, base_url=server.base_url)
        server.queue_error(503, "UNAVAILABLE", "The model is overloaded.", headers={"retry-after": "3"})
        with pytest.raises(RetryableModelError) as raised:
            model.complete(ASKED, call_index=0)
    assert raised.value.retry_after == 3.0
    assert len(server.requests) == 1


def test_tool_choice_is_sent_as_the_provider_spells_it() -> None:
    lookup = REFUND.model_copy(update={"name": "lookup"})
    with AnthropicServer() as server:
        model = anthropic_model("claude-sonnet-4-5", api_key=KEY, base_url=server.base_url)
        server.queue_message([tool_use("toolu_1", "refund", {"order_id": "1"})])
        chosen = ModelSettings(tool_choice="refund", temperature=0.0)
        model.complete(ASKED, [REFUND, lookup], call_index=0, settings=chosen)
        with pytest.raises(NonRetryableModelError, match="not offered"):
            model.complete(ASKED, [REFUND], call_index=1, settings=ModelSettings(tool_choice="charge"))
    body = server.requests[0].json
    assert body["tool_choice"] == {"type": "tool", "name": "refund"}
    assert body["temperature"] == 0.0
    assert len(server.requests) == 1

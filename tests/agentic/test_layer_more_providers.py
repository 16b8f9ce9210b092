"""Bedrock, Groq and Mistral through the model layer (agentic/models/layer.py), each against a loopback server
speaking its wire format (tests/support/bedrock_server.py, tests/support/chat_servers.py): the same `LayerModel`
as Anthropic's and Gemini's (tests/agentic/test_layer_models.py), so the same promises, played per provider —
a tool call and its result paired across a stored row, streamed deltas, usage and the price table's cost, errors
classified with the provider's `Retry-After`, one request per call, a key echoed in an error nowhere in it.

Bedrock's requests are signed with SigV4 and the server recomputes each signature with the secret: a request
signed with anything else is refused, as Bedrock refuses it."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from agentic import Message
from agentic.errors import ContextOverflowError, NonRetryableModelError, RetryableModelError
from agentic.models.base import ModelDelta, ModelSettings, ToolSchema
from tests.support.provider_servers import ProviderServer

KEY = "PROVIDER-LAYER-TEST-KEY-4242"
SECRET = "bedrock-SECRET-access-key-9999"
REFUND = ToolSchema(
    name="refund",
    description="Refund an order.",
    parameters={"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
)
ASKED = [Message("system", "Handle refunds."), Message("user", "Refund order 4471.")]


@dataclass(frozen=True)
class Case:
    module: str  # the SDK: the case is skipped without it
    model: str
    server: Callable[[], ProviderServer]
    make: Callable[[ProviderServer], Any]
    tool_turn: Callable[[ProviderServer, str], None]  # queue a reply: "Refunding." and a refund call with this id
    answer: Callable[[ProviderServer], None]
    error: Callable[..., None]  # (server, status, headers) queues the provider's error of that status
    usage: tuple[int, int, int]  # input (cached included), cached, output tokens of every reply
    cost: float  # genai-prices' USD for that usage
    request_path: str


def _bedrock(server: Any) -> Any:
    from agentic.models.providers import bedrock_model
    from tests.support.bedrock_server import MODEL_ID

    return bedrock_model(
        MODEL_ID, access_key_id=KEY, secret_access_key=SECRET, region="us-east-1", base_url=server.base_url
    )


def _bedrock_server() -> ProviderServer:
    from tests.support.bedrock_server import BedrockServer

    return BedrockServer(secret=SECRET)


def _bedrock_tool_turn(server: Any, call_id: str) -> None:
    from tests.support.bedrock_server import reasoning, tool_use

    server.queue_message(
        [
            reasoning("It qualifies.", "sig-B1"),
            {"text": "Refunding."},
            tool_use(call_id, "refund", {"order_id": "4471"}),
        ]
    )


BEDROCK_ERRORS = {429: "ThrottlingException", 500: "InternalServerException", 503: "ServiceUnavailableException"}
BEDROCK_ERRORS |= {400: "ValidationException"}
CHAT_ERRORS = {429: "rate_limit_exceeded", 500: "internal_server_error", 503: "service_unavailable"}
CHAT_ERRORS |= {400: "invalid_request_error"}


def _chat(make: str) -> Callable[[Any], Any]:
    def made(server: Any) -> Any:
        from agentic.models import providers

        return getattr(providers, make)(server.model, api_key=KEY, base_url=server.base_url)

    return made


def _chat_server(name: str) -> Callable[[], ProviderServer]:
    def made() -> ProviderServer:
        from tests.support import chat_servers

        server: ProviderServer = getattr(chat_servers, name)()
        return server

    return made


def _chat_tool_turn(server: Any, call_id: str) -> None:
    from tests.support.chat_servers import chat_call

    server.queue_message("Refunding.", [chat_call(call_id, "refund", {"order_id": "4471"})])


CASES = {
    "bedrock": Case(
        module="boto3",
        model="bedrock:anthropic.claude-sonnet-4-5-20250929-v1:0",
        server=_bedrock_server,
        make=_bedrock,
        tool_turn=_bedrock_tool_turn,
        answer=lambda s: s.queue_message([{"text": "Refunded order 4471."}]),  # type: ignore[attr-defined]
        error=lambda s, status, headers: s.queue_error(status, BEDROCK_ERRORS[status], "failed", headers=headers),
        usage=(3000, 2000, 100),
        # genai-prices' Claude Sonnet 4.5 on Bedrock: $3.30/M input, $0.33/M cache reads, $16.50/M output
        # (Anthropic's own prices and 10% more), cache reads at their own price.
        cost=1000 * 3.3e-6 + 2000 * 0.33e-6 + 100 * 16.5e-6,
        request_path="/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse",
    ),
    "groq": Case(
        module="groq",
        model="groq:llama-3.3-70b-versatile",
        server=_chat_server("GroqServer"),
        make=_chat("groq_model"),
        tool_turn=_chat_tool_turn,
        answer=lambda s: s.queue_message("Refunded order 4471."),  # type: ignore[attr-defined]
        error=lambda s, status, headers: s.queue_error(
            status, "tokens", "failed", code=CHAT_ERRORS[status], headers=headers
        ),
        usage=(1000, 0, 100),
        cost=1000 * 0.59e-6 + 100 * 0.79e-6,  # genai-prices' Llama 3.3 70B on Groq
        request_path="/openai/v1/chat/completions",
    ),
    "mistral": Case(
        module="mistralai",
        model="mistral:mistral-large-latest",
        server=_chat_server("MistralServer"),
        make=_chat("mistral_model"),
        tool_turn=_chat_tool_turn,
        answer=lambda s: s.queue_message("Refunded order 4471."),  # type: ignore[attr-defined]
        error=lambda s, status, headers: s.queue_error(
            status, "invalid_request_error", "failed", code=str(3000 + status), headers=headers
        ),
        usage=(1000, 0, 100),
        cost=1000 * 2e-6 + 100 * 6e-6,  # genai-prices' Mistral Large
        request_path="/v1/chat/completions",
    ),
}


def case(name: str) -> Case:
    chosen = CASES[name]
    pytest.importorskip(chosen.module)
    return chosen


def stored(message: Message) -> Message:
    """The message as the transcript store writes and reads it (a JSON row)."""
    return Message.from_dict(json.loads(json.dumps(message.to_dict())))


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_tool_call_and_its_result_go_back_paired_after_the_store(name: str) -> None:
    c = case(name)
    with c.server() as server:
        model = c.make(server)
        c.tool_turn(server, "call4471a")
        c.answer(server)
        first = model.complete(ASKED, [REFUND], call_index=0, settings=ModelSettings(max_tokens=1024))
        [call] = first.message.tool_calls
        assert (call.id, call.name, call.arguments) == ("call4471a", "refund", {"order_id": "4471"})
        assert first.message.content == "Refunding."
        history = [*ASKED, stored(first.message), Message("tool", "refunded 4471", tool_call_id=call.id)]
        second = model.complete(history, [REFUND], call_index=1, settings=ModelSettings(max_tokens=1024))

    assert second.message.content == "Refunded order 4471."
    assert [r.path for r in server.requests] == [c.request_path] * 2
    assert model.name == c.model
    body = server.requests[1].json
    if name == "bedrock":
        [assistant, result] = [m for m in body["messages"] if m["role"] == "assistant" or "toolResult" in str(m)]
        assert assistant["content"] == [
            {"reasoningContent": {"reasoningText": {"text": "It qualifies.", "signature": "sig-B1"}}},
            {"text": "Refunding."},
            {"toolUse": {"toolUseId": "call4471a", "name": "refund", "input": {"order_id": "4471"}}},
        ]
        assert result["content"][0]["toolResult"]["toolUseId"] == "call4471a"
        assert body["system"] == [{"text": "Handle refunds."}]
        # Signed with the worker's credentials (the server checked every signature with the secret).
        assert {r.headers["authorization"].split("Credential=")[1][: len(KEY)] for r in server.requests} == {KEY}
    else:
        [assistant] = [m for m in body["messages"] if m["role"] == "assistant"]
        assert assistant["tool_calls"][0]["id"] == "call4471a"
        assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"order_id": "4471"}
        [result] = [m for m in body["messages"] if m["role"] == "tool"]
        assert (result["tool_call_id"], result["content"]) == ("call4471a", "refunded 4471")
        assert {r.headers["authorization"] for r in server.requests} == {f"Bearer {KEY}"}


def test_a_bedrock_request_signed_with_other_credentials_is_refused() -> None:
    """The server's signature check is real: the same request signed with another secret does not pass."""
    pytest.importorskip("boto3")
    from agentic.models.providers import bedrock_model
    from tests.support.bedrock_server import MODEL_ID, BedrockServer

    with BedrockServer(secret=SECRET) as server:
        model = bedrock_model(
            MODEL_ID,
            access_key_id=KEY,
            secret_access_key="not-the-secret",
            region="us-east-1",
            base_url=server.base_url,
        )
        server.queue_message([{"text": "never sent"}])
        with pytest.raises(NonRetryableModelError, match=r"HTTP 403 \(SignatureDoesNotMatch\)"):
            model.complete(ASKED, call_index=0)


@pytest.mark.parametrize("name", sorted(CASES))
def test_streaming_hands_text_and_tool_call_deltas_and_returns_the_whole_reply(name: str) -> None:
    c = case(name)
    deltas: list[ModelDelta] = []
    with c.server() as server:
        model = c.make(server)
        c.tool_turn(server, "call4471b")
        reply = model.complete(ASKED, [REFUND], call_index=0, on_delta=deltas.append)
    assert "stream" in server.requests[0].path or server.requests[0].json.get("stream") is True
    assert "".join(d.text for d in deltas if d.kind == "text") == "Refunding." == reply.message.content
    calls = [d for d in deltas if d.kind == "tool_call"]
    assert {(d.position, d.call_id, d.name) for d in calls if d.name} == {(1, "call4471b", "refund")}
    assert json.loads("".join(d.arguments for d in calls)) == {"order_id": "4471"}
    assert reply.message.tool_calls[0].arguments == {"order_id": "4471"}
    assert (reply.input_tokens, reply.cache_read_tokens, reply.output_tokens) == c.usage


@pytest.mark.parametrize("name", sorted(CASES))
def test_usage_and_the_cost_come_from_the_price_table(name: str) -> None:
    c = case(name)
    with c.server() as server:
        model = c.make(server)
        c.answer(server)
        reply = model.complete(ASKED, call_index=0, settings=ModelSettings(max_tokens=1024))
    assert (reply.input_tokens, reply.cache_read_tokens, reply.output_tokens) == c.usage
    assert reply.cost == pytest.approx(c.cost)
    assert reply.cost > 0


@pytest.mark.parametrize(
    ("status", "headers", "error", "retry_after"),
    [
        (429, {"retry-after": "7"}, RetryableModelError, 7.0),
        (503, {}, RetryableModelError, None),
        (500, {}, RetryableModelError, None),
        (400, {}, NonRetryableModelError, None),
    ],
)
@pytest.mark.parametrize("name", sorted(CASES))
def test_errors_are_classified_with_the_wait_the_provider_asked_for(
    name: str, status: int, headers: dict[str, str], error: type[Exception], retry_after: float | None
) -> None:
    c = case(name)
    with c.server() as server:
        model = c.make(server)
        c.error(server, status, headers)
        with pytest.raises(error) as raised:
            model.complete(ASKED, call_index=0, settings=ModelSettings(max_tokens=1024))
    assert type(raised.value) is error
    assert str(raised.value).startswith(f"{c.model}: HTTP {status} (")
    assert "failed" not in str(raised.value)  # the provider's free text is never quoted
    assert raised.value.retry_after == retry_after  # type: ignore[attr-defined]
    assert len(server.requests) == 1  # the SDK did not retry underneath


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_key_the_provider_echoes_never_leaves_the_model(name: str) -> None:
    c = case(name)
    with c.server() as server:
        model = c.make(server)
        server.queue_key_echo()  # type: ignore[attr-defined]
        with pytest.raises(NonRetryableModelError) as raised:
            model.complete(ASKED, call_index=0, settings=ModelSettings(max_tokens=1024))
    [echo] = server.echoed
    assert KEY.encode() in echo  # the provider quoted the key it was sent: the attack happened
    assert KEY not in str(raised.value) and KEY not in repr(raised.value.args)
    assert f"{c.model}: HTTP 40" in str(raised.value)
    assert KEY in model.credentials  # what the model activity masks in any text about this call


OVERFLOWS = {
    "bedrock": lambda s: s.queue_error(400, "ValidationException", "Input is too long for requested model."),
    "groq": lambda s: s.queue_error(
        400, "invalid_request_error", "Please reduce the length of the messages.", code="context_length_exceeded"
    ),
    # Mistral's code for a prompt longer than the model's context.
    "mistral": lambda s: s.queue_error(400, "invalid_request_error", "Prompt contains 300000 tokens", code="3051"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_context_overflow_is_named_and_never_retried(name: str) -> None:
    c = case(name)
    with c.server() as server:
        model = c.make(server)
        OVERFLOWS[name](server)
        with pytest.raises(ContextOverflowError) as raised:
            model.complete(ASKED, call_index=0, settings=ModelSettings(max_tokens=1024))
    assert str(raised.value).startswith(f"{c.model}: HTTP 400 (")
    assert len(server.requests) == 1

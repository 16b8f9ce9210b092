"""Each provider extra through the whole durable path, on the real dev server with real worker processes: a run
that names `openai:...`, `anthropic:...`, `google:...`, `bedrock:...`, `groq:...` or `mistral:...` (the worker's
catalog; the run carries no endpoint and no key) meets a 429 with `Retry-After`, calls a gated tool, waits for an
approval, loses its worker to SIGKILL in the middle of the next model call, meets a 5xx on the new worker, and
answers. The provider is a loopback server speaking its wire format (tests/support/provider_servers.py,
bedrock_server.py, chat_servers.py).

What is asserted is what the server saw: the retry after the 429 came no sooner than its `Retry-After` said (the
server's timestamps; the policy's own first retry is 0.25 s), and the provider's opaque part (Anthropic's thinking
block with its signature, Gemini's thought signature, Bedrock's reasoning block with its signature; for the
chat-completions dialects the tool call whose id pairs its result) came back verbatim on every later call —
across the activity boundary, the transcript store, and a worker that never saw it made."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from agentic.approvals import Decision
from duragent._ops.devstack.worker_process import WorkerProcess
from duragent._stores.ledger import EffectsLedger
from duragent._workflows.agent import AgentWorkflow
from duragent._workflows.inputs import AgentInput, Timeouts
from tests.conftest import dev_settings, eventually
from tests.support.bedrock_server import MODEL_ID as BEDROCK_MODEL
from tests.support.bedrock_server import BedrockServer, reasoning
from tests.support.bedrock_server import tool_use as bedrock_tool_use
from tests.support.chat_servers import GroqServer, MistralServer, chat_call
from tests.support.provider_servers import (
    AnthropicServer,
    GeminiServer,
    OpenAIServer,
    ProviderServer,
    Received,
    Scripted,
    function_call,
    openai_call,
    signature,
    text,
    thinking,
    tool_use,
)

RETRY_AFTER = 2  # seconds, in the 429's header
BEDROCK_SECRET = "bedrock-test-SECRET-0001"  # the server checks every request's SigV4 signature with it

SDKS = {"anthropic": "anthropic", "google": "google.genai", "bedrock": "boto3", "groq": "groq", "mistral": "mistralai"}


@dataclass(frozen=True)
class Provider:
    model: str
    server: Callable[[], ProviderServer]
    env: Callable[[str], dict[str, str]]
    script_tool_turn: Callable[[Any], None]
    script_rate_limit: Callable[[Any], None]
    script_server_error: Callable[[Any], None]
    script_answer: Callable[[Any], None]
    sent_back: Callable[[Received], bool]  # the opaque part is in this request, verbatim


def _anthropic_sent_back(request: Received) -> bool:
    turns = [m for m in request.json["messages"] if m["role"] == "assistant"]
    return (
        bool(turns)
        and {"type": "thinking", "thinking": "Order 4471 qualifies.", "signature": "sig-A1"} in turns[0]["content"]
    )


def _openai_sent_back(request: Received) -> bool:
    # Chat completions has no opaque part: what must come back is the call, its id pairing the result.
    turns = [m for m in request.json["messages"] if m["role"] == "assistant"]
    results = [m for m in request.json["messages"] if m["role"] == "tool"]
    return bool(turns) and turns[0]["tool_calls"][0]["id"] == "call_01" and results[0]["tool_call_id"] == "call_01"


def _bedrock_sent_back(request: Received) -> bool:
    turns = [m for m in request.json["messages"] if m["role"] == "assistant"]
    block = {"reasoningContent": {"reasoningText": {"text": "Order 4471 qualifies.", "signature": "sig-B1"}}}
    return bool(turns) and block in turns[0]["content"]


def _chat_sent_back(request: Received) -> bool:
    # Groq's and Mistral's chat completions: the call, its id pairing the result (Mistral's ids are 9 characters).
    turns = [m for m in request.json["messages"] if m["role"] == "assistant"]
    results = [m for m in request.json["messages"] if m["role"] == "tool"]
    return bool(turns) and turns[0]["tool_calls"][0]["id"] == "call4471a" and results[0]["tool_call_id"] == "call4471a"


def _gemini_sent_back(request: Received) -> bool:
    turns = [c for c in request.json["contents"] if c["role"] == "model"]
    return bool(turns) and any(p.get("thoughtSignature") == signature("sig-G1") for p in turns[0]["parts"])


PROVIDERS = {
    "openai": Provider(
        model="openai:gpt-4.1-mini",
        server=OpenAIServer,
        env=lambda url: {"OPENAI_API_KEY": "sk-openai-test-KEY-0001", "AGENT_OPENAI_BASE_URL": f"{url}/v1"},
        script_tool_turn=lambda s: s.queue_message(None, [openai_call("call_01", "refund", {"order_id": "4471"})]),
        script_rate_limit=lambda s: s.queue_error(
            429, "rate_limit_exceeded", "Rate limited", headers={"retry-after": str(RETRY_AFTER)}
        ),
        script_server_error=lambda s: s.queue_error(500, "server_error", "Internal server error"),
        script_answer=lambda s: s.queue_message("Refunded order 4471."),
        sent_back=_openai_sent_back,
    ),
    "anthropic": Provider(
        model="anthropic:claude-sonnet-4-5",
        server=AnthropicServer,
        env=lambda url: {"ANTHROPIC_API_KEY": "sk-ant-test-KEY-0001", "AGENT_ANTHROPIC_BASE_URL": url},
        script_tool_turn=lambda s: s.queue_message(
            [thinking("Order 4471 qualifies.", "sig-A1"), tool_use("toolu_01", "refund", {"order_id": "4471"})]
        ),
        script_rate_limit=lambda s: s.queue_error(
            429, "rate_limit_error", "Rate limited", headers={"retry-after": str(RETRY_AFTER)}
        ),
        script_server_error=lambda s: s.queue_error(500, "api_error", "Internal server error"),
        script_answer=lambda s: s.queue_message([text("Refunded order 4471.")]),
        sent_back=_anthropic_sent_back,
    ),
    "google": Provider(
        model="google:gemini-2.5-flash",
        server=GeminiServer,
        env=lambda url: {"GOOGLE_API_KEY": "AIza-test-KEY-0001", "AGENT_GOOGLE_BASE_URL": url},
        script_tool_turn=lambda s: s.queue_content(
            [function_call("refund", {"order_id": "4471"}, thought_signature="sig-G1")]
        ),
        script_rate_limit=lambda s: s.queue_error(
            429, "RESOURCE_EXHAUSTED", "Quota exceeded", headers={"retry-after": str(RETRY_AFTER)}
        ),
        script_server_error=lambda s: s.queue_error(500, "INTERNAL", "Internal error"),
        script_answer=lambda s: s.queue_content([{"text": "Refunded order 4471."}]),
        sent_back=_gemini_sent_back,
    ),
    "bedrock": Provider(
        model=f"bedrock:{BEDROCK_MODEL}",
        server=lambda: BedrockServer(secret=BEDROCK_SECRET),
        env=lambda url: {
            "AWS_ACCESS_KEY_ID": "AKIA-test-KEY-0001",
            "AWS_SECRET_ACCESS_KEY": BEDROCK_SECRET,
            "AWS_REGION": "eu-west-1",
            "AGENT_BEDROCK_BASE_URL": url,
        },
        script_tool_turn=lambda s: s.queue_message(
            [reasoning("Order 4471 qualifies.", "sig-B1"), bedrock_tool_use("toolu_01", "refund", {"order_id": "4471"})]
        ),
        script_rate_limit=lambda s: s.queue_error(
            429, "ThrottlingException", "Too many requests", headers={"retry-after": str(RETRY_AFTER)}
        ),
        script_server_error=lambda s: s.queue_error(500, "InternalServerException", "Internal server error"),
        script_answer=lambda s: s.queue_message([{"text": "Refunded order 4471."}]),
        sent_back=_bedrock_sent_back,
    ),
    "groq": Provider(
        model="groq:llama-3.3-70b-versatile",
        server=GroqServer,
        env=lambda url: {"GROQ_API_KEY": "gsk-test-KEY-0001", "AGENT_GROQ_BASE_URL": url},
        script_tool_turn=lambda s: s.queue_message(None, [chat_call("call4471a", "refund", {"order_id": "4471"})]),
        script_rate_limit=lambda s: s.queue_error(
            429, "tokens", "Rate limit reached", code="rate_limit_exceeded", headers={"retry-after": str(RETRY_AFTER)}
        ),
        script_server_error=lambda s: s.queue_error(500, "internal_server_error", "Internal server error"),
        script_answer=lambda s: s.queue_message("Refunded order 4471."),
        sent_back=_chat_sent_back,
    ),
    "mistral": Provider(
        model="mistral:mistral-large-latest",
        server=MistralServer,
        env=lambda url: {"MISTRAL_API_KEY": "mistral-test-KEY-0001", "AGENT_MISTRAL_BASE_URL": url},
        script_tool_turn=lambda s: s.queue_message(None, [chat_call("call4471a", "refund", {"order_id": "4471"})]),
        script_rate_limit=lambda s: s.queue_error(
            429, "rate_limited", "Requests rate limit exceeded", code="1300", headers={"retry-after": str(RETRY_AFTER)}
        ),
        script_server_error=lambda s: s.queue_error(500, "internal_server_error", "Internal server error"),
        script_answer=lambda s: s.queue_message("Refunded order 4471."),
        sent_back=_chat_sent_back,
    ),
}


async def pending_row(handle: Any) -> dict[str, Any]:
    async def memo_has_pending() -> bool:
        return bool(await (await handle.describe()).memo_value("pending_approvals", default=[]))

    await eventually(memo_has_pending, what="a pending approval in the memo")
    [row] = await (await handle.describe()).memo_value("pending_approvals")
    return row


@pytest.mark.parametrize("name", sorted(PROVIDERS))
async def test_a_provider_run_survives_a_rate_limit_an_approval_a_sigkill_and_a_5xx(
    name: str, dev_env: Any, task_queue: str, tmp_path: Any
) -> None:
    if name != "openai":
        pytest.importorskip("pydantic_ai")
        pytest.importorskip(SDKS[name], reason=f"the {name} extra is not installed")
    provider = PROVIDERS[name]
    settings = dev_settings(dev_env, task_queue, tmp_path)
    ledger = EffectsLedger(settings.ledger_path)
    held = threading.Event()  # the third call is answered only after its worker is dead
    with provider.server() as server:
        provider.script_rate_limit(server)
        provider.script_tool_turn(server)
        server.queue(Scripted(status=599, hold=held))  # nobody reads it: the worker is killed while it waits
        provider.script_server_error(server)
        provider.script_answer(server)

        env = provider.env(server.base_url)
        first = WorkerProcess(settings, log=tmp_path / "w1.log", extra_env=env).wait_ready()
        try:
            handle = await dev_env.client.start_workflow(
                AgentWorkflow.run,
                AgentInput(agent="refund", model=provider.model, timeouts=Timeouts(heartbeat_seconds=2.0)),
                id=f"{name}-{uuid.uuid4().hex[:8]}",
                task_queue=task_queue,
            )
            row = await pending_row(handle)
            await handle.signal(
                AgentWorkflow.decision,
                Decision(call_id=row["call_id"], approve=True, approver="maria", arguments_hash=row["arguments_hash"]),
            )
            await asyncio.to_thread(server.wait_for_requests, 3)  # the worker is inside the third call
        finally:
            first.kill()
            held.set()
        second = WorkerProcess(settings, log=tmp_path / "w2.log", extra_env=env).wait_ready()
        try:
            result = await asyncio.wait_for(handle.result(), 90)
        finally:
            second.stop()

    assert result.output == "Refunded order 4471."
    assert [e.tool for e in ledger.effects(handle.id)] == ["refund"]
    assert [(a.event, a.approver) for a in result.audit] == [("approved", "maria")]
    requests = server.requests
    assert len(requests) == 5  # 429, tool turn, killed mid-call, 5xx, answer
    assert requests[1].at - requests[0].at >= RETRY_AFTER  # the header's wait, not the policy's 0.25 s
    assert not provider.sent_back(requests[1])
    assert all(provider.sent_back(r) for r in requests[2:]), "the opaque part was not sent back verbatim"

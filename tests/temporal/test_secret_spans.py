"""OpenTelemetry spans are a leak path too: no secret the worker holds (an MCP server's bearer token from
`token_env`, a header from `headers_env`, a provider's API key) and nothing shaped like a credential (a tool's
`?api_key=`) reaches a span's attributes, events (the exception events a failed activity records) or status.

The span of an activity is made by the SDK's `TracingInterceptor`, which records the exception it sees on the
way out. It must see it after `Scrubbing` masked it: these runs play the attackers of test_secret_echoes.py (an
MCP server quoting the token it was sent in its listing's error and in a call's error, a tool whose HTTP error
names its URL with the key, a careless undo quoting the token) and a model whose error quotes the provider's
key, with tracing wired both ways a deployment does it — `AGENT_OTEL` on the worker's settings, and the
interceptor given to the client — and read every span."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio.client import Client
from temporalio.exceptions import ApplicationError

from agentic import Agent, Budget, FakeModel, Message, Registry
from duragent._client import AgentClient
from duragent._config import observability
from duragent._config.settings import Settings
from duragent._errors import RunFailed
from duragent._stores.ledger import EffectsLedger
from tests.conftest import new_worker
from tests.support.echoing_mcp_server import EchoingMCPServer
from tests.temporal.test_secret_echoes import SECRETS, Reader, echo, fetch_report, mcp_secrets, reserve

__all__ = ["mcp_secrets"]  # the fixture, shared with the history-side tests

MODEL_KEY = "sk-MODELKEY-7373-quoted"  # the worker's provider key (its settings), quoted by a model's error
ALL_SECRETS = (*SECRETS, MODEL_KEY)


def quotes_the_key(messages: Sequence[Message]) -> object:
    raise ApplicationError(f"quota exceeded for {MODEL_KEY}", type="Quota", non_retryable=True)


def span_text(span: ReadableSpan) -> str:
    """Everything a span exporter sends of `span`: name, attributes, each event's name and attributes (an
    exception event's type, message and stack trace), and the status's description."""
    parts = [span.name, repr(dict(span.attributes or {})), repr(span.status.description)]
    for event in span.events:
        parts += [event.name, repr(dict(event.attributes or {}))]
    for link in span.links:
        parts.append(repr(dict(link.attributes or {})))
    return "\n".join(parts)


@pytest.fixture
def spans() -> Iterator[tuple[InMemorySpanExporter, TracerProvider]]:
    """A provider of our own (never the process's global one, which can be set once), exporting each span as
    it ends: no batch thread left to flush or to stop."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield exporter, provider
    provider.shutdown()


async def _run_the_echoes(client: Client, task_queue: str, ledger: EffectsLedger, settings: Settings) -> list[str]:
    """The three echoing runs on one worker; their run ids."""
    with EchoingMCPServer("list") as listing, EchoingMCPServer("result") as calls:
        failing = Agent(FakeModel(["unused"]), Registry(), name="t-span-list", task="Get it.", mcp=[echo(listing)])
        reader = Reader([("echo__get", {}), ("fetch_report", {})])
        quoting = Agent(
            FakeModel.replying(reader, name="reader"),
            Registry([fetch_report]),
            name="t-span-result",
            task="Get it.",
            mcp=[echo(calls)],
        )
        undoing = Agent(
            FakeModel.replying(Reader([("reserve", {"what": "a room"})], answer=False), name="undo"),
            Registry([reserve]),
            name="t-span-undo",
            task="Reserve.",
            budget=Budget(max_steps=2),
        )
        refused = Agent(FakeModel([quotes_the_key]), Registry(), name="t-span-model", task="Go.")
        agents = [failing, quoting, undoing, refused]
        settings = dataclasses.replace(settings, openai_api_key=MODEL_KEY)
        async with new_worker(client, task_queue, ledger, agents=agents, settings=settings):
            runs = AgentClient(client, task_queue=task_queue)
            handles = [await runs.start(a.name, run_id=f"span-{uuid.uuid4().hex[:8]}") for a in agents]
            with pytest.raises(RunFailed):
                await handles[0].result()
            assert (await handles[1].result()).status == "completed"
            assert (await handles[2].result()).status == "compensated"
            with pytest.raises(RunFailed):
                await handles[3].result()
    assert any(MCP_TOKEN_SENT in r for r in listing.received)  # each server was sent the token, and quoted it
    return [h.run_id for h in handles]


MCP_TOKEN_SENT = f"Bearer {SECRETS[0]}"


def assert_no_secret_in(exporter: InMemorySpanExporter, run_ids: list[str]) -> None:
    finished = exporter.get_finished_spans()
    ours = [s for s in finished if (s.attributes or {}).get("temporalWorkflowID") in run_ids]
    # The spans were made, failures recorded on them: an empty exporter would pass the check below.
    assert {"RunActivity:list_mcp_tools", "RunActivity:run_tool", "RunActivity:call_model"} <= {s.name for s in ours}
    failed = [s for s in ours if s.name == "RunActivity:list_mcp_tools" and s.events]
    assert failed and all(e.name == "exception" for s in failed for e in s.events)
    assert any("token not allowed here" in span_text(s) for s in failed)  # the message is kept, masked
    refused = [s for s in ours if s.name == "RunActivity:call_model" and s.events]
    assert any("quota exceeded for" in span_text(s) for s in refused)
    for span in finished:
        text = span_text(span)
        for secret in ALL_SECRETS:
            assert secret not in text, (span.name, secret, text[:2000])


async def test_no_secret_reaches_a_span_with_tracing_from_the_workers_settings(
    dev_env, ledger: EffectsLedger, task_queue: str, tmp_path: Path, mcp_secrets: None, spans, monkeypatch
) -> None:
    exporter, provider = spans
    # AGENT_OTEL's interceptor, on our provider instead of the process's (OTLP or stderr).
    monkeypatch.setattr(observability, "install_tracing", lambda exporter=None: provider)
    settings = Settings(data_dir=tmp_path, otel=True)
    run_ids = await _run_the_echoes(dev_env.client, task_queue, ledger, settings)
    assert_no_secret_in(exporter, run_ids)


async def test_no_secret_reaches_a_span_with_tracing_given_to_the_client(
    dev_env, ledger: EffectsLedger, task_queue: str, tmp_path: Path, mcp_secrets: None, spans
) -> None:
    exporter, provider = spans
    config = dev_env.client.config()
    config["interceptors"] = [observability.tracing_interceptor(provider)]
    client = Client(**config)
    run_ids = await _run_the_echoes(client, task_queue, ledger, Settings(data_dir=tmp_path))
    assert_no_secret_in(exporter, run_ids)

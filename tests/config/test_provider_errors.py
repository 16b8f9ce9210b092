"""A model endpoint's error quotes the key it was sent (gateways and proxies echo the header whole),
and that text used to become the run's failure: in history, the Web UI, the CLI and a viewer's `error`. Played
with a real HTTP endpoint that echoes the bearer it receives, and a model of the user's own that copies
provider text quoting the worker's other secrets; the assertions are on the run's history itself, its raw
bytes (failure messages and payloads), not on logs."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.api.history.v1 import History
from temporalio.exceptions import ApplicationError

from agentic import Agent, FakeModel, Message, NonRetryableModelError, Registry
from agentic.mcp import MCPServer
from agentic.scrub import MASK, Scrubber
from duragent._client import AgentClient, RunHandle
from duragent._config.credentials import mcp_credentials, worker_credentials
from duragent._config.settings import Settings
from duragent._errors import RunFailed
from duragent._scrubbing import scrubbed_failure
from duragent._stores.ledger import EffectsLedger
from tests.conftest import agent_named, new_worker
from tests.support.fake_openai_server import FakeOpenAIServer

MODEL_KEY = "sk-WORKER-SECRET-123-echoed"
WEBHOOK_SECRET = "WHSECRET-xyz-778-never-shown"
DB_PASSWORD = "db-PASSWORD-9917-never-shown"


def _copies_provider_text(messages: Sequence[Message]) -> object:
    # A model adapter of the user's own that puts the provider's whole error text into its error.
    raise NonRetryableModelError(f"HTTP 403: gateway says {WEBHOOK_SECRET} / {DB_PASSWORD} / {MODEL_KEY}", status=403)


def _crashes_with_secret(messages: Sequence[Message]) -> object:
    raise RuntimeError(f"client crashed holding {MODEL_KEY}")


COPYING = Agent(FakeModel([_copies_provider_text]), Registry([]), name="t-copies-provider-text", task="Go.")
CRASHING = Agent(FakeModel([_crashes_with_secret]), Registry([]), name="t-crashes-with-secret", task="Go.")


async def history_bytes(run: RunHandle) -> bytes:
    history = await run.workflow.fetch_history()
    return History(events=history.events).SerializeToString()


async def failed_run(client: AgentClient, agent: str, model: str | None = None) -> tuple[str, bytes]:
    run = await client.start(agent, run_id=f"echo-{uuid.uuid4().hex[:8]}", model=model)
    with pytest.raises(RunFailed) as failed:
        await run.result()
    return str(failed.value), await history_bytes(run)


async def test_a_key_the_endpoint_echoes_never_reaches_the_runs_history(
    skipping_env, ledger: EffectsLedger, task_queue: str, tmp_path: Path
) -> None:
    with FakeOpenAIServer() as endpoint:
        endpoint.queue_key_echo(401)  # OpenAI's shape, the key quoted in `error.message`
        endpoint.queue_key_echo(200, raw="<html>proxy: upstream refused Bearer {key}</html>")  # a 200 that is not JSON
        settings = Settings(
            openai_api_key=MODEL_KEY,
            openai_base_url=endpoint.base_url,
            webhook_secret=WEBHOOK_SECRET,
            database_url=f"postgresql://agents:{DB_PASSWORD}@127.0.0.1:1/agents",
            data_dir=tmp_path,
        )
        agents = [COPYING, CRASHING, agent_named("billing")]
        async with new_worker(skipping_env.client, task_queue, ledger, agents=agents, settings=settings):
            client = AgentClient(skipping_env.client, task_queue=task_queue)
            echoed, echoed_history = await failed_run(client, "billing", "openai:gpt-4.1-mini")
            proxied, proxied_history = await failed_run(client, "billing", "openai:gpt-4.1-mini")
            copied, copied_history = await failed_run(client, COPYING.name)
            crashed, crashed_history = await failed_run(client, CRASHING.name)

    # The endpoint did receive the key and quote it: the attack happened.
    sent = [v for r in endpoint.requests for k, v in r.headers.items() if k.lower() == "authorization"]
    assert sent == [f"Bearer {MODEL_KEY}"] * 2
    # What the run says: the status and the provider's code and type, the key nowhere.
    assert "HTTP 401 (invalid_request_error, invalid_api_key)" in echoed, echoed
    assert "HTTP 401" in echoed_history.decode(errors="replace")
    assert "malformed response" in proxied and f"Bearer {MASK}" in proxied, proxied
    assert f"gateway says {MASK} / {MASK} / {MASK}" in copied, copied
    assert f"client crashed holding {MASK}" in crashed, crashed
    for text in (echoed, proxied, copied, crashed):
        assert MODEL_KEY not in text and WEBHOOK_SECRET not in text and DB_PASSWORD not in text
    # The history itself, every byte of it (failure messages, payloads, the activities' failures).
    for raw in (echoed_history, proxied_history, copied_history, crashed_history):
        for secret in (MODEL_KEY, WEBHOOK_SECRET, DB_PASSWORD):
            assert secret.encode() not in raw


def test_the_worker_masks_every_secret_it_holds(tmp_path: Path) -> None:
    (tmp_path / "hook").write_text(f"{WEBHOOK_SECRET}\n")
    codec_key = "q" * 43 + "="
    settings = Settings(
        openai_api_key=MODEL_KEY,
        api_key="temporal-cloud-API-KEY-5521",
        webhook_secret_file=tmp_path / "hook",
        codec_keys=f"k2:{codec_key}, k1:{'r' * 43}=",
        database_url=f"postgresql://agents:{DB_PASSWORD}@db:5432/agents",
        data_dir=tmp_path,
    )
    hide = worker_credentials(settings)
    text = f"{MODEL_KEY} temporal-cloud-API-KEY-5521 {WEBHOOK_SECRET} {codec_key} {DB_PASSWORD} k2 agents"
    assert hide(text) == f"{MASK} {MASK} {MASK} {MASK} {MASK} k2 agents"


def test_a_longer_secret_is_masked_whole_and_short_values_are_no_secrets() -> None:
    hide = Scrubber(["sk-abc12345", "sk-abc12345-longer", "short", None, b"bytes-secret-1"])
    assert hide("sk-abc12345-longer sk-abc12345 short bytes-secret-1") == f"{MASK} {MASK} short {MASK}"


def test_the_worker_masks_its_agents_mcp_credentials_and_its_own_keys(monkeypatch) -> None:
    monkeypatch.setenv("CRM_TOKEN", "crm-token-0001-secret")
    monkeypatch.setenv("CRM_TENANT", "tenant-key-0002-secret")
    monkeypatch.setenv("FILES_PASSWORD", "files-pass-0003-secret")
    monkeypatch.setenv("CRM_URL", "https://bot:url-pass-0004-secret@crm.example/mcp?sig=url-sig-0005-secret")
    servers = [
        MCPServer.http("crm", url_env="CRM_URL", token_env="CRM_TOKEN", headers_env={"X-Tenant": "CRM_TENANT"}),
        MCPServer.stdio("files", ["files-server"], env_from=["FILES_PASSWORD"]),
    ]
    agent = Agent(FakeModel(["x"]), Registry([]), name="t-mcp-secrets", task="Go.", mcp=servers)
    held = set(mcp_credentials([agent]))
    assert held == {f"{w}-000{n}-secret" for n, w in enumerate(["crm-token", "tenant-key", "files-pass"], 1)} | {
        "url-pass-0004-secret",
        "url-sig-0005-secret",
    }
    key = base64.b64encode(b"k" * 32).decode()
    assert key in worker_credentials(Settings(worker_keys=f"{key}\n")).secrets


def test_a_failure_quoting_a_secret_keeps_its_classification_and_loses_its_causes() -> None:
    scrub = Scrubber([MODEL_KEY])
    try:
        try:
            raise OSError(f"socket said {MODEL_KEY}")
        except OSError as cause:
            raise ApplicationError("quota", type="Quota", non_retryable=True, next_retry_delay=timedelta(3)) from cause
    except ApplicationError as exc:
        masked = scrubbed_failure(exc, scrub)
    assert masked is not None and masked.__cause__ is None
    assert (masked.message, masked.type, masked.non_retryable, masked.next_retry_delay) == (
        "quota",
        "Quota",
        True,
        timedelta(3),
    )
    plain = scrubbed_failure(RuntimeError(f"GET https://x.example/a?api_key=abc12345678 {MODEL_KEY}"), scrub)
    assert plain is not None and (plain.type, plain.message) == (
        "RuntimeError",
        f"GET https://x.example/a?api_key={MASK} {MASK}",
    )
    assert scrubbed_failure(RuntimeError("nothing to hide"), scrub) is None


OWN_KEY = "own-MODEL-KEY-7731-not-in-settings"


class _KeyedModel(FakeModel):
    """A model object given its own key (not the worker's settings'): it says so through `credentials`."""

    credentials = (OWN_KEY,)


def _quota(messages: Sequence[Message]) -> object:
    _quota.calls += 1  # type: ignore[attr-defined]
    raise ApplicationError(f"quota exceeded for {MODEL_KEY}", type="Quota", non_retryable=True)


_quota.calls = 0  # type: ignore[attr-defined]


def _crashes_with_own_key(messages: Sequence[Message]) -> object:
    raise RuntimeError(f"client crashed holding {OWN_KEY}")


async def test_a_models_own_key_and_a_masked_errors_classification_survive_the_masking(
    skipping_env, ledger: EffectsLedger, task_queue: str, tmp_path: Path
) -> None:
    """A model's own `credentials` are masked though the settings do not hold them; a non-retryable error of
    the user's model that quotes a secret is masked and stays what it was: type `Quota`, not retried."""
    own = Agent(_KeyedModel([_crashes_with_own_key]), Registry([]), name="t-own-key", task="Go.")
    quota = Agent(FakeModel([_quota]), Registry([]), name="t-quota", task="Go.")
    settings = Settings(openai_api_key=MODEL_KEY, data_dir=tmp_path)
    async with new_worker(skipping_env.client, task_queue, ledger, agents=[own, quota], settings=settings):
        client = AgentClient(skipping_env.client, task_queue=task_queue)
        crashed, crashed_history = await failed_run(client, own.name)
        refused, refused_history = await failed_run(client, quota.name)
    assert f"client crashed holding {MASK}" in crashed and OWN_KEY.encode() not in crashed_history
    assert f"quota exceeded for {MASK}" in refused and MODEL_KEY.encode() not in refused_history
    assert "Quota" in refused and _quota.calls == 1  # type: ignore[attr-defined]

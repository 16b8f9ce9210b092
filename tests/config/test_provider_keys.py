"""A provider reached through the model layer that quotes back the key it was sent (a 401 from an echoing gateway)
fails the run with the status and the provider's error type, and the key is in no byte of the run's history.
Played per provider extra against a loopback server speaking its wire format."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from duragent._client import AgentClient
from duragent._config.settings import Settings
from duragent._stores.ledger import EffectsLedger
from tests.config.test_provider_errors import failed_run
from tests.conftest import agent_named, new_worker
from tests.support.bedrock_server import MODEL_ID as BEDROCK_MODEL
from tests.support.bedrock_server import BedrockServer
from tests.support.chat_servers import GroqServer, MistralServer
from tests.support.provider_servers import AnthropicServer, GeminiServer

KEY = "sk-PROVIDER-KEY-echoed-5150"
SECRET = "bedrock-SECRET-never-on-the-wire"
CASES = {
    "anthropic": (AnthropicServer, "anthropic:claude-sonnet-4-5", "HTTP 401 (authentication_error)"),
    "google": (GeminiServer, "google:gemini-2.5-flash", "HTTP 401 (UNAUTHENTICATED)"),
    # Bedrock answers a key it does not know with a 403; the access key id is what its requests carry.
    "bedrock": (BedrockServer, f"bedrock:{BEDROCK_MODEL}", "HTTP 403 (UnrecognizedClientException)"),
    "groq": (GroqServer, "groq:llama-3.3-70b-versatile", "HTTP 401 (invalid_request_error, invalid_api_key)"),
    "mistral": (MistralServer, "mistral:mistral-large-latest", "HTTP 401"),
}
SDKS = {"anthropic": "anthropic", "google": "google.genai", "bedrock": "boto3", "groq": "groq", "mistral": "mistralai"}


def provider_settings(provider: str, base_url: str) -> dict[str, Any]:
    if provider == "bedrock":
        return {"aws_access_key_id": KEY, "aws_secret_access_key": SECRET, "bedrock_base_url": base_url}
    return {f"{provider}_api_key": KEY, f"{provider}_base_url": base_url}


@pytest.mark.parametrize("provider", sorted(CASES))
async def test_a_key_the_provider_echoes_never_reaches_the_runs_history(
    provider: str, skipping_env: Any, ledger: EffectsLedger, task_queue: str, tmp_path: Path
) -> None:
    pytest.importorskip(SDKS[provider])
    server_class, model, expected = CASES[provider]
    with server_class() as server:
        server.queue_key_echo()
        settings = Settings(**provider_settings(provider, server.base_url), data_dir=tmp_path)
        async with new_worker(
            skipping_env.client, task_queue, ledger, agents=[agent_named("billing")], settings=settings
        ):
            client = AgentClient(skipping_env.client, task_queue=task_queue)
            error, history = await failed_run(client, "billing", model)

    [echo] = server.echoed
    assert KEY.encode() in echo  # the provider did quote the key: the attack happened
    assert expected in error, error
    assert KEY not in error
    assert KEY.encode() not in history
    assert SECRET.encode() not in history

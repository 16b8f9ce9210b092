"""A declared model gets only its own credentials: the worker's `OPENAI_API_KEY` goes to the
endpoint the operator configured for `openai:*`, and never to the local model's URL — which any local user
can bind when the model server is not running. Real HTTP listeners play both endpoints."""

from __future__ import annotations

import pytest

from agentic import Message
from duragent._config.models import declared_models
from duragent._config.settings import Settings
from tests.support.fake_openai_server import FakeOpenAIServer, chat_completion

WORKER_KEY = "sk-WORKER-SECRET-123"
USER = [Message("user", "hi")]


def authorization(server: FakeOpenAIServer) -> list[str]:
    return [v for r in server.requests for k, v in r.headers.items() if k.lower() == "authorization"]


def test_the_local_model_never_receives_the_workers_openai_key(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAIServer() as squatter, FakeOpenAIServer() as openai:
        # The worker's environment, as in the review's reproduction: the key set, the local URL on a port
        # somebody else listens on.
        monkeypatch.setenv("OPENAI_API_KEY", WORKER_KEY)
        monkeypatch.setenv("AGENT_LOCAL_MODEL_URL", squatter.base_url)
        monkeypatch.setenv("AGENT_OPENAI_BASE_URL", openai.base_url)
        squatter.queue(chat_completion("hello"))
        openai.queue(chat_completion("hello"))
        catalog = declared_models(Settings())

        assert catalog.resolve("local").complete(USER).message.content == "hello"  # what a run naming it gets
        catalog.resolve("openai:gpt-4.1-mini").complete(USER)

    seen = authorization(squatter)
    assert len(squatter.requests) == 1 and not [value for value in seen if WORKER_KEY in value], seen
    assert seen == ["Bearer not-needed"]
    # The key still goes where the operator sent it.
    assert authorization(openai) == [f"Bearer {WORKER_KEY}"]


def test_each_provider_gets_its_own_key_and_only_at_its_own_endpoint() -> None:
    """Three providers declared at once: each prefix's models send the key and reach the URL declared for that
    provider — never the one declared after it (the catalog's factories bind them when declared)."""
    pytest.importorskip("pydantic_ai")
    pytest.importorskip("anthropic")
    pytest.importorskip("google.genai")
    from tests.support.provider_servers import AnthropicServer, GeminiServer, text

    keys = {"openai": "sk-OPENAI-KEY-0001", "anthropic": "sk-ANTHROPIC-KEY-0002", "google": "GOOGLE-KEY-0003"}
    with FakeOpenAIServer() as openai, AnthropicServer() as anthropic, GeminiServer() as google:
        openai.queue(chat_completion("hi"))
        anthropic.queue_message([text("hi")])
        google.queue_content([{"text": "hi"}])
        catalog = declared_models(
            Settings(
                openai_api_key=keys["openai"],
                openai_base_url=openai.base_url,
                anthropic_api_key=keys["anthropic"],
                anthropic_base_url=anthropic.base_url,
                google_api_key=keys["google"],
                google_base_url=google.base_url,
            )
        )
        for name in ("openai:gpt-4.1-mini", "anthropic:claude-sonnet-4-5", "google:gemini-2.5-flash"):
            assert catalog.resolve(name).complete(USER).message.content == "hi"

    assert authorization(openai) == [f"Bearer {keys['openai']}"]
    [to_anthropic] = anthropic.requests
    assert keys["anthropic"] in (to_anthropic.headers.get("x-api-key") or to_anthropic.headers["authorization"])
    [to_google] = google.requests
    assert to_google.headers["x-goog-api-key"] == keys["google"]
    for request in (*anthropic.requests, *google.requests):
        others = [k for p, k in keys.items() if p not in request.path and k not in str(request.headers)]
        assert len(others) == 2  # the two other keys are nowhere in it


def test_bedrock_groq_and_mistral_each_get_their_own_credentials_and_no_ambient_aws_ones(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    """The three declared at once, with other AWS credentials lying around the worker's environment (an ambient
    session token, a profile): Bedrock's requests are signed with the settings' key and secret alone (the server
    checks each signature), carry no token they did not give, and each key reaches its own endpoint only."""
    for module in ("pydantic_ai", "boto3", "groq", "mistralai"):
        pytest.importorskip(module)
    from tests.support.bedrock_server import MODEL_ID, BedrockServer
    from tests.support.chat_servers import GroqServer, MistralServer

    monkeypatch.setenv("AWS_SESSION_TOKEN", "AMBIENT-SESSION-TOKEN")
    monkeypatch.setenv("AWS_PROFILE", "ambient")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path))
    keys = {"bedrock": "AKIA-BEDROCK-0001", "groq": "gsk-GROQ-KEY-0002", "mistral": "MISTRAL-KEY-0003"}
    secret = "bedrock-SECRET-0004"
    with BedrockServer(secret=secret) as bedrock, GroqServer() as groq, MistralServer() as mistral:
        bedrock.queue_message([{"text": "hi"}])
        groq.queue_message("hi")
        mistral.queue_message("hi")
        catalog = declared_models(
            Settings(
                aws_access_key_id=keys["bedrock"],
                aws_secret_access_key=secret,
                aws_session_token=None,
                bedrock_base_url=bedrock.base_url,
                groq_api_key=keys["groq"],
                groq_base_url=groq.base_url,
                mistral_api_key=keys["mistral"],
                mistral_base_url=mistral.base_url,
            )
        )
        for name in (f"bedrock:{MODEL_ID}", "groq:llama-3.3-70b-versatile", "mistral:mistral-large-latest"):
            assert catalog.resolve(name).complete(USER).message.content == "hi"

    [to_bedrock] = bedrock.requests
    assert to_bedrock.headers["authorization"].split("Credential=")[1].startswith(f"{keys['bedrock']}/")
    assert "x-amz-security-token" not in to_bedrock.headers
    assert [r.headers["authorization"] for r in groq.requests] == [f"Bearer {keys['groq']}"]
    assert [r.headers["authorization"] for r in mistral.requests] == [f"Bearer {keys['mistral']}"]
    for request in (to_bedrock, *groq.requests, *mistral.requests):
        assert sum(key in str(request.headers) for key in keys.values()) == 1
        assert secret not in str(request.headers) and secret.encode() not in request.raw_body

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

"""Model endpoints and their keys are worker configuration. A run may name a model the
worker declares, never supply a URL that would receive the worker's key: a run naming anything else fails
at once with a clear message, and no request leaves the worker."""

from __future__ import annotations

import socket
import threading
import uuid

import pytest

from agentic.models.catalog import ModelCatalog, UnknownModel
from duragent._client import AgentClient
from duragent._config.models import declared_models
from duragent._config.settings import Settings
from duragent._errors import RunFailed
from duragent._stores.ledger import EffectsLedger
from tests.conftest import new_worker


class Listener:
    """A TCP port that records every connection made to it."""

    def __init__(self) -> None:
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen()
        self.socket.settimeout(0.2)
        self.port = self.socket.getsockname()[1]
        self.connections = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self.socket.accept()
            except TimeoutError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self.stopping.set()
        self.thread.join()
        self.socket.close()


@pytest.mark.parametrize("named", ["http://127.0.0.1:{port}/v1", "openai:gpt-4o", "no-such-model"])
async def test_a_run_naming_an_undeclared_model_fails_at_once_and_nothing_is_sent(
    skipping_env, ledger: EffectsLedger, task_queue: str, named: str
) -> None:
    listener = Listener()
    try:
        model = named.format(port=listener.port)
        # The worker's own declarations: the local model server (at the listener, never called), no OpenAI key.
        models = declared_models(Settings(openai_api_key=None, local_model_url=f"http://127.0.0.1:{listener.port}/v9"))
        async with new_worker(skipping_env.client, task_queue, ledger, models=models):
            run = await AgentClient(skipping_env.client, task_queue=task_queue).start(
                "billing", run_id=f"ep-{uuid.uuid4().hex[:8]}", model=model
            )
            with pytest.raises(RunFailed) as failed:
                await run.result()
    finally:
        listener.close()
    message = str(failed.value)
    assert f"model {model!r} is not declared by this worker" in message
    assert "it declares: local" in message
    assert listener.connections == 0
    assert ledger.effects(run.run_id) == []


def test_the_catalog_resolves_declared_names_and_prefixes_only() -> None:
    catalog = ModelCatalog().add_prefix("openai:", lambda name: f"model {name}")  # type: ignore[arg-type,return-value]
    assert catalog.resolve("openai:gpt-4.1-mini") == "model gpt-4.1-mini"
    for name in ("openai:", "https://evil.example/v1", "gpt-4o"):
        with pytest.raises(UnknownModel):
            catalog.resolve(name)

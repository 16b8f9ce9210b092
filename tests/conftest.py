"""Shared fixtures: the real Temporal servers from PyPI (time-skipping and dev), and helpers.

Servers are started by these fixtures and stopped by their own handles (by pid), never by name.
"""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from agentic.ledger import EffectsLedger
from agentic.transcript_store import SqliteTranscriptStore, Transcripts
from ops import modelserver
from ops.devserver import free_port
from ops.settings import Settings
from worker import build_worker
from workflows import search_attributes

BIN = Path(sys.executable).parent
TEST_SERVER = BIN / "temporal-test-server"
DEV_SERVER = BIN / "temporal"


@pytest_asyncio.fixture(scope="session")
async def skipping_env() -> AsyncIterator[WorkflowEnvironment]:
    """The time-skipping test server: durable timers of days complete in milliseconds."""
    env = await WorkflowEnvironment.start_time_skipping(
        data_converter=pydantic_data_converter, test_server_existing_path=str(TEST_SERVER)
    )
    # Unlike the dev server, the test server takes no search attribute flags; an unregistered
    # attribute would fail every workflow task that upserts it, and the test would hang.
    await search_attributes.register(env.client)
    try:
        yield env
    finally:
        await env.shutdown()


@pytest.fixture
def ledger(tmp_path: Path) -> EffectsLedger:
    return EffectsLedger(tmp_path / "ledger.db")


@pytest.fixture
def task_queue() -> str:
    return f"tq-{uuid.uuid4().hex[:12]}"


def transcripts_next_to(ledger: EffectsLedger) -> Transcripts:
    """The transcript store a worker built by `new_worker` uses: next to its ledger."""
    return Transcripts(SqliteTranscriptStore(ledger.path.parent / "transcripts.db"))


def new_worker(client: Client, task_queue: str, ledger: EffectsLedger, **kwargs: object) -> Worker:
    return build_worker(client, task_queue=task_queue, ledger=ledger, **kwargs)  # type: ignore[arg-type]


@pytest_asyncio.fixture(scope="session")
async def dev_env() -> AsyncIterator[WorkflowEnvironment]:
    """The real dev server (`temporal server start-dev`), with our search attributes: for crash tests
    that kill worker processes, which need a server that outlives them."""
    env = await WorkflowEnvironment.start_local(
        data_converter=pydantic_data_converter,
        dev_server_existing_path=str(DEV_SERVER),
        search_attributes=search_attributes.ALL,
        ui=False,
    )
    try:
        yield env
    finally:
        await env.shutdown()


@pytest.fixture(scope="session")
def local_model_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[modelserver.ModelServer]:
    """The embedded local model (SmolLM2-135M on llama-cpp-python's server), one per session, on a free
    port. Without the `llm` group every test using it is skipped with one line saying why."""
    if (reason := modelserver.missing()) is not None:
        pytest.skip(reason)
    server = modelserver.start(free_port(), log=tmp_path_factory.mktemp("model-server") / "server.log")
    try:
        yield server
    finally:
        server.stop()


def dev_settings(env: WorkflowEnvironment, task_queue: str, tmp_path: Path) -> Settings:
    """Settings for a worker subprocess talking to `env`, with its own ledger file."""
    return Settings(
        address=env.client.service_client.config.target_host,
        namespace=env.client.namespace,
        task_queue=task_queue,
        ledger_path=tmp_path / "ledger.db",
    )


async def eventually(check: Callable[[], Awaitable[bool] | bool], timeout: float = 60.0, what: str = "") -> None:
    """Poll instead of sleeping a guessed amount."""
    deadline = time.monotonic() + timeout
    while True:
        outcome = check()
        if isinstance(outcome, Awaitable):
            outcome = await outcome
        if outcome:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or check}")
        await asyncio.sleep(0.1)

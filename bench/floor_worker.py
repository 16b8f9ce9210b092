"""The bare floor's worker, in its own process: `python -m bench.floor_worker` (TEMPORAL_ADDRESS,
TEMPORAL_NAMESPACE, TEMPORAL_TASK_QUEUE), with the same worker settings as `duragent.build_worker`."""

from __future__ import annotations

import asyncio
import os
import sys
from datetime import timedelta

from temporalio.worker import Worker

from bench.floor import (
    FloorHeartbeatWorkflow,
    FloorPayloadWorkflow,
    FloorVisibleWorkflow,
    FloorWorkflow,
    TimerWorkflow,
    floor_model,
    floor_padded_model,
    floor_padded_tool,
    floor_spec,
    floor_tool,
)
from duragent._config.settings import STICKY_TIMEOUT, Settings
from duragent._connection import connect
from duragent._ops.devstack.signals import serve_until_stopped


async def main() -> None:
    settings = Settings()
    client = await connect(settings)
    # The same worker settings as worker.build_worker's, so the comparison is engine against engine.
    worker = Worker(
        client,
        task_queue=settings.task_queue,
        workflows=[FloorWorkflow, FloorHeartbeatWorkflow, FloorVisibleWorkflow, FloorPayloadWorkflow, TimerWorkflow],
        activities=[floor_model, floor_tool, floor_padded_model, floor_padded_tool, floor_spec],
        max_cached_workflows=1000,
        graceful_shutdown_timeout=timedelta(seconds=10),
        # Ours' sticky timeout, not the SDK's 10 s: it decides when the server's workflow-task timeout timers
        # fire, and a batch's server CPU counts them only if they fire before the batch settles.
        sticky_queue_schedule_to_start_timeout=STICKY_TIMEOUT,
    )
    await serve_until_stopped(worker, f"worker ready: floor {settings.address} queue={settings.task_queue}")
    print("worker stopped", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # as worker.py: interpreter teardown can abort after a clean shutdown

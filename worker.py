"""The worker: runs agent workflows and their activities until SIGINT/SIGTERM, then drains and exits.

python worker.py        # TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_TASK_QUEUE, AGENT_LEDGER

TLS / API key (TEMPORAL_TLS_*, TEMPORAL_API_KEY), payload encryption (AGENT_CODEC_KEYS), metrics
(AGENT_METRICS_ADDRESS), tracing (AGENT_OTEL) and JSON logs (AGENT_LOG_FORMAT): docs/operations.md.

AGENT_EXTRA_SCENARIOS=pkg.mod[,pkg.other]: modules imported at startup, before the worker starts, so
scenarios they register (scenarios.register_scenario) run here too, e.g. bench.scenarios.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import signal
import sys
from collections.abc import Sequence
from datetime import timedelta

from temporalio.client import Client
from temporalio.worker import Interceptor, Worker

from activities.model import ModelActivities
from activities.tools import ToolActivities
from agentic.ledger import Ledger
from agentic.transcript_store import SqliteTranscriptStore, Transcripts
from ops import observability, stores
from ops.codec import load_keyring
from ops.connection import connect
from ops.settings import Settings
from workflows.agent import AgentWorkflow


def transcripts_for(settings: Settings) -> Transcripts:
    """AGENT_DATABASE_URL's PostgreSQL, else SQLite next to the ledger; encrypted at rest with codec keys."""
    keyring = load_keyring(settings.codec_keys, settings.codec_key_file)
    return stores.open_transcripts(settings.database_url, settings.ledger_path.parent, keyring)


def build_worker(
    client: Client,
    *,
    task_queue: str,
    ledger: Ledger,
    transcripts: Transcripts | None = None,
    max_cached_workflows: int = 1000,
    interceptors: Sequence[Interceptor] = (),
    sticky_timeout: timedelta = timedelta(seconds=5),
) -> Worker:
    # The transcript store lives next to the ledger unless given: runs by reference need one.
    transcripts = transcripts or Transcripts(SqliteTranscriptStore(ledger.path.parent / "transcripts.db"))
    model = ModelActivities(transcripts)
    tools = ToolActivities(ledger, transcripts)
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[AgentWorkflow],
        activities=[model.call_model, tools.run_tool, tools.compensate],
        max_cached_workflows=max_cached_workflows,
        # Structured log lines for each run and each model/tool call (observability.py), then the caller's.
        interceptors=[observability.LoggingInterceptor(), *interceptors],
        # On SIGTERM, running activities get this long to finish before they are cancelled.
        graceful_shutdown_timeout=timedelta(seconds=10),
        # After a worker dies, its runs' next workflow tasks wait this long on its sticky queue before any
        # worker may take them: the floor of recovery time. Shorter recovers faster; too short moves tasks
        # off a merely busy worker, which then replays them (SDK default: 10 s).
        sticky_queue_schedule_to_start_timeout=sticky_timeout,
    )


async def main() -> None:
    settings = Settings()
    observability.configure_logging(settings.log_format, settings.log_level)
    for module in filter(None, (m.strip() for m in os.environ.get("AGENT_EXTRA_SCENARIOS", "").split(","))):
        importlib.import_module(module)  # registers its scenarios in this process
    # With AGENT_METRICS_ADDRESS, the SDK's metrics are served for Prometheus at http://ADDRESS/metrics.
    client = await connect(settings, runtime=observability.metrics_runtime(settings.metrics_address))
    stores.check(settings.database_url)  # unreachable shared database: one clear line, non-zero exit
    ledger = stores.open_ledger(settings.database_url, settings.ledger_path)
    worker = build_worker(client, task_queue=settings.task_queue, ledger=ledger, transcripts=transcripts_for(settings))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with worker:
        print(
            f"worker ready: {settings.address} namespace={settings.namespace} queue={settings.task_queue}"
            + (f" metrics=http://{settings.metrics_address}/metrics" if settings.metrics_address else ""),
            flush=True,
        )
        await stop.wait()
    observability.shutdown_tracing()
    print("worker stopped", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # sdk-python issue 300: interpreter teardown can abort after a clean shutdown

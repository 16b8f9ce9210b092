"""The worker: serves agents — their workflow, model calls and tool calls — until SIGINT/SIGTERM, then
drains and exits.

    python worker.py                              # the demo agents (examples/)
    python worker.py --agents my_pkg.agents       # your agents (repeatable; or AGENT_MODULES=a,b)

An agents module exports `agents` (a list of `Agent`) and, optionally, `make_deps(settings)` returning
the services its tools get as `ToolContext.deps`. Connection: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
TEMPORAL_TASK_QUEUE and the rest of docs/operations.md. In Python, `build_worker` is the whole API.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from typing import Any

from temporalio.client import Client
from temporalio.worker import Interceptor, Worker

from activities.delegation import DelegationActivities
from activities.describe import DescribeActivities
from activities.mcp import MCPActivities
from activities.model import ModelActivities
from activities.served import ServedAgents
from activities.tools import ToolActivities
from activities.webhook import WebhookActivities
from agentic import Agent
from agentic.agent_set import AgentSet
from agentic.models.catalog import ModelCatalog
from agentic.transcript_store import Transcripts
from ops import observability, stores
from ops.agent_modules import load_agents_and_deps, module_names
from ops.approver_keys import approver_public_keys
from ops.cli.boundary import Parser, exit_now, load_settings, run_command
from ops.cli.connection import require_namespace
from ops.cli.output import CliError
from ops.connection import connect
from ops.models import declared_models
from ops.settings import STICKY_TIMEOUT, Settings
from ops.stores import transcripts_for
from ops.webhook_signing import load_secret
from workflows.agent import AgentWorkflow
from workflows.plugin import has_plugin
from workflows.webhook import WebhookWorkflow


def build_worker(
    client: Client,
    *,
    task_queue: str,
    agents: Iterable[Agent],
    deps: Any = None,
    models: ModelCatalog | Mapping[str, Any] | None = None,
    transcripts: Transcripts | None = None,
    approver_keys: Mapping[str, str] | None = None,
    max_cached_workflows: int = 1000,
    interceptors: Sequence[Interceptor] = (),
    sticky_timeout: timedelta = STICKY_TIMEOUT,
    webhook_secret: bytes | None = None,
) -> Worker:
    """A worker that serves `agents` on `task_queue`.

    `deps` reach every tool as `ToolContext.deps`: one object for all agents, or a mapping by agent name
    (an agent missing from it gets its own `Agent.deps`). `models` are the models a run may choose by name
    (default: `ops.models.declared_models(Settings())`). `transcripts` is where runs keep their transcript
    by reference (default: `transcripts.db` in the data directory; on several hosts, a shared database).
    `approver_keys` (name -> Ed25519 public key; default: `AGENT_APPROVER_KEYS`) make only signed decisions
    count (agentic/signing.py). `webhook_secret` signs the deliveries of runs started with a webhook
    (default: `AGENT_WEBHOOK_SECRET`).
    """
    settings = Settings()
    catalog = models if isinstance(models, ModelCatalog) else declared_models(settings, models)
    keys = approver_public_keys(settings) if approver_keys is None else approver_keys
    served = ServedAgents(AgentSet(agents, deps, catalog, where=f"on task queue {task_queue!r}", approver_keys=keys))
    transcripts = transcripts or transcripts_for(settings)
    describe = DescribeActivities(served)
    model = ModelActivities(served, transcripts)
    tools = ToolActivities(served, transcripts)
    mcp = MCPActivities(served, transcripts)
    delegation = DelegationActivities()
    webhooks = WebhookActivities(webhook_secret if webhook_secret is not None else load_secret())
    return Worker(
        client,
        task_queue=task_queue,
        # A client connected with DurableAgentsPlugin registers the workflow on its workers already.
        workflows=[] if has_plugin(client) else [AgentWorkflow, WebhookWorkflow],
        activities=[
            describe.describe_agent,
            model.call_model,
            tools.run_tool,
            tools.compensate,
            mcp.list_mcp_tools,
            delegation.attach_delegate,
            webhooks.deliver_webhook,
        ],
        max_cached_workflows=max_cached_workflows,
        interceptors=[*([] if has_plugin(client) else [observability.LoggingInterceptor()]), *interceptors],
        # On SIGTERM, running activities get this long to finish before they are cancelled.
        graceful_shutdown_timeout=timedelta(seconds=10),
        # After a worker dies, its runs' next workflow tasks wait this long on its sticky queue before any
        # worker may take them: the floor of recovery time. Shorter recovers faster; too short moves tasks
        # off a merely busy worker, which then replays them (SDK default: 10 s).
        sticky_queue_schedule_to_start_timeout=sticky_timeout,
        # AGENT_EAGER_ACTIVITIES=false spreads a run's activities over every worker on the queue.
        disable_eager_activity_execution=not settings.eager_activities,
    )


async def serve(args: argparse.Namespace, settings: Settings) -> int:
    """Start serving, or say in one line why it cannot (the boundary in `main` turns errors into that line)."""
    try:
        observability.configure_logging(settings.log_format, settings.log_level)
    except ValueError as exc:  # AGENT_LOG_FORMAT or LOG_LEVEL, named in the message
        raise CliError(str(exc), code=2) from None
    try:
        agents, deps = load_agents_and_deps(module_names(args.agents), settings)
    except ValueError as exc:  # a module that does not load, or a make_deps that refuses its settings
        raise CliError(str(exc), code=2) from None
    # The SDK core's log lines go through the logging just configured; with AGENT_METRICS_ADDRESS, the SDK's
    # metrics are served for Prometheus at http://ADDRESS/metrics.
    client = await connect(settings, runtime=observability.worker_runtime(settings.metrics_address))
    await require_namespace(client, settings)
    stores.check(settings.database_url)  # an unreachable shared database: one clear line, non-zero exit
    worker = build_worker(
        client, task_queue=settings.task_queue, agents=agents, deps=deps, transcripts=transcripts_for(settings)
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with worker:
        print(
            f"worker ready: {settings.address} namespace={settings.namespace} queue={settings.task_queue} "
            f"agents={','.join(sorted(a.name or '' for a in agents))}"
            + (f" metrics=http://{settings.metrics_address}/metrics" if settings.metrics_address else ""),
            flush=True,
        )
        await stop.wait()
    observability.shutdown_tracing()
    print("worker stopped", flush=True)
    return 0


def main(argv: Sequence[str]) -> int:
    """`python worker.py`: startup errors (Temporal down, an unknown namespace, a bad log setting, an agents
    module that does not load, the database down) are one line on stderr and a non-zero exit
    (ops/cli/boundary.py); `--debug` shows the traceback."""
    parser = Parser(prog="worker.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", action="append", metavar="MODULE", help="a module exporting `agents`")
    parser.add_argument("--debug", action="store_true", help="show the traceback of a startup error")
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as exc:
        return int(exc.code or 0)
    return run_command(lambda: serve(args, load_settings()), debug=args.debug)


if __name__ == "__main__":
    exit_now(main(sys.argv[1:]))  # sdk-python issue 300: interpreter teardown can abort after a clean shutdown

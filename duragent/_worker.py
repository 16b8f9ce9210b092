"""`build_worker`: a Temporal worker that serves agents — their workflow, model calls and tool calls — with the
worker's services injected into the activities (`python worker.py` is this, plus a command line)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from typing import Any

from temporalio.client import Client
from temporalio.worker import Interceptor, Worker

from agentic import Agent
from agentic.agent_set import AgentSet
from agentic.models.catalog import ModelCatalog
from duragent._activities.delegation import DelegationActivities
from duragent._activities.describe import DescribeActivities
from duragent._activities.inputs import EngineOptions
from duragent._activities.mcp import MCPActivities
from duragent._activities.model import ModelActivities
from duragent._activities.served import ServedAgents
from duragent._activities.tools import ToolActivities
from duragent._activities.webhook import WebhookActivities
from duragent._config.approver_keys import approver_public_keys
from duragent._config.credentials import mcp_credentials, worker_credentials
from duragent._config.models import declared_models
from duragent._config.settings import STICKY_TIMEOUT, Settings
from duragent._config.webhook_signing import load_secret
from duragent._config.worker_keys import WorkerKeys, load_worker_keys
from duragent._plugin import DurableAgentsPlugin, plugin_of
from duragent._scrubbing import Scrubbing
from duragent._sealing import Sealing
from duragent._sticky import ReleaseStickyRuns
from duragent._stores.configured import transcripts_for
from duragent._stores.transcripts import Transcripts
from duragent._versioning import worker_deployment
from duragent._workflows.versioned import VERSIONED_WORKFLOWS


def build_worker(
    client: Client,
    *,
    task_queue: str,
    agents: Iterable[Agent],
    deps: Any = None,
    models: ModelCatalog | Mapping[str, Any] | None = None,
    transcripts: Transcripts | None = None,
    approver_keys: Mapping[str, str] | None = None,
    max_cached_workflows: int | None = None,
    interceptors: Sequence[Interceptor] = (),
    sticky_timeout: timedelta = STICKY_TIMEOUT,
    webhook_secret: bytes | None = None,
    settings: Settings | None = None,
    deployment: str | None = None,
    build_id: str | None = None,
    engine: EngineOptions | None = None,
    worker_keys: WorkerKeys | None = None,
) -> Worker:
    """A worker that serves `agents` on `task_queue`.

    `deps` reach every tool as `ToolContext.deps`: one object for all agents, or a mapping by agent name
    (an agent missing from it gets its own `Agent.deps`). `models` are the models a run may choose by name
    (default: those `settings` declare: `local`, and `openai:*` with an API key). `transcripts` is where runs
    keep their transcript by reference (default: the settings' store: `transcripts.db` in the data directory,
    or the shared database on several hosts). `approver_keys` (name -> Ed25519 public key; default: the
    settings' `AGENT_APPROVER_KEYS`) make only signed decisions count (agentic/signing.py). `webhook_secret`
    signs the deliveries of runs started with a webhook (default: `AGENT_WEBHOOK_SECRET`). `engine` is how
    the worker executes every run it serves (`EngineOptions`: the claim-check limits, when a run continues as
    new; default: `EngineOptions()`): the worker's configuration, recorded by each run when it starts.

    `deployment` and `build_id` turn on Worker Versioning (duragent/_versioning.py): the worker serves that
    build of that deployment, and each run stays on the build it started on (default: the settings'
    `TEMPORAL_DEPLOYMENT_NAME` and `TEMPORAL_WORKER_BUILD_ID`; neither: an unversioned worker, as before).

    `worker_keys` are the workers' own HMAC keys (default: the settings' `AGENT_WORKER_KEYS`): with them, this worker's
    workflows seal what they schedule and its activities act only on a seal (duragent/_sealing.py), so
    whoever else polls the task queue cannot make them act. Every worker of a task queue needs the same keys.

    `max_cached_workflows` is how many runs the worker keeps in memory between their workflow tasks (default: the
    settings', `AGENT_MAX_CACHED_WORKFLOWS`, 1,000).

    `settings` is the worker's configuration (docs/operations.md); `python worker.py` passes the one it read.
    A program that passes none gets those of the `DurableAgentsPlugin` its client was connected with (the
    environment's, read once when the plugin was made): what configures its client configures its workers.
    """
    plugin = plugin_of(client)
    if settings is None:
        settings = plugin.settings if plugin is not None else Settings.from_env()
    versioning = worker_deployment(deployment or settings.deployment_name, build_id or settings.build_id)
    catalog = models if isinstance(models, ModelCatalog) else declared_models(settings, models)
    keys = approver_public_keys(settings) if approver_keys is None else approver_keys
    agents = tuple(agents)  # read twice: the served set, and the MCP secrets to mask
    served = ServedAgents(AgentSet(agents, deps, catalog, where=f"on task queue {task_queue!r}", approver_keys=keys))
    transcripts = transcripts or transcripts_for(settings)
    engine = engine or EngineOptions()
    worker_keys = worker_keys if worker_keys is not None else load_worker_keys(settings)
    describe = DescribeActivities(served, engine)
    signing = webhook_secret if webhook_secret is not None else load_secret(settings)
    # Every secret the worker holds, masked in whatever its activities return or raise (duragent/_scrubbing.py).
    credentials = worker_credentials(settings, signing).plus(mcp_credentials(agents))
    model = ModelActivities(served, transcripts, engine.limits, credentials)
    tools = ToolActivities(served, transcripts, engine.limits, credentials)
    mcp = MCPActivities(served, transcripts, credentials)
    delegation = DelegationActivities()
    webhooks = WebhookActivities(signing, allow_loopback=settings.webhook_allow_loopback)
    return Worker(
        client,
        task_queue=task_queue,
        # The plugin registers the workflows and our interceptors: the client's, else one for this worker alone
        # (a client connected without it; its payloads are then the client's own converter's). A versioned
        # worker registers the versioned flavours of the workflows, and the plugin adds no base beside them.
        # First thing on start, the stepping runs stuck to a dead worker's sticky queue move to the shared one
        # (duragent/_sticky.py), so a crash costs them no sticky timeout.
        plugins=[
            *([] if plugin is not None else [DurableAgentsPlugin(settings)]),
            *([ReleaseStickyRuns()] if settings.release_sticky_runs else []),
        ],
        workflows=VERSIONED_WORKFLOWS if versioning else [],
        activities=[
            describe.describe_agent,
            model.call_model,
            tools.run_tool,
            tools.compensate,
            mcp.list_mcp_tools,
            delegation.attach_delegate,
            webhooks.deliver_webhook,
        ],
        max_cached_workflows=settings.max_cached_workflows if max_cached_workflows is None else max_cached_workflows,
        # With worker keys, what this worker's workflows schedule is sealed and its activities act only on a seal.
        # Scrubbing inside Sealing: what the activity answers is masked before anything is made of it.
        interceptors=[
            *([Sealing(worker_keys)] if worker_keys is not None else []),
            Scrubbing(credentials),
            *interceptors,
        ],
        # On SIGTERM, running activities get this long to finish before they are cancelled.
        graceful_shutdown_timeout=timedelta(seconds=10),
        # After a worker dies, its runs' next workflow tasks wait this long on its sticky queue before any
        # worker may take them: the floor of recovery time. Shorter recovers faster; too short moves tasks
        # off a merely busy worker, which then replays them (SDK default: 10 s).
        sticky_queue_schedule_to_start_timeout=sticky_timeout,
        # AGENT_EAGER_ACTIVITIES=false spreads a run's activities over every worker on the queue.
        disable_eager_activity_execution=not settings.eager_activities,
        deployment_config=versioning,
    )

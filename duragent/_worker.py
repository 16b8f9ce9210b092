"""`build_worker`: a new Temporal worker that serves agents — their workflow, model calls and tool calls — with
the worker's services injected into the activities (`duragent-worker` is this, plus a command line). It is
`DurableAgentsPlugin(agents=..., deps=...)` on a `Worker` of its own, with the options the agents' workers run
with. To serve agents next to workflows of your own, give the plugin to your own `Worker` instead: Temporal
allows one worker per task queue in a process (duragent/_one_worker.py)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from typing import Any

from temporalio.client import Client
from temporalio.worker import Interceptor, Worker

from agentic import Agent
from agentic.models.catalog import ModelCatalog
from duragent._activities.inputs import EngineOptions
from duragent._config.settings import STICKY_TIMEOUT, Settings
from duragent._config.worker_keys import WorkerKeys
from duragent._one_worker import OVERLAP, SecondWorker, remember, second_worker_text, slot_of
from duragent._plugin import DurableAgentsPlugin, plugin_of
from duragent._sticky import ReleaseStickyRuns
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
    """A new worker that serves `agents` on `task_queue`: `Worker(client, ..., plugins=[DurableAgentsPlugin(agents,
    ...)])` with the options the agents' workers run with. To serve them beside workflows and activities of your
    own, give the plugin to your own `Worker` instead (one worker per task queue in a process).

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
    configured = plugin_of(client)
    if settings is None:
        settings = configured.settings if configured is not None else Settings.from_env()
    serving = DurableAgentsPlugin(
        settings,
        agents=agents,
        deps=deps,
        models=models,
        transcripts=transcripts,
        approver_keys=approver_keys,
        webhook_secret=webhook_secret,
        engine=engine,
        worker_keys=worker_keys,
    )
    options = agent_worker_options(
        settings,
        deployment=deployment,
        build_id=build_id,
        max_cached_workflows=max_cached_workflows,
        sticky_timeout=sticky_timeout,
    )
    # The plugin registers the workflows, the activities and our interceptors (the converter is the client's).
    options.update(task_queue=task_queue, interceptors=list(interceptors), plugins=[serving, *options["plugins"]])
    try:
        worker = Worker(client, **options)
    except RuntimeError as exc:  # the SDK core's backtrace for a second worker on the queue: said in one line
        if OVERLAP not in str(exc):
            raise
        raise SecondWorker(second_worker_text(slot_of({"client": client, **options}))) from None
    remember(worker, slot_of({"client": client, **options}))
    return worker


def agent_worker_options(
    settings: Settings,
    *,
    deployment: str | None = None,
    build_id: str | None = None,
    max_cached_workflows: int | None = None,
    sticky_timeout: timedelta = STICKY_TIMEOUT,
) -> dict[str, Any]:
    """The `Worker` options the agents' workers run with, from `settings` (see `build_worker` for each): keyword
    arguments for `Worker(...)`, its `workflows` and `plugins` included (to extend, not to replace)."""
    versioning = worker_deployment(deployment or settings.deployment_name, build_id or settings.build_id)
    return dict(
        # A versioned worker registers the versioned flavours of the workflows, and the plugin adds no base
        # beside them.
        workflows=list(VERSIONED_WORKFLOWS) if versioning else [],
        # First thing on start, the stepping runs stuck to a dead worker's sticky queue move to the shared one
        # (duragent/_sticky.py), so a crash costs them no sticky timeout.
        plugins=[ReleaseStickyRuns()] if settings.release_sticky_runs else [],
        max_cached_workflows=settings.max_cached_workflows if max_cached_workflows is None else max_cached_workflows,
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

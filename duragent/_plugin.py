"""`DurableAgentsPlugin`: everything a Temporal client or worker needs to run durable agents, wired the
SDK's way (a `SimplePlugin`) instead of by hand:

    client = await Client.connect("localhost:7233", plugins=[DurableAgentsPlugin()])
    worker = build_worker(client, task_queue="agents", agents=[my_agent], deps=my_services)

It sets the pydantic data converter (with the AES-GCM payload codec and encoded failure attributes when
codec keys are configured), our logging interceptor (and OpenTelemetry's when `AGENT_OTEL` is on), and
registers `AgentWorkflow` (and `WebhookWorkflow`, its terminal-state notifier) on every worker and replayer
built from that client: the one place workflows and interceptors are wired. The activities need the worker's
agents and services, so `duragent.build_worker` adds them.

The plugin keeps the settings it was made with (`DurableAgentsPlugin()`: the environment's, read once here),
and what is built from its client takes its defaults from them: `build_worker`'s models, approver keys, stores
and webhook secret, `AgentClient`'s task queue and Web UI.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from temporalio import client as temporal_client
from temporalio import worker as temporal_worker
from temporalio.plugin import SimplePlugin

from duragent._config import observability
from duragent._config.connection import data_converter
from duragent._config.settings import Settings
from duragent._run_logging import LoggingInterceptor
from duragent._workflows.agent import AgentWorkflow
from duragent._workflows.conversation import ConversationWorkflow
from duragent._workflows.webhook import WebhookWorkflow

NAME = "durable-agents"


def _with_agent_workflow(existing: Sequence[type] | None) -> Sequence[type]:
    # Registered once, whether the plugin comes from the client, the worker, or both — and not at all where a
    # workflow of that name is registered already (a versioned worker's flavour of it, duragent/_workflows/versioned.py,
    # or a test's own build of it): the worker's own list wins, as Temporal allows one class per name.
    existing = list(existing or [])
    taken = {_name(e) for e in existing}
    return existing + [w for w in (AgentWorkflow, ConversationWorkflow, WebhookWorkflow) if _name(w) not in taken]


def _name(cls: type) -> str:
    definition = getattr(cls, "__temporal_workflow_definition", None)
    return definition.name if definition is not None and definition.name else cls.__name__


class DurableAgentsPlugin(SimplePlugin):
    def __init__(self, settings: Settings | None = None) -> None:
        """`settings`: the program's configuration (docs/operations.md); none, the environment's."""
        self.settings = settings if settings is not None else Settings.from_env()
        interceptors: list[temporal_client.Interceptor | temporal_worker.Interceptor] = [LoggingInterceptor()]
        if self.settings.otel:
            interceptors.append(observability.tracing_interceptor())
        super().__init__(
            NAME,
            data_converter=data_converter(self.settings),
            interceptors=interceptors,
            workflows=_with_agent_workflow,
        )


def plugin_of(client: temporal_client.Client) -> DurableAgentsPlugin | None:
    """The `DurableAgentsPlugin` `client` was connected with, if any (its workers then get our workflows)."""
    plugins: Any = client.config().get("plugins") or []
    return next((p for p in plugins if isinstance(p, DurableAgentsPlugin)), None)

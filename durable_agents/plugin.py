"""`DurableAgentsPlugin`: everything a Temporal client or worker needs to run durable agents, wired the
SDK's way (a `SimplePlugin`) instead of by hand:

    client = await Client.connect("localhost:7233", plugins=[DurableAgentsPlugin()])
    worker = build_worker(client, task_queue="agents", agents=[my_agent], deps=my_services)

It sets the pydantic data converter (with the AES-GCM payload codec and encoded failure attributes when
codec keys are configured), our logging interceptor (and OpenTelemetry's when `AGENT_OTEL` is on), and
registers `AgentWorkflow` (and `WebhookWorkflow`, its terminal-state notifier) on every worker and replayer
built from that client. The activities need the worker's agents and services, so `durable_agents.build_worker` adds
them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from temporalio import client as temporal_client
from temporalio import worker as temporal_worker
from temporalio import workflow
from temporalio.plugin import SimplePlugin

from config import observability
from config.connection import data_converter
from config.settings import Settings
from durable_agents.run_logging import LoggingInterceptor
from workflows.agent import AgentWorkflow
from workflows.webhook import WebhookWorkflow

NAME = "durable-agents"


def _with_agent_workflow(existing: Sequence[type] | None) -> Sequence[type]:
    # Registered once, whether the plugin comes from the client, the worker, or both — and not at all where a
    # subclass is registered already (a versioned worker's flavour of it, workflows/versioned.py), or another
    # workflow under its name (Temporal refuses two of one name on a worker).
    existing = list(existing or [])
    names = {_name(e) for e in existing}
    ours = (AgentWorkflow, WebhookWorkflow)
    return existing + [w for w in ours if _name(w) not in names and not any(issubclass(e, w) for e in existing)]


def _name(workflow_class: type) -> str | None:
    definition = workflow._Definition.from_class(workflow_class)
    return definition.name if definition is not None else None


class DurableAgentsPlugin(SimplePlugin):
    def __init__(self, settings: Settings | None = None) -> None:
        settings = settings or Settings()
        interceptors: list[temporal_client.Interceptor | temporal_worker.Interceptor] = [LoggingInterceptor()]
        if settings.otel:
            interceptors.append(observability.tracing_interceptor())
        super().__init__(
            NAME,
            data_converter=data_converter(settings),
            interceptors=interceptors,
            workflows=_with_agent_workflow,
        )


def has_plugin(client: temporal_client.Client) -> bool:
    """Whether `client` was connected with a `DurableAgentsPlugin` (its workers then get the workflow)."""
    plugins: Any = client.config().get("plugins") or []
    return any(isinstance(p, DurableAgentsPlugin) for p in plugins)

"""`DurableAgentsPlugin`: everything a Temporal client or worker needs to run durable agents, wired the SDK's
way (a `SimplePlugin`), as temporalio's own `OpenAIAgentsPlugin` wires its agents:

    client = await Client.connect("localhost:7233", plugins=[DurableAgentsPlugin()])
    worker = Worker(
        client,
        task_queue="shop",
        workflows=[OrderRefund],           # your workflows...
        activities=[look_up_order],        # ...and activities, next to the agents'
        plugins=[DurableAgentsPlugin(agents=[refunds], deps=orders_client)],
    )

On a client it sets the pydantic data converter (with the AES-GCM payload codec and encoded failure attributes
when codec keys are configured). On every worker it configures — its own, or those built from a client
connected with it — it registers `AgentWorkflow`, `ConversationWorkflow` and `WebhookWorkflow` (the runs'
terminal-state notifier), the agents' activities, our logging interceptor (and OpenTelemetry's when `AGENT_OTEL`
is on), and the `Sealing` interceptor when the workers have their keys (`AGENT_WORKER_KEYS`). `build_worker` is
this plugin on a new `Worker`, with the worker options the agents' workers run with.

A worker's own plugin wins over its client's: the client's (`DurableAgentsPlugin()`, no agents) gives the
converter, the worker's serves the agents. A worker that got the plugin from its client alone serves no agents,
and fails each agent run at once, saying so.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from temporalio import client as temporal_client
from temporalio import worker as temporal_worker
from temporalio.converter import DataConverter
from temporalio.plugin import SimplePlugin

from agentic import Agent
from agentic.models.catalog import ModelCatalog
from agentic.scrub import Scrubber
from duragent._activities.inputs import EngineOptions
from duragent._agent_activities import agent_activities, agent_credentials
from duragent._config import observability
from duragent._config.connection import data_converter
from duragent._config.settings import Settings
from duragent._config.worker_keys import WorkerKeys, load_worker_keys
from duragent._one_worker import refuse_second, slot_of
from duragent._run_logging import LoggingInterceptor
from duragent._scrubbing import Scrubbing
from duragent._sealing import Sealing
from duragent._stores.transcripts import Transcripts
from duragent._workflows.agent import AgentWorkflow
from duragent._workflows.conversation import ConversationWorkflow
from duragent._workflows.webhook import WebhookWorkflow

NAME = "durable-agents"

# The plugin is meant for both the client (the converter) and the worker (the agents); the SDK warns of any plugin
# type found on both ("It may run twice"). This one does not: the worker's own instance does the worker's wiring.
warnings.filterwarnings(
    "ignore", message=r"The same plugin type <class 'duragent\._plugin\.DurableAgentsPlugin'>", category=UserWarning
)


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


def _activity_name(fn: Callable[..., Any]) -> str:
    definition = getattr(fn, "__temporal_activity_definition", None)
    return definition.name if definition is not None and definition.name else getattr(fn, "__name__", "")


def _with_activities(existing: Sequence[Callable[..., Any]] | None, ours: list[Callable[..., Any]]) -> list[Any]:
    # As with the workflows, an activity of that name on the worker's own list wins (a test's instrumented one).
    existing = list(existing or [])
    taken = {_activity_name(a) for a in existing}
    return existing + [a for a in ours if _activity_name(a) not in taken]


class DurableAgentsPlugin(SimplePlugin):
    """The Temporal plugin for durable agents: on a client, the data converter; on a worker, the agents'
    workflow, their activities and our interceptors, next to the worker's own workflows and activities.

    `DurableAgentsPlugin()` (or `DurableAgentsPlugin(settings)`) on the client; on the worker
    `DurableAgentsPlugin(agents=[...], deps=...)`. The arguments besides `agents` are those of `build_worker`,
    which documents each; any left out comes from the settings.

    `settings`: the program's configuration (docs/operations.md). None: on a client, the environment's, read
    once when the plugin is made; on a worker serving agents, its client's plugin's (else the environment's).
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        agents: Iterable[Agent] | None = None,
        deps: Any = None,
        models: ModelCatalog | Mapping[str, Any] | None = None,
        transcripts: Transcripts | None = None,
        approver_keys: Mapping[str, str] | None = None,
        webhook_secret: bytes | None = None,
        engine: EngineOptions | None = None,
        worker_keys: WorkerKeys | None = None,
    ) -> None:
        self.agents = list(agents) if agents is not None else None
        for agent in self.agents or []:
            if not isinstance(agent, Agent):
                raise TypeError(f"DurableAgentsPlugin(agents=...) takes Agent objects, got {type(agent).__name__}")
        self.deps, self.models, self.transcripts, self.engine = deps, models, transcripts, engine
        self.approver_keys, self.webhook_secret, self.worker_keys = approver_keys, webhook_secret, worker_keys
        # A client's plugin reads the environment now, once; a worker's takes its client's settings if it can.
        self._settings = settings if settings is not None or agents is not None else Settings.from_env()
        self._interceptors: list[Any] | None = None
        super().__init__(
            NAME,
            data_converter=self._data_converter,
            interceptors=self._our_interceptors() if self._settings is not None else None,
            workflows=_with_agent_workflow,
        )

    @property
    def settings(self) -> Settings:
        """The settings this plugin configures with (read from the environment on first use if none were given)."""
        if self._settings is None:
            self._settings = Settings.from_env()
        return self._settings

    def _data_converter(self, existing: DataConverter | None) -> DataConverter:
        return data_converter(self.settings)

    def _our_interceptors(self) -> list[Any]:
        if self._interceptors is None:
            self._interceptors = [LoggingInterceptor()]
            if self.settings.otel:
                self._interceptors.append(observability.tracing_interceptor())
        return self._interceptors

    def configure_client(self, config: temporal_client.ClientConfig) -> temporal_client.ClientConfig:
        """See `SimplePlugin`: the converter and our client interceptors."""
        self.interceptors = self._our_interceptors()
        return super().configure_client(config)

    def configure_replayer(self, config: temporal_worker.ReplayerConfig) -> temporal_worker.ReplayerConfig:
        """See `SimplePlugin`: the converter, the workflows and our interceptors."""
        self.interceptors = self._our_interceptors()
        return super().configure_replayer(config)

    def configure_worker(self, config: temporal_worker.WorkerConfig) -> temporal_worker.WorkerConfig:
        """The agents' workflows, activities and interceptors, added to the worker's own."""
        if not self._wires(config):
            return config
        client = config["client"]  # type: ignore[typeddict-item]
        refuse_second(slot_of(config))
        settings = self._worker_settings(client)
        config["workflows"] = _with_agent_workflow(config.get("workflows"))
        ours = agent_activities(
            settings,
            config["task_queue"],  # type: ignore[typeddict-item]
            self.agents or [],
            deps=self.deps,
            models=self.models,
            transcripts=self.transcripts,
            approver_keys=self.approver_keys,
            webhook_secret=self.webhook_secret,
            engine=self.engine,
            worker_keys=self._keys(settings),
        )
        config["activities"] = _with_activities(config.get("activities"), ours)
        config["interceptors"] = self._with_interceptors(config, client, settings)
        return config

    def _wires(self, config: temporal_worker.WorkerConfig) -> bool:
        """Whether this instance wires the worker: the worker's own last one does, else its client's."""
        own = [p for p in config.get("plugins") or [] if isinstance(p, DurableAgentsPlugin)]
        return not own or own[-1] is self

    def _worker_settings(self, client: temporal_client.Client) -> Settings:
        if self._settings is None:  # a worker's plugin made without settings: its client's, if it has ours
            plugins: Any = client.config().get("plugins") or []
            configured = next((p for p in plugins if isinstance(p, DurableAgentsPlugin) and p is not self), None)
            if configured is not None:
                self._settings = configured.settings
        return self.settings

    def _with_interceptors(
        self, config: temporal_worker.WorkerConfig, client: temporal_client.Client, settings: Settings
    ) -> list[Any]:
        """The worker's interceptors, with ours where the worker and its client have none of their kind: with the
        workers' keys, what this worker's workflows schedule is sealed and its activities act only on a seal."""
        own = list(config.get("interceptors") or [])
        present = own + list(client.config(active_config=True).get("interceptors") or [])
        keys = self._keys(settings)
        sealing = [Sealing(keys)] if keys is not None and not any(isinstance(i, Sealing) for i in present) else []
        # Innermost, next to the activity: what an activity answers or raises is masked before any other
        # interceptor sees it — a seal is made of it, a span records its exception (type, message, stack trace)
        # and its status, a log line names it. The first interceptor of a list is the outermost.
        scrubbing = [] if any(isinstance(i, Scrubbing) for i in present) else [Scrubbing(self._credentials(settings))]
        missing = [i for i in self._our_interceptors() if not any(type(p) is type(i) for p in present)]
        return [*sealing, *own, *missing, *scrubbing]

    def _keys(self, settings: Settings) -> WorkerKeys | None:
        return self.worker_keys if self.worker_keys is not None else load_worker_keys(settings)

    def _credentials(self, settings: Settings) -> Scrubber:
        return agent_credentials(settings, self.agents or [], self.webhook_secret)


def plugin_of(client: temporal_client.Client) -> DurableAgentsPlugin | None:
    """The `DurableAgentsPlugin` `client` was connected with, if any (its workers then get our workflows)."""
    plugins: Any = client.config().get("plugins") or []
    return next((p for p in plugins if isinstance(p, DurableAgentsPlugin)), None)

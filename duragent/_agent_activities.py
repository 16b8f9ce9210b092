"""The activities a worker serving agents registers, built around what it serves: its agents and their
services, the models a run may choose, where transcripts are kept, whose signatures count, how it signs
webhooks and how it runs every run (`EngineOptions`). `DurableAgentsPlugin` registers them on each worker it
configures; each argument left out comes from the worker's settings."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from agentic import Agent
from agentic.agent_set import AgentSet
from agentic.models.catalog import ModelCatalog
from agentic.scrub import Scrubber
from duragent._activities.delegation import DelegationActivities
from duragent._activities.describe import DescribeActivities
from duragent._activities.inputs import EngineOptions
from duragent._activities.mcp import MCPActivities
from duragent._activities.model import ModelActivities
from duragent._activities.served import ServedAgents
from duragent._activities.tools import ToolActivities
from duragent._activities.turns import TurnActivities
from duragent._activities.webhook import WebhookActivities
from duragent._config.approver_keys import approver_public_keys
from duragent._config.credentials import mcp_credentials, worker_credentials
from duragent._config.models import declared_models
from duragent._config.settings import Settings
from duragent._config.webhook_signing import load_secret
from duragent._config.worker_keys import WorkerKeys
from duragent._stores.configured import transcripts_for
from duragent._stores.transcripts import Transcripts


def agent_credentials(settings: Settings, agents: Iterable[Agent], webhook_secret: bytes | None = None) -> Scrubber:
    """Every secret a worker serving `agents` holds, masked in whatever its activities return or raise
    (duragent/_scrubbing.py): the settings' keys, the webhook secret and what the agents' MCP servers read."""
    signing = webhook_secret if webhook_secret is not None else load_secret(settings)
    return worker_credentials(settings, signing).plus(mcp_credentials(agents))


def agent_activities(
    settings: Settings,
    task_queue: str,
    agents: Iterable[Agent],
    *,
    deps: Any = None,
    models: ModelCatalog | Mapping[str, Any] | None = None,
    transcripts: Transcripts | None = None,
    approver_keys: Mapping[str, str] | None = None,
    webhook_secret: bytes | None = None,
    engine: EngineOptions | None = None,
    worker_keys: WorkerKeys | None = None,
) -> list[Callable[..., Any]]:
    """The eight activities that serve `agents` on `task_queue` (see `build_worker` for each argument). With
    no agents, only the first one: it fails every run at once, saying the worker serves none (a worker that
    got the plugin from its client alone) — and touches no store, key or model configuration."""
    agents = list(agents)
    if not agents:
        return [DescribeActivities(ServedAgents(AgentSet([], where=f"on task queue {task_queue!r}"))).describe_agent]
    catalog = models if isinstance(models, ModelCatalog) else declared_models(settings, models)
    keys = approver_public_keys(settings) if approver_keys is None else approver_keys
    served = ServedAgents(AgentSet(agents, deps, catalog, where=f"on task queue {task_queue!r}", approver_keys=keys))
    transcripts = transcripts or transcripts_for(settings)
    engine = engine or EngineOptions()
    signing = webhook_secret if webhook_secret is not None else load_secret(settings)
    describe = DescribeActivities(served, engine)
    credentials = agent_credentials(settings, agents, signing)
    model = ModelActivities(served, transcripts, engine.limits, credentials)
    tools = ToolActivities(served, transcripts, engine.limits, credentials)
    mcp = MCPActivities(served, transcripts, credentials)
    delegation = DelegationActivities(worker_keys)
    webhooks = WebhookActivities(signing, allow_loopback=settings.webhook_allow_loopback)
    return [
        describe.describe_agent,
        model.call_model,
        tools.run_tool,
        tools.compensate,
        mcp.list_mcp_tools,
        delegation.attach_delegate,
        TurnActivities(worker_keys).attach_turn,  # a conversation re-attaching to its running turn after a handover
        webhooks.deliver_webhook,
    ]

"""Connecting from the command line (and the worker's startup): one line a person can act on when Temporal
is not there, or the namespace does not exist."""

from __future__ import annotations

from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from duragent._client import AgentClient
from duragent._config.settings import Settings
from duragent._errors import TemporalUnavailable
from duragent._ops.cli.output import CliError, command


async def agent_client(settings: Settings) -> AgentClient:
    try:
        agents = await AgentClient.connect(settings)
    except TemporalUnavailable as exc:
        nothing_there = "refused" in str(exc).lower()  # not a TLS or name problem: no server at that address
        hint = f". Start one with `{command('server')}` or set TEMPORAL_ADDRESS." if nothing_there else ""
        raise CliError(f"{exc}{hint}") from None
    await require_namespace(agents.client, settings)
    return agents


async def require_namespace(client: Client, settings: Settings) -> None:
    """Connecting does not check the namespace; without this, a typo in TEMPORAL_NAMESPACE reads as
    "no run with id X" or a stack of RPC errors."""
    try:
        await client.workflow_service.describe_namespace(DescribeNamespaceRequest(namespace=settings.namespace))
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            raise CliError(
                f"namespace {settings.namespace!r} does not exist on {settings.address} (TEMPORAL_NAMESPACE)"
            ) from None
        # Not allowed to describe it (a cloud API key may not be): the commands' own calls will tell.

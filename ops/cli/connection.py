"""Connecting from the command line: one line a person can act on when Temporal is not there."""

from __future__ import annotations

from ops.cli.output import CliError
from ops.settings import Settings
from workflows.client import AgentClient
from workflows.errors import TemporalUnavailable


async def agent_client(settings: Settings) -> AgentClient:
    try:
        return await AgentClient.connect(settings=settings)
    except TemporalUnavailable as exc:
        raise CliError(f"{exc}. Start one with `python starter.py server` or set TEMPORAL_ADDRESS.") from None

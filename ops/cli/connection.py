"""Connecting, and turning Temporal's exceptions into one line a person can act on."""

from __future__ import annotations

from temporalio.client import Client, WorkflowHandle
from temporalio.service import RPCError, RPCStatusCode

from ops.cli.output import CliError
from ops.connection import connect
from ops.settings import Settings
from workflows.inputs import AgentResult


async def connect_or_fail(settings: Settings) -> Client:
    try:
        return await connect(settings)
    except Exception as exc:  # the SDK raises RuntimeError with a transport message
        raise CliError(
            f"cannot reach Temporal at {settings.address} (namespace {settings.namespace}): {exc}. "
            "Start one with `python starter.py server` or set TEMPORAL_ADDRESS."
        ) from None


async def existing_run(client: Client, run_id: str) -> WorkflowHandle:  # type: ignore[type-arg]
    handle = client.get_workflow_handle(run_id, result_type=AgentResult)
    try:
        await handle.describe()
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            raise CliError(f"no run with id {run_id!r} in namespace {client.namespace}") from None
        raise CliError(f"cannot look up run {run_id!r}: {exc.message}") from None
    return handle

"""`pending`, `approve`, `deny`, `cancel`: what humans do to running agents.

`pending` asks Temporal visibility (the `AgentPendingApprovals` search attribute) which runs wait, and
reads each one's pending calls from its memo — no workflow is scanned, and no worker needs to be up.
"""

from __future__ import annotations

import argparse
from datetime import timedelta
from typing import Any

from temporalio.client import Client, WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError
from temporalio.service import RPCError

from agentic.approvals import Decision, PendingApproval
from ops.cli.connection import connect_or_fail, existing_run
from ops.cli.output import CliError, emit
from ops.settings import Settings
from workflows.agent import AgentWorkflow

PENDING_QUERY = 'WorkflowType = "AgentWorkflow" AND ExecutionStatus = "Running" AND AgentPendingApprovals > 0'


async def pending_approvals(client: Client, run_id: str | None = None) -> list[PendingApproval]:
    if run_id is not None:
        description = await (await existing_run(client, run_id)).describe()
        return _from_memo(await description.memo_value("pending_approvals", default=[]))
    found: list[PendingApproval] = []
    async for execution in client.list_workflows(PENDING_QUERY):
        found += _from_memo(await execution.memo_value("pending_approvals", default=[]))
    return sorted(found, key=lambda p: p.deadline)


def _from_memo(rows: Any) -> list[PendingApproval]:
    return [PendingApproval.model_validate(row) for row in rows or []]


def _row(p: PendingApproval) -> dict[str, Any]:
    return p.model_dump(mode="json")


async def cmd_pending(args: argparse.Namespace, settings: Settings) -> int:
    client = await connect_or_fail(settings)
    waiting = await pending_approvals(client)
    lines = [
        f"{p.run_id}  call {p.call_id}  {p.tool}({p.arguments})  hash {p.arguments_hash[:12]}…  "
        f"deadline {p.deadline.isoformat(timespec='seconds')}"
        for p in waiting
    ]
    emit(args.json, [_row(p) for p in waiting], "\n".join(lines) if lines else "no approvals pending")
    return 0


async def cmd_decide(args: argparse.Namespace, settings: Settings) -> int:
    approve = args.command == "approve"
    client = await connect_or_fail(settings)
    waiting = await pending_approvals(client, args.run_id)
    target = _choose(waiting, args.run_id, args.call)
    decision = Decision(
        call_id=target.call_id,
        approve=approve,
        approver=args.by,
        reason=args.reason or "",
        arguments_hash=target.arguments_hash,  # the hash of exactly what was listed, and so approved
    )
    handle = client.get_workflow_handle(args.run_id)
    how = "update"
    try:
        entry = await handle.execute_update(AgentWorkflow.decide, decision, rpc_timeout=timedelta(seconds=10))
        outcome = entry.event
    except WorkflowUpdateFailedError as exc:
        raise CliError(f"rejected: {exc.cause}") from None
    except (WorkflowUpdateRPCTimeoutOrCancelledError, RPCError):
        # No worker is answering now. A signal is stored by the server and acted on when one returns.
        await handle.signal(AgentWorkflow.decision, decision)
        how, outcome = "signal", "sent"
    data = {"run_id": args.run_id, "call_id": target.call_id, "tool": target.tool, "decision": outcome, "via": how}
    text = (
        f"{outcome}: {target.tool}({target.arguments}) in {args.run_id} (call {target.call_id}, by {args.by})"
        if how == "update"
        else f"no worker answered; the decision was sent as a signal and applies when a worker picks up {args.run_id}"
    )
    emit(args.json, data, text)
    return 0


def _choose(waiting: list[PendingApproval], run_id: str, call_id: str | None) -> PendingApproval:
    if call_id is not None:
        for p in waiting:
            if p.call_id == call_id:
                return p
        raise CliError(f"run {run_id} has no pending approval for call {call_id!r}")
    if not waiting:
        raise CliError(f"run {run_id} has no pending approval")
    if len(waiting) > 1:
        raise CliError(
            f"run {run_id} has several pending approvals; choose one with --call: "
            + ", ".join(p.call_id for p in waiting)
        )
    return waiting[0]


async def cmd_cancel(args: argparse.Namespace, settings: Settings) -> int:
    client = await connect_or_fail(settings)
    handle = await existing_run(client, args.run_id)
    await handle.cancel(reason=args.reason or "cancelled from the command line")
    emit(
        args.json,
        {"run_id": args.run_id, "cancel_requested": True},
        f"cancel requested for {args.run_id}; its completed effects will be compensated",
    )
    return 0


def add_decision_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_id")
    parser.add_argument("--call", help="the call to decide, when several wait")
    parser.add_argument("--by", required=True, help="who decides (recorded in the audit trail)")
    parser.add_argument("--reason", help="why (recorded, and told to the model on a denial)")

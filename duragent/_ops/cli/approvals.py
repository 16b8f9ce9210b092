"""`pending`, `approve`, `deny`, `cancel`: what humans do to running agents, through `RunHandle`.

`pending` asks Temporal visibility (the `AgentPendingApprovals` search attribute) which runs wait, and shows
each one's pending calls as the run itself reports them (duragent/_reported.py): never a memo a client
wrote. With no worker up, that is what the run's workflow last published.

`approve` approves exactly the arguments the approver saw: it prints the call and needs the hash prefix
`pending` showed (`--hash`), or `--yes` to approve what it just printed.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from agentic.approvals import PendingApproval
from duragent._client import UPDATE_TIMEOUT, RunHandle, choose
from duragent._config.settings import Settings
from duragent._errors import AgentClientError, NoPendingApproval, RunClosed
from duragent._ops.cli.approver import signer
from duragent._ops.cli.connection import agent_client
from duragent._ops.cli.output import CliError, emit, printable

HASH_SHOWN = 12  # characters of the arguments hash `pending` prints and `--hash` must match
NOTICE_AFTER = 2.0  # seconds of silence before `approve` says it is waiting for a worker


def call_text(p: PendingApproval) -> str:
    arguments = p.arguments
    if isinstance(arguments, dict):
        arguments = ", ".join(f"{k}={v}" for k, v in arguments.items())
    return printable(f"{p.tool}({arguments})", one_line=True)  # a newline in an argument cannot start a line


def tree_text(p: PendingApproval) -> str:
    """For a delegated run's approval: its root and the path down to it (approve it there, or at the root)."""
    if len(p.path) < 2:
        return ""
    path = " → ".join(printable(r, one_line=True) for r in p.path)
    return f"  root {printable(p.root_run_id or '', one_line=True)}  path {path}"


async def cmd_pending(args: argparse.Namespace, settings: Settings) -> int:
    waiting = await (await agent_client(settings)).pending()
    lines = [
        f"{printable(p.run_id, one_line=True)}  call {printable(p.call_id, one_line=True)}  {call_text(p)}  "
        f"hash {printable(p.arguments_hash[:HASH_SHOWN], one_line=True)}  "
        f"deadline {p.deadline.isoformat(timespec='seconds')}" + tree_text(p)
        for p in waiting
    ]
    emit(args.json, [p.model_dump(mode="json") for p in waiting], "\n".join(lines) if lines else "no approvals pending")
    return 0


async def cmd_decide(args: argparse.Namespace, settings: Settings) -> int:
    approve = args.command == "approve"
    key = signer(args, settings)
    handle = await (await agent_client(settings)).get(args.run_id)
    await handle.ensure_open()
    try:
        target = choose(await handle.pending(), args.run_id, args.call)
    except NoPendingApproval as exc:
        raise CliError(f"{exc}{await _decided_already(handle, args.call)}") from None
    arguments_hash = _confirmed_hash(args, target, approve)
    deciding = asyncio.ensure_future(  # by address: the call may be a delegated run's, below this one
        handle.decide(approve, target.address, by=args.by, reason=args.reason, arguments_hash=arguments_hash, key=key)
    )
    done, _ = await asyncio.wait({deciding}, timeout=NOTICE_AFTER)
    if not done:  # no worker has answered yet: say what this pause is
        print(
            f"waiting up to {UPDATE_TIMEOUT.total_seconds():g} s for a worker to apply it; "
            "without one it is queued as a signal…",
            file=sys.stderr,
            flush=True,
        )
    outcome = await deciding
    data: dict[str, Any] = outcome.model_dump(mode="json")
    what = (
        f"{call_text(target)} in {printable(target.run_id)} (call {printable(target.call_id)}, by {printable(args.by)})"
    )
    if outcome.via == "update":
        text = f"{outcome.decision}: {what}"
    else:
        text = (
            f"queued ({'approve' if approve else 'deny'}): {what} — no worker answered, so the decision was sent as "
            "a signal; a worker applies it when it picks the run up, if it is still valid then (the deadline "
            "has not passed)"
        )
    emit(args.json, data, text)
    return 0


async def _decided_already(handle: RunHandle, call_id: str | None) -> str:
    """`: call X was already approved by maria`, from the run's audit trail, when a worker can tell."""
    try:
        audit = (await handle.approvals()).audit
    except AgentClientError:
        return ""
    decided = [a for a in audit if a.event != "rejected" and (call_id is None or a.call_id == call_id)]
    if not decided:
        return ""
    last = decided[-1]
    if last.event == "expired":
        return f": call {printable(last.call_id)} expired before anyone decided"
    return f": call {printable(last.call_id)} was already {last.event} by {printable(last.approver or '?')}"


def _confirmed_hash(args: argparse.Namespace, target: PendingApproval, approve: bool) -> str:
    """The hash to send: the one the approver vouched for (`--hash`), or, with `--yes`, the one printed now."""
    full = target.arguments_hash
    if args.hash:
        given = args.hash  # lower case, long enough: duragent/_ops/cli/arguments.py hash_prefix
        if not full.startswith(given):
            raise CliError(
                f"the pending call is {call_text(target)} with hash {full[:HASH_SHOWN]}, not {given}: the arguments "
                "changed since you looked, or this is another call; nothing was decided"
            )
        return full
    if not approve or args.yes:
        if approve and not args.json:
            print(f"approving {call_text(target)} (hash {full[:HASH_SHOWN]})", flush=True)
        return full
    raise CliError(
        f"approve exactly what you saw: {call_text(target)}, hash {full[:HASH_SHOWN]} — "
        f"re-run with --hash {full[:HASH_SHOWN]} (or --yes to approve these arguments)",
        code=2,
    )


async def cmd_cancel(args: argparse.Namespace, settings: Settings) -> int:
    handle = await (await agent_client(settings)).get(args.run_id)
    try:
        await handle.cancel(args.reason or "cancelled from the command line")
    except RunClosed as exc:  # worded as `job cancel` words it; exit 1 in both
        raise CliError(f"run {args.run_id} has already ended ({exc.status}); nothing to cancel") from None
    emit(
        args.json,
        {"run_id": args.run_id, "cancel_requested": True},
        f"cancel requested for {printable(args.run_id)}; its completed effects will be compensated",
    )
    return 0

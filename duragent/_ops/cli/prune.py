"""`prune` and `archive`: retention for Temporal runs (_ops/retention/temporal.py), and reading an archived run.

    starter.py prune                          # which closed runs are due, and why others are kept (a dry run)
    starter.py prune --yes                    # archive them (gzip JSONL), then delete them everywhere
    starter.py prune --all --yes              # every closed run, whatever its age
    starter.py archive list FILE              # the runs an archive holds
    starter.py archive show FILE RUN_ID       # one of them (--json: its whole record)
    zcat FILE | jq 'select(.run_id == "RUN_ID")'

`job prune` takes the same flags, checked the same way (duragent/_ops/cli/retention_flags.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from duragent._config.settings import Settings
from duragent._ops.cli.arguments import positive_float
from duragent._ops.cli.connection import agent_client
from duragent._ops.cli.output import CliError, command, emit, printable
from duragent._ops.cli.retention_flags import add_prune_arguments, prune_request
from duragent._ops.retention.archive import ArchiveUnreadable, iter_archive
from duragent._ops.retention.journal import open_prune_journal
from duragent._ops.retention.temporal import Pass, RunStores, prune
from duragent._stores import configured as stores
from duragent._stores.errors import StoreUnavailable

# -- prune ------------------------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`job prune`'s arguments, and how long to wait for Temporal."""
    add_prune_arguments(parser)
    parser.add_argument(
        "--wait", type=positive_float, default=60.0, help="seconds to wait for Temporal to finish deleting (60)"
    )


async def cmd_prune(args: argparse.Namespace, settings: Settings) -> int:
    request = prune_request(args)
    run_stores = _stores(settings)
    client = (await agent_client(settings)).client
    try:
        done = await prune(
            client,
            run_stores,
            args.archive_dir or settings.data_dir / "archive",
            request.now,
            request.policy,
            dry_run=request.dry_run,
            wait_seconds=args.wait,
            # The agents' queue only: an `AgentWorkflow` of a stranger's on a queue of its own is not ours to
            # archive, nor to stop the prune.
            task_queue=settings.task_queue,
        )
    except StoreUnavailable as exc:
        raise CliError(str(exc)) from exc
    if not args.json:
        for warning in done.warnings:
            print(f"warning: {warning}", file=sys.stderr)
    emit(args.json, done.as_dict(), _report(done))
    return 0


def _stores(settings: Settings) -> RunStores:
    """The workers' stores. Without AGENT_DATABASE_URL, a data directory with neither their ledger nor their
    transcripts is almost certainly not theirs: refuse, rather than archive runs without their transcripts."""
    transcripts_file = settings.data_dir / stores.TRANSCRIPTS_FILE
    if not settings.database_url and not (settings.ledger_path.exists() or transcripts_file.exists()):
        raise CliError(
            f"no worker stores here: neither {settings.ledger_path} nor {transcripts_file} exists (set AGENT_DATA_DIR"
            " and AGENT_LEDGER as the workers have them, or AGENT_DATABASE_URL)",
            code=2,
        )
    try:
        return RunStores(
            ledger=stores.open_ledger(settings.database_url, settings.ledger_path),
            transcripts=stores.transcripts_for(settings),
            journal=open_prune_journal(settings.database_url, settings.data_dir),
        )
    except StoreUnavailable as exc:
        raise CliError(str(exc)) from exc


def _report(done: Pass) -> str:
    lines: list[str] = []
    if done.dry_run:
        if done.due:
            lines.append(f"would archive and delete {len(done.due)} run(s) (a dry run: add --yes to do it):")
            lines += [f"  {_run_line(run.summary())}" for run in done.due]
        else:
            lines.append(f"no closed run is due as of {done.now:%Y-%m-%d %H:%M} UTC")
        if done.unfinished:
            lines.append(
                f"{len(done.unfinished)} run(s) archived by an earlier prune are not deleted yet (--yes finishes"
                f" them): {', '.join(done.unfinished)}"
            )
    else:
        lines.append(
            f"archived {len(done.archived)} run(s)"
            + (f" to {done.archive}" if done.archive else "")
            + (f"; deleted {len(done.deleted)}" if done.deleted else "")
        )
        released = done.released
        if any(released.values()):
            lines.append(
                f"released {released['effects']} effect row(s), {released['nodes']} transcript node(s) and"
                f" {released['blobs']} blob(s); {released['shared']} row(s) kept, shared with runs still kept"
            )
        if done.pending:
            lines.append(f"Temporal has not finished deleting {', '.join(done.pending)}: the next prune checks again")
    lines += [f"kept {s.run_id}: {s.why}" for s in done.skipped]
    return "\n".join(printable(line, one_line=True) for line in lines)


def _run_line(run: dict[str, Any]) -> str:
    return (
        f"{run['run_id']}  {run.get('agent') or '-'}  {run['status']}  closed {str(run['closed_at'])[:19]}"
        f"  (kept {run['kept_days']:g} days)"
    )


# -- archive ----------------------------------------------------------------------------------------------


def add_archive_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("list", "show"), help="list: the runs in FILE; show: one of them")
    parser.add_argument("file", type=Path, help="an archive prune wrote (agent-runs-*.jsonl.gz)")
    parser.add_argument("run_id", nargs="?", help="show: the run")


def cmd_archive(args: argparse.Namespace, settings: Settings) -> int:
    if args.action == "show" and not args.run_id:
        raise CliError(f"archive show needs the run id: {command('archive show FILE RUN_ID')}", code=2)
    if args.action == "list" and args.run_id:
        raise CliError("archive list takes only the file", code=2)
    if not args.file.is_file():
        raise CliError(f"no archive at {args.file}", code=2)
    try:
        if args.action == "list":
            runs = [_summary(record) for record in iter_archive(args.file)]
            listing = "\n".join(printable(_run_line(r), one_line=True) for r in runs)
            emit(args.json, runs, listing if runs else "no runs")
            return 0
        found = None
        names: list[str] = []
        for record in iter_archive(args.file):  # one record in memory at a time, however large the file
            names.append(str(record.get("run_id")))
            if record.get("run_id") == args.run_id:
                found = record
    except ArchiveUnreadable as exc:
        raise CliError(str(exc), code=2) from None
    if found is None:
        held = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
        raise CliError(f"run {args.run_id!r} is not in {args.file} (it holds {held or 'no runs'})", code=2)
    emit(args.json, found, printable(_show(found)))
    return 0


def _summary(record: dict[str, Any]) -> dict[str, Any]:
    keys = ("run_id", "agent", "status", "temporal_status", "closed_at", "kept_days", "archived_at")
    return {key: record.get(key) for key in keys}


def _show(record: dict[str, Any]) -> str:
    lines = [
        _run_line(record),
        f"temporal status {record.get('temporal_status')}; archived {record.get('archived_at')};"
        f" executions {len(record.get('executions') or [])},"
        f" history events {sum(len(h.get('events', [])) for h in record.get('histories') or [])}",
    ]
    result = record.get("result") or {}
    if result.get("output"):
        lines.append(f"output: {result['output']}")
    if record.get("failure"):
        lines.append(f"failure: {record['failure'].get('type')}: {record['failure'].get('message')}")
    transcript = record.get("transcript") or []
    lines.append(f"transcript ({len(transcript)} messages):")
    for message in transcript:
        calls = ", ".join(f"{c.get('name')}({c.get('arguments')})" for c in message.get("tool_calls") or [])
        said = " ".join(part for part in (message.get("content") or "", f"-> {calls}" if calls else "") if part)
        lines.append(f"  {message.get('role')}: {said}")
    approvals = record.get("approvals")
    if approvals:
        lines.append(f"approvals ({len(approvals)}):")
        lines += [f"  {a.get('at')}  {a.get('event')}  {a.get('tool')}  by {a.get('approver')}" for a in approvals]
    effects = record.get("effects") or []
    lines.append(f"effects ({len(effects)}):")
    lines += [f"  {e.get('at')}  {e.get('tool')}  {e.get('key')}  {e.get('result')}" for e in effects]
    if record.get("blobs"):
        lines.append(f"other stored blobs: {len(record['blobs'])} (--json shows them)")
    return "\n".join(lines)

"""`job`: the checkpoint engine's command line (baseline/) — run agents with SQLite checkpoints: run, resume,
status, cancel, approve/deny, effects, facts, prune, recover, serve.

    job run migration --option records=3        # drive a run to its end (`--agent NAME` works too)
    job status RUN_ID [--messages] | resume RUN_ID | cancel RUN_ID | effects [RUN_ID]
    job approve RUN_ID --key-file KEY --hash H | deny RUN_ID --by NAME
    job prune [--yes] | recover | serve [--port 8765]

Made of the same arguments as starter.py (duragent/_ops/cli/arguments.py, run_options.py, retention_flags.py), so a
flag means
the same thing in both: an agent as AGENT or --agent AGENT, a run id as RUN_ID or --id RUN_ID, --json and
--debug on every command. Every command also takes --db (the checkpoint store; default
AGENT_DATA_DIR/baseline.db), --ledger (default AGENT_LEDGER, else AGENT_DATA_DIR/ledger.db: the ledger
starter.py and worker.py use) and --agents MODULE (default AGENT_MODULES, else the demo agents).

Exit codes (the table shared with starter.py, in duragent/_ops/cli/boundary.py): 0 done (a run that ended completed,
compensated or abandoned); 1 error, or a run that ended failed / compensation_failed / dead_letter; 2 bad
input; 3 lease held or lost; 4 checkpoint mismatch; 130 interrupted. Errors are one line on stderr.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import uuid
from pathlib import Path
from typing import Any

from agentic.agent_set import AgentSet
from duragent._baseline import approvals, jobs, runner, webhooks
from duragent._baseline.errors import UnknownRun
from duragent._baseline.options import RunOptions
from duragent._baseline.schema import ACTIVE, FAILED
from duragent._baseline.status import run_status
from duragent._baseline.store import Store
from duragent._config.agent_modules import AgentModuleError, find, load_agents_and_deps
from duragent._config.approver_keys import api_signing_keys, approver_public_keys
from duragent._config.models import declared_models
from duragent._config.settings import Settings
from duragent._ops.cli import approver, effects, facts
from duragent._ops.cli.arguments import (
    Commands,
    add_agents_modules,
    add_run_id,
    add_serve_arguments,
    add_stream_arguments,
    positive_float,
    positive_int,
)
from duragent._ops.cli.boundary import Parser, exit_now, load_settings, run_command
from duragent._ops.cli.output import CliError, emit, fail, printable
from duragent._ops.cli.retention_flags import add_prune_arguments, prune_request
from duragent._ops.cli.run_options import add_run_arguments, run_request
from duragent._ops.devstack.signals import stop_on_signals
from duragent._ops.retention import checkpoints as retention
from duragent._stores import configured as stores

CHECKPOINT_FILE = "baseline.db"  # in AGENT_DATA_DIR, beside the ledger, unless --db says otherwise


def parser(prog: str = "duragent-job") -> Parser:
    # No default agents module: --agents or AGENT_MODULES names them (the repository's demo agents are its own).
    root = Parser(prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    command = Commands(root, common=_stores_and_agents).add

    run = command("run", cmd_run, "start a run and drive it to its end")
    add_run_arguments(run)  # the same as `starter.py run`'s
    run.add_argument(
        "--webhook", help="URL POSTed when the run reaches a terminal state, signed with $AGENT_WEBHOOK_SECRET"
    )
    run.add_argument(
        "--lease-seconds",
        type=positive_float,
        default=_default("lease_seconds"),
        help="seconds a worker holds the run before another may take it over; renewed every third (%(default)g)",
    )
    run.add_argument(
        "--max-attempts",
        type=positive_int,
        default=_default("max_attempts"),
        help="workers that may take the run before it is dead-lettered (%(default)s)",
    )
    run.add_argument(
        "--poll-interval",
        type=positive_float,
        default=_default("poll_seconds"),
        help="seconds between checks for a decision or a cancel while waiting (%(default)g)",
    )

    resume = command("resume", cmd_resume, "continue a run from the store, once its lease expired")
    add_run_id(resume)
    resume.add_argument("--lease-seconds", type=positive_float, help="lease length for this worker")

    status = command("status", cmd_status, "steps, percent complete, progress, consumption, lease")
    add_run_id(status)
    status.add_argument("--messages", action="store_true", help="the transcript too, rebuilt from the steps")

    cancel = command("cancel", cmd_cancel, "ask the run to stop (its effects are compensated)")
    add_run_id(cancel)
    cancel.add_argument("--reason")

    approver.add_arguments(command("approve", cmd_decide, "approve a pending tool call"))  # as starter.py's
    approver.add_arguments(command("deny", cmd_decide, "decline a pending tool call"))
    effects.add_arguments(command("effects", cmd_effects, "rows of the effects ledger"))
    facts.add_facts_arguments(command("facts", facts.cmd_facts, "what agents remember: list, history, audit, forget"))
    add_prune_arguments(command("prune", cmd_prune, "archive, then delete, finished runs past retention"))

    recover = command("recover", cmd_recover, "resume every active run whose lease expired")
    recover.add_argument("--lease-seconds", type=positive_float)
    recover.add_argument("--detach", action="store_true", help="start the workers and return at once")

    serve = command(
        "serve", cmd_serve, "the runs API over HTTP: runs, SSE progress, cancel, approvals, the inbox at /inbox"
    )
    add_serve_arguments(serve)
    add_stream_arguments(serve)
    serve.add_argument(
        "--max-runs",
        type=positive_int,
        default=jobs.MAX_SERVED_RUNS,
        help="runs (one worker process each) this server drives at once; more get 429 (%(default)s)",
    )
    return root


def _stores_and_agents(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", type=Path, help=f"the checkpoint store (default: AGENT_DATA_DIR/{CHECKPOINT_FILE})")
    parser.add_argument(
        "--ledger", type=Path, help="the effects ledger (default: AGENT_LEDGER, else AGENT_DATA_DIR/ledger.db)"
    )
    add_agents_modules(parser)


def _default(option: str) -> Any:
    return RunOptions.model_fields[option].default


def main(argv: list[str]) -> int:
    """The command line, returning its exit code (tests call this in-process). Errors go through the one
    boundary `starter.py` uses too (duragent/_ops/cli/boundary.py): one line, the shared exit codes."""
    try:
        args = parser().parse_args(argv)
    except SystemExit as exc:  # --help, or a bad flag (already said, on one line)
        return int(exc.code or 0)

    def handle() -> int:
        settings = with_stores(args, load_settings(args))
        with stop_on_signals():  # SIGTERM/SIGHUP end a command as Ctrl-C does: its workers are stopped
            return int(args.handler(args, settings))

    return run_command(handle, debug=args.debug)


def console() -> None:
    """The installed `duragent-job` script. Exit deliberately: the lease renewer, uvicorn and httpx may leave threads
    that would delay or hang interpreter shutdown after the work is done and reported."""
    exit_now(main(sys.argv[1:]))


def with_stores(args: argparse.Namespace, settings: Settings) -> Settings:
    """`--db` and `--ledger` from the settings unless given, and the settings with that ledger (the agents'
    deps open it): the same data directory as starter.py's and worker.py's."""
    args.db = args.db or settings.data_dir / CHECKPOINT_FILE
    args.ledger = args.ledger or settings.ledger_path
    return dataclasses.replace(settings, ledger_path=args.ledger)


# -- commands -------------------------------------------------------------------------------------------


def agent_set(args: argparse.Namespace, settings: Settings, *, running: str | None = None) -> AgentSet:
    """The agents this process runs, with their deps (the ledger at --ledger) and the declared models;
    `running`: the agent a new run names, refused as `starter.py run` refuses it when no module has it."""
    try:
        agents, deps = load_agents_and_deps(args.agents, settings)
        if running is not None:
            find(agents, running)
        keys = approver_public_keys(settings)  # decisions count only when signed, checked before a tool acts
        return AgentSet(agents, deps, declared_models(settings), where="in this job process", approver_keys=keys)
    except (AgentModuleError, ValueError) as exc:  # ApproverKeyError is a ValueError
        raise CliError(str(exc), code=2) from None


def cmd_run(args: argparse.Namespace, settings: Settings) -> int:
    request = run_request(args)
    options = RunOptions(
        options=request.options,
        model=request.model,
        model_settings=request.model_settings,
        task=request.task,
        max_steps=request.max_steps,
        approvals=request.approvals,
        lease_seconds=args.lease_seconds,
        max_attempts=args.max_attempts,
        poll_seconds=args.poll_interval,
    )
    if args.webhook:
        webhooks.check_webhook(args.webhook, settings)
    agents = agent_set(args, settings, running=request.agent)  # refused before a store is created
    store = Store(args.db)
    run_id = request.run_id or f"{request.agent}-{uuid.uuid4().hex[:8]}"

    def recorded(run_id: str) -> None:  # said once the run is stored: a crash or Ctrl-C must not lose the id
        print(f"started {run_id}", file=sys.stderr if args.json else sys.stdout, flush=True)

    sender = webhooks.deliverer(settings)
    row = jobs.start(
        store,
        agents,
        run_id,
        request.agent,
        options,
        webhook_url=args.webhook,
        webhook_sender=sender,
        recorded=recorded,
    )
    return _ended(args, store, row.run_id)


def cmd_resume(args: argparse.Namespace, settings: Settings) -> int:
    store = _existing(args.db, args.run_id)
    sender = webhooks.deliverer(settings)
    row = jobs.resume(
        store, agent_set(args, settings), args.run_id, lease_seconds=args.lease_seconds, webhook_sender=sender
    )
    return _ended(args, store, row.run_id)


def _ended(args: argparse.Namespace, store: Store, run_id: str) -> int:
    view = run_status(store, run_id)
    emit(args.json, view, summary_line(view))
    for hook in view["webhooks"]:  # a delivery that did not happen is said, not only recorded
        if hook["status"] != "delivered":
            print(f"note: {printable(webhooks.undelivered(hook, run_id))}", file=sys.stderr)
    if view["status"] in FAILED:
        fail(printable(f"run {run_id} ended {view['status']}: {view['error']}"))
        return 1
    return 0


def cmd_status(args: argparse.Namespace, settings: Settings) -> int:
    store = _existing(args.db, args.run_id)
    view = run_status(store, args.run_id)
    if args.messages:
        replayed = runner.transcript(store, agent_set(args, settings), args.run_id)
        view["messages"] = [m.to_dict() for m in replayed.messages]
    lines = [summary_line(view)]
    if view["status"] in ACTIVE and not view["lease"]["live"]:
        lines.append(f"  no live worker holds it (lease ended); `job resume {args.run_id}` continues it")
    lines += [f"  {s['step']:>3} {s['status']:<11} {s['step_name']:<24} {s['label']}" for s in view["steps"]]
    lines += [
        f"  approval {a['call_id']}: {a['status']} {call_text(a)} hash {a['arguments_hash'][:12]}"
        f" (deadline {a['deadline']})"
        for a in view["approvals"]
    ]
    lines = [printable(line, one_line=True) for line in lines]  # each its own line, whatever a label holds
    lines += [f"  [{message.get('role')}] {message_text(message)}" for message in view.get("messages", [])]
    emit(args.json, view, "\n".join(lines))
    return 0


def cmd_cancel(args: argparse.Namespace, settings: Settings) -> int:
    store = _existing(args.db, args.run_id)
    jobs.cancel(store, args.run_id, args.reason or "cancelled from the command line")
    emit(args.json, {"run_id": args.run_id, "cancel_requested": True}, f"cancel requested for {args.run_id}")
    return 0


def cmd_decide(args: argparse.Namespace, settings: Settings) -> int:
    key = approver.signer(
        args, settings
    )  # `--key-file` (or AGENT_APPROVER_KEY_FILE) and `--by`, as starter.py takes them
    store = _existing(args.db, args.run_id)
    approve = args.command == "approve"
    decision = approvals.decision_on(  # bound to this run's execution and the request's deadline
        store,
        args.run_id,
        approve=approve,
        approver=args.by,
        call_id=args.call,
        reason=args.reason or "",
        arguments_hash=_reviewed_hash(args, store) if approve else args.hash,
    )
    if key is not None:
        decision = decision.signed(args.run_id, key)
    # This process checks with its keys; the runner checks the recorded decision again before it acts.
    entry = approvals.record(store, args.run_id, decision, approver_public_keys(settings))
    signed = " (signed)" if entry.signed else ""
    text = printable(f"{entry.call_id}: {entry.event} by {entry.approver}{signed}", one_line=True)
    emit(args.json, entry.model_dump(mode="json"), text)
    return 0


def _reviewed_hash(args: argparse.Namespace, store: Store) -> str | None:
    """Approving means approving arguments a person saw: print them, then take the full hash of what the
    person confirmed (`--hash PREFIX` they copied from `job status`, or `--yes` to what was just printed).
    A prefix that does not match goes to the decision as it is, which rejects it and records why."""
    rows = approvals.view(store, args.run_id)["approvals"]
    pending = [a for a in rows if a["status"] == "pending"]
    chosen = [a for a in rows if a["call_id"] == args.call] if args.call else pending
    target = chosen[0] if len(chosen) == 1 else None
    if target is not None:
        shown = f"approving {target['call_id']}: {call_text(target)} hash {target['arguments_hash'][:12]}"
        print(printable(shown), file=sys.stderr if args.json else sys.stdout)
    if args.hash:
        if target is not None and target["arguments_hash"].startswith(args.hash):
            return str(target["arguments_hash"])
        return str(args.hash)
    if not args.yes:
        raise CliError(
            "approve what you reviewed: pass --hash PREFIX (from `job status`) or --yes for the call printed above",
            code=2,
        )
    return str(target["arguments_hash"]) if target is not None else None


def cmd_effects(args: argparse.Namespace, settings: Settings) -> int:
    if args.run_id is not None:
        _existing(args.db, args.run_id)
    return effects.cmd_effects(args, settings)


def cmd_prune(args: argparse.Namespace, settings: Settings) -> int:
    """A dry run unless --yes: a typo in a retention must not delete a store's history."""
    request = prune_request(args)
    if not args.db.exists():
        raise CliError(f"no checkpoint store at {args.db}", code=2)
    outcome = retention.prune(
        Store(args.db),
        args.archive_dir or settings.data_dir / "archive",
        request.now,
        completed_days=request.policy.completed_days,
        failed_days=request.policy.failed_days,
        dry_run=request.dry_run,
    )
    runs = outcome["archived"]
    if request.dry_run:
        text = f"would archive and delete {len(runs)} run(s){': ' + ', '.join(runs) if runs else ''}"
        text += " (a dry run: add --yes to do it)"
    else:
        text = f"archived and deleted {len(runs)} run(s){' to ' + outcome['archive'] if outcome['archive'] else ''}"
    emit(args.json, outcome, text)
    return 0


def cmd_recover(args: argparse.Namespace, settings: Settings) -> int:
    outcome = jobs.recover(
        Store(args.db),
        args.ledger,
        agent_modules=args.agents,
        lease_seconds=args.lease_seconds,
        detach=args.detach,
        webhook_sender=webhooks.deliverer(settings),
    )
    lines = [
        f"{r['run_id']}: {r.get('status') or 'started'} {r.get('error') or ''}".rstrip() for r in outcome["resumed"]
    ]
    emit(args.json, outcome, printable("\n".join(lines)) or "nothing to recover")
    return 1 if any(r.get("exit_code") for r in outcome["resumed"]) else 0


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    from duragent._ops.http.app import create_app
    from duragent._ops.http.auth import AuthConfigError
    from duragent._ops.http.checkpoints import CheckpointEngine
    from duragent._ops.http.serve import auth_from, listen, listening_line, server

    try:
        auth = auth_from(args, settings, "job serve")
    except AuthConfigError as exc:
        raise CliError(str(exc), code=2) from None
    if not args.db.parent.is_dir():  # a mistyped path would be served as an empty store answering 404s
        raise CliError(f"no directory {args.db.parent} for the checkpoint store {args.db}", code=2)
    try:
        listener = listen(args)  # bound before the address is printed: connections wait in the backlog
    except OSError as exc:
        raise CliError(f"cannot listen on {args.host}:{args.port}: {exc.strerror}; choose another --port") from None
    fresh = "" if args.db.exists() else ", empty until a run is started"
    engine = CheckpointEngine(
        args.db,
        agent_set(args, settings),
        ledger=args.ledger,
        settings=settings,
        agent_modules=args.agents,
        max_runs=args.max_runs,
        signing_keys=api_signing_keys(settings),  # decisions of the logged-in approvers, signed for them
    )
    print(listening_line("job serve", args, auth, f"store {args.db}{fresh}"), flush=True)
    app = create_app(
        engine,
        auth,
        secure_cookie=args.secure_cookie,
        facts=lambda: stores.facts_for(settings),
        stream_seconds=args.stream_seconds,
    )
    server(app, args).run(sockets=[listener])
    return 0


# -- plumbing -------------------------------------------------------------------------------------------


def _existing(db: Path, run_id: str) -> Store:
    if not db.exists():  # reading must not create an empty store where the user mistyped a path
        raise UnknownRun(f"unknown run id {run_id!r}: no checkpoint store at {db}")
    store = Store(db)
    store.require(run_id)
    return store


def summary_line(status: dict[str, Any]) -> str:
    progress = status["progress"]
    line = f"{status['run_id']}: {status['status']}"
    if status["stop"]:
        line += f" ({status['stop']})"
    line += f", step {progress['step']}/{progress['total'] or '?'} {progress['label']}"
    if status["output"]:
        line += f" — {status['output']}"
    return printable(line, one_line=True)  # labels and outputs are the model's: never raw to a terminal


def call_text(approval: dict[str, Any]) -> str:
    """`tool(name=value, …)` of an approval row, as a person reviews it (escape it before printing)."""
    arguments = ", ".join(f"{k}={v!r}" for k, v in approval["arguments"].items())  # repr: quoted, escaped
    return f"{approval['tool']}({arguments})"


def message_text(message: dict[str, Any]) -> str:
    """A transcript message on one line: its text, or the tool calls it asks for."""
    text = str(message.get("content") or "")
    calls = message.get("tool_calls") or []
    if calls:
        text += " ".join(f"{c.get('name')}({json.dumps(c.get('arguments'), sort_keys=True)})" for c in calls)
    return printable(" ".join(text.split()))


if __name__ == "__main__":
    console()

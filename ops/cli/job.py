"""`job`: run agents with SQLite checkpoints — run, resume, status, cancel, approve/deny, effects, prune,
recover, serve. Every command takes --db, --ledger, --agents and --json.

A run id is given as RUN_ID or --id RUN_ID. Exit codes (the table shared with starter.py, in
ops/cli/boundary.py): 0 done (a run that ended completed, compensated or abandoned); 1 error, or a run that
ended failed / compensation_failed / dead_letter; 2 bad input; 3 lease held or lost; 4 checkpoint mismatch;
130 interrupted. Errors are one line on stderr, never a traceback (`--debug` shows it).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentic.agent_set import AgentSet
from agentic.approvals import Decision
from agentic.signing import ApproverKey, ApproverKeyError
from baseline import approvals, jobs, runner, webhooks
from baseline.errors import BadInput, UnknownRun
from baseline.options import RunOptions
from baseline.schema import ACTIVE, FAILED
from baseline.status import run_status
from baseline.store import Store
from config.agent_modules import AgentModuleError, load_agents_and_deps, module_names
from config.approver_keys import api_signing_keys, approver_public_keys, load_private_key
from config.models import declared_models
from config.settings import Settings
from ops.cli.arguments import add_run_id, approver, run_id
from ops.cli.boundary import Parser, exit_now, load_settings, run_command
from ops.cli.facts import add_facts_arguments, cmd_job_facts
from ops.cli.output import CliError, printable
from ops.cli.run_options import (
    RunOptionError,
    add_run_option_arguments,
    positive_float,
    positive_int,
    run_request,
)
from ops.devstack.signals import stop_on_signals
from ops.http.checkpoints import MAX_RUNS
from ops.http.serve import add_serve_arguments
from ops.retention import checkpoints as prune
from stores import configured as stores
from stores.ledger import EffectsLedger

MIN_HASH_PREFIX = 8


def build_parser() -> Parser:
    root = Parser(prog="job", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = root.add_subparsers(dest="command", required=True)

    def command(name: str, handler: Callable[[argparse.Namespace], int], help: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help, description=help)
        sub.add_argument("--db", type=Path, default=Path(".data/baseline.db"), help="checkpoint store")
        sub.add_argument(
            "--ledger",
            type=Path,
            default=Path(os.environ.get("AGENT_LEDGER", ".data/ledger.db")),
            help="effects ledger (default: $AGENT_LEDGER or .data/ledger.db)",
        )
        sub.add_argument("--agents", action="append", metavar="MODULE", help="agents module(s) (default: examples)")
        sub.add_argument("--json", action="store_true", help="machine-readable output")
        sub.add_argument("--debug", action="store_true", help="show the traceback of an unexpected error")
        sub.set_defaults(handler=handler)
        return sub

    run = command("run", cmd_run, "start a run and drive it to its end")
    run.add_argument("--id", dest="run_id", type=run_id, help="the run id (generated when omitted); never reused")
    run.add_argument(
        "--agent", "--scenario", dest="agent", required=True, help="the agent, by name (demo: billing, migration, ...)"
    )
    add_run_option_arguments(run)  # the same run options as `starter.py run`
    run.add_argument(
        "--webhook", help="URL POSTed when the run reaches a terminal state, signed with $AGENT_WEBHOOK_SECRET"
    )
    run.add_argument("--lease-seconds", type=positive_float, default=15.0, help="lease length, renewed every third")
    run.add_argument(
        "--max-attempts", type=positive_int, default=5, help="workers that may take the run before dead_letter"
    )
    run.add_argument("--poll-interval", type=positive_float, default=0.2, help="seconds between approval/cancel checks")

    resume = command("resume", cmd_resume, "continue a run from the store, once its lease expired")
    add_run_id(resume)
    resume.add_argument("--lease-seconds", type=positive_float, help="lease length for this worker")

    show = command("status", cmd_status, "steps, percent complete, progress, consumption, lease")
    add_run_id(show)
    show.add_argument("--messages", action="store_true", help="include the transcript rebuilt from the steps")

    stop = command("cancel", cmd_cancel, "ask the run to stop (its effects are compensated)")
    add_run_id(stop)
    stop.add_argument("--reason", default="cancelled by request")

    for name, verb in (("approve", "approve"), ("deny", "decline")):
        decide = command(name, cmd_approve if name == "approve" else cmd_deny, f"{verb} a pending tool call")
        add_run_id(decide)
        decide.add_argument("--call", help="the call id (default: the run's only pending call)")
        decide.add_argument(
            "--by", type=approver, help="who decides (recorded in the audit trail; default: the key file's name)"
        )
        decide.add_argument(
            "--key-file",
            type=Path,
            help="your approver key (`name:base64`; or AGENT_APPROVER_KEY_FILE): signs the decision, which runners "
            "with AGENT_APPROVER_KEYS require",
        )
        decide.add_argument("--reason", default="")
        if name == "approve":
            decide.add_argument(
                "--hash",
                help=f"the arguments hash you reviewed, as `job status` shows it (at least {MIN_HASH_PREFIX} chars)",
            )
            decide.add_argument("--yes", action="store_true", help="approve the arguments this command prints")
        else:
            decide.add_argument("--hash", help="the arguments hash you reviewed (default: the pending call's)")

    effects = command("effects", cmd_effects, "effects ledger rows of a run")
    add_run_id(effects)

    add_facts_arguments(command("facts", cmd_job_facts, "what agents remember: list, history, audit, forget"))

    retention = command(
        "prune",
        cmd_prune,
        "archive and delete old finished runs (30 days; failed 90). Lists what it would delete unless --yes",
    )
    retention.add_argument("--now", help="ISO time to prune as of (tests)")
    retention.add_argument("--archive-dir", type=Path, help="where archives go (default: next to --db)")
    retention.add_argument("--completed-days", type=positive_float, default=30.0, help="days kept (default 30)")
    retention.add_argument("--failed-days", type=positive_float, default=90.0, help="days kept (default 90)")
    retention.add_argument("--all", action="store_true", help="every finished run, whatever its age (needs --yes)")
    retention.add_argument("--yes", action="store_true", help="archive and delete (without it: only list them)")

    sweep = command("recover", cmd_recover, "resume every active run whose lease expired")
    sweep.add_argument("--lease-seconds", type=positive_float)
    sweep.add_argument("--detach", action="store_true", help="start the workers and return at once")

    serve = command(
        "serve",
        cmd_serve,
        "the runs API over HTTP (ops/http/): runs, SSE progress, cancel, approvals, the inbox at /inbox; "
        "bearer tokens from AGENT_API_TOKENS",
    )
    add_serve_arguments(serve)
    serve.add_argument(
        "--max-runs",
        type=positive_int,
        default=MAX_RUNS,
        help=f"runs (one worker process each) this server drives at once; more get 503 (default {MAX_RUNS})",
    )
    return root


# -- commands -------------------------------------------------------------------------------------------


def agent_set(args: argparse.Namespace) -> AgentSet:
    """The agents this process runs, with their deps (the ledger at --ledger) and the declared models."""
    settings = dataclasses.replace(load_settings(), ledger_path=args.ledger)
    try:
        agents, deps = load_agents_and_deps(module_names(args.agents), settings)
        keys = approver_public_keys(settings)  # decisions count only when signed, checked before a tool acts
        return AgentSet(agents, deps, declared_models(settings), where="in this job process", approver_keys=keys)
    except (AgentModuleError, ValueError) as exc:  # ApproverKeyError is a ValueError
        raise BadInput(str(exc)) from None


def cmd_run(args: argparse.Namespace) -> int:
    try:
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
    except RunOptionError as exc:
        raise BadInput(str(exc)) from None
    except ValidationError as exc:
        first = exc.errors()[0]
        raise BadInput(f"invalid run options: {'.'.join(map(str, first['loc']))}: {first['msg']}") from None
    if args.webhook:
        webhooks.check_webhook(args.webhook)
    agents = agent_set(args)  # an unknown agent is refused before a store is created
    store = Store(args.db)
    run_id = args.run_id or f"{args.agent}-{uuid.uuid4().hex[:8]}"
    if not args.json:  # said first: a crash or Ctrl-C must not lose the id (`job resume RUN_ID`)
        print(f"started {run_id}", flush=True)
    row = jobs.start(store, agents, run_id, args.agent, options, webhook_url=args.webhook)
    return _ended(args, store, row.run_id)


def cmd_resume(args: argparse.Namespace) -> int:
    store = _existing(args.db, args.run_id)
    row = jobs.resume(store, agent_set(args), args.run_id, lease_seconds=args.lease_seconds)
    return _ended(args, store, row.run_id)


def _ended(args: argparse.Namespace, store: Store, run_id: str) -> int:
    view = run_status(store, run_id)
    _emit(args, view, summary_line(view))
    for hook in view["webhooks"]:  # a delivery that did not happen is said, not only recorded
        if hook["status"] != "delivered":
            print(f"note: {printable(webhooks.undelivered(hook, run_id))}", file=sys.stderr)
    if view["status"] in FAILED:
        _fail(f"run {run_id} ended {view['status']}: {view['error']}")
        return 1
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    store = _existing(args.db, args.run_id)
    view = run_status(store, args.run_id)
    if args.messages:
        replayed = runner.transcript(store, agent_set(args), args.run_id)
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
    for message in view.get("messages", []):
        lines.append(f"  [{message.get('role')}] {message_text(message)}")
    _emit(args, view, "\n".join(lines))
    return 0


def message_text(message: dict[str, Any]) -> str:
    """A transcript message on one line: its text, or the tool calls it asks for."""
    text = str(message.get("content") or "")
    calls = message.get("tool_calls") or []
    if calls:
        text += " ".join(f"{c.get('name')}({json.dumps(c.get('arguments'), sort_keys=True)})" for c in calls)
    return printable(" ".join(text.split()))


def cmd_cancel(args: argparse.Namespace) -> int:
    store = _existing(args.db, args.run_id)
    jobs.cancel(store, args.run_id, args.reason)
    _emit(args, {"run_id": args.run_id, "cancel_requested": True}, f"cancel requested for {args.run_id}")
    return 0


def cmd_approve(args: argparse.Namespace) -> int:
    return _decide(args, approve=True)


def cmd_deny(args: argparse.Namespace) -> int:
    return _decide(args, approve=False)


def _decide(args: argparse.Namespace, approve: bool) -> int:
    store = _existing(args.db, args.run_id)
    key, by = _signer(args)
    arguments_hash = args.hash
    if approve:
        arguments_hash = _reviewed_hash(args, store)
    call_id, arguments_hash = _decided_call(store, args.run_id, args.call, arguments_hash)
    signature = None
    if key is not None and call_id is not None and arguments_hash is not None:
        unsigned = Decision(
            call_id=call_id, approve=approve, approver=by, reason=args.reason, arguments_hash=arguments_hash
        )
        signature = unsigned.signed(args.run_id, key).signature
    try:
        keys = approver_public_keys(load_settings())  # this process's check; the runner checks again
    except ApproverKeyError as exc:
        raise BadInput(str(exc)) from None
    entry = approvals.decide(
        store,
        args.run_id,
        approve=approve,
        approver=by,
        call_id=call_id,
        reason=args.reason,
        arguments_hash=arguments_hash,
        signature=signature,
        approver_keys=keys,
    )
    signed = " (signed)" if entry.signed else ""
    _emit(
        args,
        entry.model_dump(mode="json"),
        printable(f"{entry.call_id}: {entry.event} by {entry.approver}{signed}", one_line=True),
    )
    return 0


def _signer(args: argparse.Namespace) -> tuple[ApproverKey | None, str]:
    """The approver's key (`--key-file`, or AGENT_APPROVER_KEY_FILE) and the name decided under."""
    path = args.key_file or (Path(p) if (p := os.environ.get("AGENT_APPROVER_KEY_FILE", "").strip()) else None)
    try:
        key = load_private_key(path) if path is not None else None
    except ApproverKeyError as exc:
        raise BadInput(str(exc)) from None
    by = args.by if args.by is not None else (key.name if key is not None else None)
    if not by:
        raise BadInput("--by needs a name (recorded in the audit trail), or --key-file: its approver decides")
    if key is not None and key.name != by:
        raise BadInput(f"the key file is {key.name}'s, not {by}'s: a decision is signed by its approver")
    return key, by


def _decided_call(store: Store, run_id: str, call: str | None, given: str | None) -> tuple[str | None, str | None]:
    """The call a decision is for and the arguments hash it carries, as `approvals.decide` will take them —
    the ones a signature must cover (None when the decision will be refused anyway)."""
    rows = approvals.view(store, run_id)["approvals"]
    pending = [r for r in rows if r["status"] == "pending"]
    chosen = [r for r in rows if r["call_id"] == call] if call else pending
    if len(chosen) != 1:
        return call, given
    return chosen[0]["call_id"], given or chosen[0]["arguments_hash"]


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
        if len(args.hash) < MIN_HASH_PREFIX:
            raise BadInput(f"--hash: give at least {MIN_HASH_PREFIX} characters of the hash `job status` shows")
        if target is not None and target["arguments_hash"].startswith(args.hash.lower()):
            return str(target["arguments_hash"])
        return str(args.hash)
    if not args.yes:
        raise BadInput(
            "approve what you reviewed: pass --hash PREFIX (from `job status`) or --yes for the call printed above"
        )
    return str(target["arguments_hash"]) if target is not None else None


def cmd_effects(args: argparse.Namespace) -> int:
    _existing(args.db, args.run_id)
    rows = [e.model_dump() for e in EffectsLedger(args.ledger).effects(args.run_id)]
    lines = [printable(f"{e['at']}  {e['tool']:<16} {e['key']}  {e['result']}", one_line=True) for e in rows]
    _emit(args, rows, "\n".join(lines) if lines else "no effects")
    return 0


def cmd_prune(args: argparse.Namespace) -> int:
    """A dry run unless --yes: a typo in a retention must not delete a store's history."""
    if args.all and not args.yes:
        raise BadInput("--all prunes every finished run, whatever its age: add --yes to do it")
    if not args.db.exists():
        raise BadInput(f"no checkpoint store at {args.db}")
    store = Store(args.db)
    now = datetime.now(UTC)
    if args.now:
        try:
            now = datetime.fromisoformat(args.now)
        except ValueError:
            raise BadInput(f"--now: not an ISO time: {args.now!r}") from None
        now = now if now.tzinfo else now.replace(tzinfo=UTC)
    keep = 0.0 if args.all else None
    outcome = prune.prune(
        store,
        args.archive_dir or args.db.parent / "archive",
        now,
        completed_days=args.completed_days if keep is None else keep,
        failed_days=args.failed_days if keep is None else keep,
        dry_run=not args.yes,
    )
    runs = outcome["archived"]
    if args.yes:
        text = f"archived and deleted {len(runs)} run(s){' to ' + outcome['archive'] if outcome['archive'] else ''}"
    else:
        text = f"would archive and delete {len(runs)} run(s){': ' + ', '.join(runs) if runs else ''}"
        text += " (a dry run: add --yes to do it)"
    _emit(args, outcome, text)
    return 0


def cmd_recover(args: argparse.Namespace) -> int:
    outcome = jobs.recover(
        Store(args.db),
        args.ledger,
        agent_modules=args.agents,
        lease_seconds=args.lease_seconds,
        detach=args.detach,
    )
    lines = [
        f"{r['run_id']}: {r.get('status') or 'started'} {r.get('error') or ''}".rstrip() for r in outcome["resumed"]
    ]
    _emit(args, outcome, printable("\n".join(lines)) or "nothing to recover")
    return 1 if any(r.get("exit_code") for r in outcome["resumed"]) else 0


def cmd_serve(args: argparse.Namespace) -> int:
    from ops.http.app import create_app
    from ops.http.auth import AuthConfigError
    from ops.http.checkpoints import CheckpointEngine
    from ops.http.serve import auth_from, listen, listening_line, server

    try:
        auth = auth_from(args, "job serve")
    except AuthConfigError as exc:
        raise BadInput(str(exc)) from None
    if not args.db.parent.is_dir():  # a mistyped path would be served as an empty store answering 404s
        raise BadInput(f"no directory {args.db.parent} for the checkpoint store {args.db}")
    try:
        listener = listen(args)  # bound before the address is printed: connections wait in the backlog
    except OSError as exc:
        raise CliError(f"cannot listen on {args.host}:{args.port}: {exc.strerror}; choose another --port") from None
    fresh = "" if args.db.exists() else ", empty until a run is started"
    try:
        signing_keys = api_signing_keys()
    except ApproverKeyError as exc:
        raise BadInput(str(exc)) from None
    engine = CheckpointEngine(
        args.db,
        agent_set(args),
        ledger=args.ledger,
        agent_modules=args.agents,
        max_runs=args.max_runs,
        signing_keys=signing_keys,
    )
    print(listening_line("job serve", args, auth, f"store {args.db}{fresh}"), flush=True)
    app = create_app(engine, auth, secure_cookie=args.secure_cookie, facts=lambda: stores.facts_for(Settings()))
    server(app, args).run(sockets=[listener])
    return 0


# -- plumbing -------------------------------------------------------------------------------------------


def _existing(db: Path, run_id: str) -> Store:
    if not db.exists():  # reading must not create an empty store where the user mistyped a path
        raise UnknownRun(f"unknown run id {run_id!r}: no checkpoint store at {db}")
    store = Store(db)
    store.require(run_id)
    return store


def _emit(args: argparse.Namespace, data: Any, text: str) -> None:
    print(json.dumps(data, indent=2, sort_keys=True, default=str) if args.json else text)


def _fail(message: str) -> None:
    print(f"error: {printable(message)}", file=sys.stderr)


def run(argv: list[str]) -> int:
    """The command line, returning its exit code (tests call this in-process). Errors go through the one
    boundary `starter.py` uses too (ops/cli/boundary.py): one line, the shared exit codes."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help, or a bad flag (already said, on one line)
        return int(exc.code or 0)

    def handle() -> int:
        with stop_on_signals():  # SIGTERM/SIGHUP end a command as Ctrl-C does: its workers are stopped
            return int(args.handler(args))

    return run_command(handle, debug=args.debug)


def main() -> None:
    # Exit deliberately: the lease renewer, uvicorn and httpx may leave threads that would delay or
    # hang interpreter shutdown after the work is done and reported.
    exit_now(run(sys.argv[1:]))


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


if __name__ == "__main__":
    main()

"""The worker's entry points: start a run, resume one, recover every run whose lease expired."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentic.agent_set import AgentSet, UnknownAgent
from duragent._baseline import webhooks
from duragent._baseline.crash import CrashHook
from duragent._baseline.errors import BadInput, DeadLettered, LeaseLost, RunFailed, RunNotResumable
from duragent._baseline.lease import LeaseKeeper, acquire, new_owner
from duragent._baseline.options import RunOptions
from duragent._baseline.runner import Runner
from duragent._baseline.schema import ACTIVE
from duragent._baseline.store import Progress, RunRow, Store
from duragent._stores.errors import StoreUnavailable

# Runs a server (`job serve`) drives at once, each in a worker process of its own (`--max-runs`).
MAX_SERVED_RUNS = 8


def start(
    store: Store,
    agents: AgentSet,
    run_id: str,
    agent_name: str,
    options: RunOptions,
    *,
    webhook_url: str | None = None,
    webhook_sender: webhooks.Sender | None = None,
    crash: CrashHook | None = None,
    recorded: Callable[[str], None] | None = None,
) -> RunRow:
    """Check what can be checked before anything is stored (the agent, its options, the model), then
    record the run, tell `recorded` its id (a command line prints it: a crash or Ctrl-C from here on must not
    lose it) and drive it. `webhook_sender` signs the run's webhook when it ends (webhooks.deliverer)."""
    owner = new_owner()
    create(store, agents, run_id, agent_name, options, webhook_url=webhook_url, owner=owner)
    if recorded is not None:
        recorded(run_id)
    return _drive(store, agents, run_id, owner, options.lease_seconds, crash, webhook_sender)


def create(
    store: Store,
    agents: AgentSet,
    run_id: str,
    agent_name: str,
    options: RunOptions,
    *,
    webhook_url: str | None = None,
    owner: str | None = None,
) -> None:
    """Check what can be checked (the agent, its options, the model), then record the run, leased to `owner`
    (None: to whichever worker resumes it first). BadInput or RunExists, with nothing stored."""
    try:
        served = agents.get(agent_name)
        spec = served.agent.spec(agents.options(served, options.options), lookup=agents.agent)
        agents.model(served, options.model)
    except (UnknownAgent, LookupError, ValueError) as exc:
        raise BadInput(str(exc)) from None
    if options.task is None and spec.task is None:
        raise BadInput(f"agent {spec.name} has no default task: give one with --task")
    try:
        store.create_run(
            run_id,
            spec.name,
            options.model_dump_json(),
            owner=owner,
            lease_seconds=options.lease_seconds,
            webhook_url=webhook_url,
            progress=Progress(0, spec.estimated_actions, "starting"),
        )
    except OverflowError:  # an option so large the agent's estimate of its actions is past SQLite's 64 bits
        raise BadInput(f"an option of agent {spec.name} is too large: {spec.estimated_actions} actions") from None


def resume(
    store: Store,
    agents: AgentSet,
    run_id: str,
    *,
    lease_seconds: float | None = None,
    webhook_sender: webhooks.Sender | None = None,
    crash: CrashHook | None = None,
    by_parent: bool = False,
) -> RunRow:
    """Continue `run_id` from the store alone, once its previous worker's lease expired. A delegated run is
    resumed by its parent only (`by_parent`), which then goes on with what it answered."""
    options = RunOptions.model_validate_json(store.require(run_id).options)
    if options.delegation is not None and not by_parent:
        parent = options.delegation.parent
        raise RunNotResumable(f"run {run_id} was delegated by run {parent}: resume {parent}, which resumes it")
    lease_seconds = lease_seconds or options.lease_seconds
    owner = new_owner()
    try:
        acquire(store, run_id, owner, lease_seconds, options.max_attempts)
    except DeadLettered:
        webhooks.deliver_pending(store, webhook_sender, run_id)
        raise
    return _drive(store, agents, run_id, owner, lease_seconds, crash, webhook_sender)


def _drive(
    store: Store,
    agents: AgentSet,
    run_id: str,
    owner: str,
    lease_seconds: float,
    crash: CrashHook | None,
    webhook_sender: webhooks.Sender | None,
) -> RunRow:
    with LeaseKeeper(store, run_id, owner, lease_seconds) as keeper:
        try:
            Runner(store, agents, store.require(run_id), owner, keeper, crash or CrashHook.from_env()).run()
        except RunFailed as exc:
            progress = store.require(run_id).progress
            store.finish(
                run_id, owner, "failed", progress=Progress(progress.step, progress.total, "failed"), error=str(exc)
            )
        except LeaseLost:
            raise
        except BaseException as exc:
            # Not the run's fault as far as we know (a mismatch, a locked database, a bug): keep the run
            # active and let go of it, so a later resume can retry; dead-lettering bounds the retries.
            _let_go(store, run_id, owner, f"{type(exc).__name__}: {exc}")
            raise
    webhooks.deliver_pending(store, webhook_sender, run_id)
    return store.require(run_id)


def _let_go(store: Store, run_id: str, owner: str, error: str) -> None:
    try:
        with store.transaction() as db:
            db.execute(
                "UPDATE runs SET error = ?, lease_owner = NULL, lease_expires = 0 WHERE run_id = ? AND lease_owner = ?",
                (error, run_id, owner),
            )
    except StoreUnavailable:
        # The store cannot be written (the disk that failed the run is still full or read-only): the lease then
        # expires by itself, and the error worth reporting is the one the run met, raised by the caller.
        pass


def recover(
    store: Store,
    ledger_path: Path,
    *,
    agent_modules: list[str] | None = None,
    lease_seconds: float | None = None,
    detach: bool = False,
    webhook_sender: webhooks.Sender | None = None,
) -> dict[str, Any]:
    """Resume, each in its own worker process, every active run whose lease expired; then deliver
    webhooks left queued by workers that died after finishing a run."""
    placeholders = ", ".join("?" for _ in ACTIVE)
    stale = [
        r["run_id"]
        for r in store.query(
            f"SELECT run_id, options FROM runs WHERE status IN ({placeholders})"
            " AND (lease_owner IS NULL OR lease_expires <= ?) ORDER BY created_at",
            (*ACTIVE, time.time()),
        )
        # A delegated run is resumed by its parent's worker, which then goes on with its answer.
        if RunOptions.model_validate_json(r["options"]).delegation is None
    ]
    workers = []
    for run_id in stale:
        command = [sys.executable, "-m", "duragent._ops.cli.job", "resume", "--id", run_id]
        command += ["--db", str(store.path), "--ledger", str(ledger_path)]
        for module in agent_modules or []:
            command += ["--agents", module]
        if lease_seconds:
            command += ["--lease-seconds", str(lease_seconds)]
        pipe = subprocess.DEVNULL if detach else subprocess.PIPE
        workers.append(
            (run_id, subprocess.Popen(command, stdout=pipe, stderr=pipe, text=True, start_new_session=detach))
        )
    resumed = []
    try:
        for run_id, worker in workers:
            if detach:
                resumed.append({"run_id": run_id, "pid": worker.pid})
                continue
            _, err = worker.communicate()
            row = store.run(run_id)
            resumed.append(
                {
                    "run_id": run_id,
                    "exit_code": worker.returncode,
                    "status": row.status if row else None,
                    "error": err.strip().splitlines()[-1] if err.strip() else None,
                }
            )
    except BaseException:  # interrupted: the workers we wait for stop too (their runs resume later; leases)
        for _, worker in workers:
            if not detach and worker.poll() is None:
                worker.terminate()
                worker.wait()
        raise
    return {"resumed": resumed, "webhooks_delivered": webhooks.deliver_pending(store, webhook_sender)}


def cancel(store: Store, run_id: str, detail: str) -> None:
    """Write the control event; the worker checks it between steps (and while waiting for approval)."""
    run = store.require(run_id)
    if run.terminal:
        raise RunNotResumable(f"run {run_id} has already ended ({run.status}); nothing to cancel")
    store.request_cancel(run_id, detail)
